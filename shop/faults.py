"""The shop's fault points between the writes of its multi-document services
(the mechanism: config/faults.py; the stock's own points: catalog/faults.py).
"""

from config.faults import (  # noqa: F401
    EXIT_CODE,
    InjectedFault,
    arm,
    armed,
    disarm,
    point,
    register,
)

# Every point a service declares; tests crash at each one in turn.
POINTS = register(
    (
        "add.after_reserve",
        "set_quantity.after_stock",
        "clear.after_cart",
        "expire.after_flip",
        "expire.after_release",
        "checkout.after_pending",
        "checkout.before_charge",
        "checkout.after_charge",
        "checkout.after_paid_write",
        "checkout.after_paid",
        "checkout.after_commit",
        "tickets.after_hold",
        "tickets.after_best",
        "tickets.after_unlist",
        "merge.after_ticket_source",
        "merge.after_ticket_transfer",
        "cancel.after_flip",
        "cancel.after_refund",
        "cancel.after_return",
        "new_cart.after_claim",
        "release.after_cart",
    )
)
