"""Counting MongoDB commands per user flow and per user action.

A ``CommandCounter`` registered with ``pymongo.monitoring.register`` before any
client exists sees every command the process issues. Synchronous pymongo
publishes a command's "started" event on the thread that runs it, so the
counter attributes it to whatever flow and action that thread has bound
(thread-local). A flow that fans work out to other threads binds the same
``Tally`` in each of them (``FlowContext.parallel`` does this).

Counts are exact, not sampled: the same flow on the same data always issues
the same commands, which is what makes a round-trip budget enforceable.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager

from pymongo import monitoring

_local = threading.local()


class Tally:
    """The commands one user flow issued: a total and one count per action."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0
        # (action name, commands it issued), one entry per action performed.
        self.actions: list[tuple[str, int]] = []

    def add(self, record: _ActionRecord | None, commands: int = 1) -> None:
        with self._lock:
            self.total += commands
            if record is not None:
                record.count += commands

    def close_action(self, record: _ActionRecord) -> None:
        with self._lock:
            self.actions.append((record.name, record.count))


class _ActionRecord:
    __slots__ = ("name", "count")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0


class CommandCounter(monitoring.CommandListener):
    """Adds each command started on a bound thread to that thread's tally."""

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        tally = getattr(_local, "tally", None)
        if tally is not None:
            tally.add(getattr(_local, "record", None))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


_registered = False


def install() -> None:
    """Register the counter for every MongoClient this process creates later."""
    global _registered
    if not _registered:
        monitoring.register(CommandCounter())
        _registered = True


@contextmanager
def bound(tally: Tally):
    """Attribute the commands this thread issues to ``tally`` while inside."""
    previous = getattr(_local, "tally", None), getattr(_local, "record", None)
    _local.tally, _local.record = tally, None
    try:
        yield tally
    finally:
        _local.tally, _local.record = previous


def count(commands: int) -> None:
    """Add commands issued elsewhere on this thread's behalf (a web worker's,
    as its response reported them) to the bound flow and action."""
    tally = getattr(_local, "tally", None)
    if tally is not None:
        tally.add(getattr(_local, "record", None), commands)


@contextmanager
def uncounted():
    """Commands this thread issues inside count for no flow (a level's own
    look-ups, not a user's)."""
    previous = getattr(_local, "tally", None), getattr(_local, "record", None)
    _local.tally, _local.record = None, None
    try:
        yield
    finally:
        _local.tally, _local.record = previous


@contextmanager
def action(name: str):
    """Count the commands this thread issues inside as one ``name`` action."""
    tally = getattr(_local, "tally", None)
    if tally is None:
        yield
        return
    previous = getattr(_local, "record", None)
    record = _local.record = _ActionRecord(name)
    try:
        yield
    finally:
        _local.record = previous
        tally.close_action(record)


def merge_actions(into: dict[str, Counter], tally: Tally) -> None:
    """Fold a tally's actions into ``{action: Counter(commands -> times)}``."""
    for name, count in tally.actions:
        into.setdefault(name, Counter())[count] += 1
