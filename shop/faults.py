"""The shop's fault points: the one mechanism is ``config.faults`` (shared by
every app that writes more than one document; the points are listed there)."""

from config.faults import (  # noqa: F401
    EXIT_CODE,
    POINTS,
    InjectedFault,
    arm,
    armed,
    disarm,
    point,
)
