"""Named fault points between the writes of multi-document services.

A service calls ``point("checkout.after_order")`` between two writes. A test
arms a point to stop the real code right there: ``raise`` throws
InjectedFault in-process; ``exit`` ends the process at once (``os._exit``, no
cleanup, no ``finally``), a real crash for a child process. Unarmed, a point
costs one truthiness test of an empty dict.

Each app declares its points (``register``) where its services live
(``shop.faults``, ``catalog.faults``); only a declared point can be armed.
"""

import os
from collections.abc import Iterable
from contextlib import contextmanager

# The exit status of a process stopped at a point, so a test can tell it
# from any other death.
EXIT_CODE = 77

_declared: set[str] = set()
_armed: dict[str, str] = {}


class InjectedFault(RuntimeError):
    """Raised at an armed point (action ``raise``)."""


def register(points: Iterable[str]) -> tuple[str, ...]:
    """Declare an app's points; returns them as given."""
    points = tuple(points)
    _declared.update(points)
    return points


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
    if name not in _declared:
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
