"""Levels: the ways a scenario's users reach the database.

A level is one ``Level`` value in a module of this package, registered in
``_MODULES``. It supplies, per scenario name, a ``Workload``: four callables the
harness calls (bench/README.md, "Adding a level", says when and where):

* ``setup(db, run) -> str``: load the scenario's data into a fresh database
  (parent process, once per run); returns a one-line description.
* ``user_flow(ctx, rng) -> Outcome``: one user, from first request to confirmed
  order (worker threads, once per arrival); domain refusals are returned as an
  ``Outcome`` kind, anything raised is counted as an error.
* ``probe(ctx, rng) -> None``: every action the level's budget names, once, on
  data the load does not touch (parent, before the load), so that actions the
  flows never perform (changing a quantity) are still counted.
* ``check(db, run) -> Check``: the conservation invariants after the run.

plus ``connect(uri, db_name, pool)``, called once in every process (parent and
workers) before anything else; what it returns is ``ctx.db`` and the ``db``
given to ``setup`` and ``check``; and optionally ``server_pids(db)`` and
``close(db)`` for a level that runs a server of its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Outcome:
    """How one user's flow ended; ``kind == "ok"`` means a confirmed order."""

    kind: str = "ok"
    # What the user came away with, for the "who got what" report.
    got: str = ""

    @property
    def completed(self) -> bool:
        return self.kind == "ok"


@dataclass(frozen=True)
class Check:
    """The invariant check after a run; ``oversell`` must be 0."""

    ok: bool
    oversell: int
    lines: tuple[str, ...] = ()
    # Counts behind the lines (units or seats sold to users, on offer, ...).
    figures: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Workload:
    setup: Callable[[Any, Any], str]
    user_flow: Callable[[Any, Any], Outcome]
    probe: Callable[[Any, Any], None]
    check: Callable[[Any, Any], Check]


@dataclass(frozen=True)
class Level:
    name: str
    description: str
    connect: Callable[[str, str, int], Any]
    # Most DB commands one action may issue (bench/README.md, "Budgets").
    budgets: Mapping[str, int]
    workloads: Mapping[str, Workload] = field(default_factory=dict)
    # Processes serving the load on the level's behalf (the http level's web
    # workers), given the parent's db handle: their memory and CPU are
    # measured like the daemon's.
    server_pids: Callable[[Any], list[int]] | None = None
    # Called with the parent's db handle when a run is over, before its
    # database is dropped (the http level stops its server).
    close: Callable[[Any], None] | None = None


class LevelUnavailable(Exception):
    """The level cannot run on this branch; the message says why."""


# Level name -> module defining ``LEVEL``, or the reason it is not available.
_MODULES: dict[str, str] = {
    "raw": "bench.levels.raw",
    "services": "bench.levels.services",
    "http": "bench.levels.http",
}
# (none at the moment: every level is on this branch)
_NOT_YET: dict[str, str] = {}
NAMES = (*_MODULES, *_NOT_YET)


def get(name: str) -> Level:
    if name in _NOT_YET:
        raise LevelUnavailable(_NOT_YET[name])
    if name not in _MODULES:
        raise LevelUnavailable(f"unknown level {name!r}; choose from {NAMES}")
    return importlib.import_module(_MODULES[name]).LEVEL
