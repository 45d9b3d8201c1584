"""Named fault points between the writes of multi-document services (every app).

A service calls ``point("checkout.after_order")`` between two writes. A test
arms a point to stop the real code right there: ``raise`` throws
InjectedFault in-process; ``exit`` ends the process at once (``os._exit``, no
cleanup, no ``finally``), a real crash for a child process. Unarmed, a point
costs one truthiness test of an empty dict.
"""

import os
from contextlib import contextmanager

# Every point a service declares; tests crash at each one in turn.
POINTS = (
    "add.after_reserve",
    "set_quantity.after_stock",
    "set_quantity.after_cart",
    "remove.after_cart",
    "clear.after_cart",
    "merge.after_source",
    "merge.after_transfer",
    "expire.after_flip",
    "expire.after_release",
    "checkout.after_pending",
    "checkout.after_order",
    "checkout.after_charge",
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
    "new_cart.after_insert",
    "new_cart.after_claim",
    "release.after_cart",
    # booking's seat protocol (booking/services/seats.py, DESIGN §3 "Seats")
    "seats.after_intent",
    "seats.after_release",
    "seats.after_transfer_intent",
    "seats.after_transfer",
    "seats.after_block",
    "seats.after_unblock",
)
# The exit status of a process stopped at a point, so a test can tell it
# from any other death.
EXIT_CODE = 77

_armed: dict[str, str] = {}


class InjectedFault(RuntimeError):
    """Raised at an armed point (action ``raise``)."""


def point(name: str) -> None:
    if _armed:
        _trip(name)


def _trip(name: str) -> None:
    action = _armed.get(name)
    if action == "exit":
        os._exit(EXIT_CODE)
    if action == "raise":
        raise InjectedFault(name)


def arm(name: str, action: str = "raise") -> None:
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}")
    if action not in ("raise", "exit"):
        raise ValueError(f"unknown fault action {action!r}")
    _armed[name] = action


def disarm(name: str | None = None) -> None:
    if name is None:
        _armed.clear()
    else:
        _armed.pop(name, None)


@contextmanager
def armed(name: str, action: str = "raise"):
    arm(name, action)
    try:
        yield
    finally:
        disarm(name)
