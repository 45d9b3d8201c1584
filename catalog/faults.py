"""The stock's fault points between the writes of a hold (catalog/services/stock.py).

Take (reserve, grow): counter, hold, forget. Give back (release, shrink,
commit): hold, counter, finish, forget. Transfer: source, target, finish.
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
