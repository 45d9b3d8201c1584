"""The stock's fault points between the writes of a move
(shop/kinds/line_stock.py), named as the steps were when the hold was a
document of its own ("hold" is the cart's side).

Take (add, grow): counter, cart. Give back (remove, shrink, clear, expire,
complete): cart, counter, finish. Transfer: source, target, finish.
"""

from config.faults import point, register  # noqa: F401

POINTS = register(
    (
        "stock.take.after_counter",
        "stock.take.after_hold",
        "stock.give.after_hold",
        "stock.give.after_counter",
        "stock.give.after_finish",
        "stock.transfer.after_source",
        "stock.transfer.after_target",
        "stock.transfer.after_finish",
    )
)
