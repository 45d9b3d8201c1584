"""What one user flow costs, one flow at a time: CPU per flow and commands.

The load runs of ``bench/run.py`` say how many flows a level completes; this
says what each one costs when nothing else runs. It drives a scenario's flows
(the same ``user_flow`` the load workers run) one after another in this
process, with the adds of a cart flow one at a time too, and prints per flow:
the wall time, the daemon's CPU (user + system, from /proc) and this
process's CPU. With ``--census`` it also counts every command the flows send,
from every thread (the settler's and the activity log's batches included),
by collection: reads, and write statements (a document inserted, an
update, a delete). The embedded server commits each update and delete as a
transaction of its own, with a log sync as ``serve`` runs it, but the
documents of one insert command together (up to 1,000 a transaction), so a
batched insert's statements share one sync.

    .venv/bin/python bench/flow_cost.py --scenario cart --level services
    .venv/bin/python bench/flow_cost.py --scenario theater --level raw,services --census
    .venv/bin/python bench/flow_cost.py --scenario cart --batches 3 --flows 400

Each level gets a fresh embedded daemon (``--sync-on-commit``) and database;
the first ``--warm`` flows are not measured (the process's caches, the
daemon's first pages). One flow at a time the figures are steady enough to
weigh a change of a few percent: run the trees interleaved, batch by batch
(bench/RESULTS.md). The census's pymongo listener costs this process some
CPU: take the client figure from a run without it.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pymongo import monitoring  # noqa: E402

from bench import dbserver, levels, monitor  # noqa: E402
from bench.harness import FlowContext, RunSpec  # noqa: E402
from bench.scenarios import all_scenarios  # noqa: E402

SCENARIOS = ("cart", "theater")
LEVELS = ("raw", "services")
READS = {"find", "aggregate", "count", "distinct", "getMore"}
# Commands that are neither data reads nor writes of the flows.
IGNORED = {"endSessions", "listIndexes", "createIndexes", "ping", "hello", "ismaster"}
# Below this many clock ticks a batch's daemon CPU is flagged as too coarse.
COARSE_TICKS = 20


class Census(monitoring.CommandListener):
    """Commands and statements per (collection, command), every thread, while
    ``counting`` is set. A getMore is counted as its cursor's collection."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counting = False
        self.commands: Counter = Counter()
        self.statements: Counter = Counter()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if not self.counting or event.command_name in IGNORED:
            return
        command = event.command
        name = event.command_name
        collection = command.get("collection") if name == "getMore" else None
        collection = collection or command.get(name)
        # One statement per document inserted, per update, per delete (one
        # insert command's documents share a transaction on the server).
        parts = command.get("documents") or command.get("updates")
        parts = parts or command.get("deletes") or [None]
        key = (str(collection), name)
        with self._lock:
            self.commands[key] += 1
            self.statements[key] += len(parts)

    def succeeded(self, event) -> None:
        pass

    def failed(self, event) -> None:
        pass

    def clear(self) -> None:
        with self._lock:
            self.commands.clear()
            self.statements.clear()


def _settle_background(level: str) -> None:
    """Write what the services' batch writers hold (the payments to
    announce, the checkouts' leftovers, the activity events), so that their
    commands land inside the measured window."""
    if level != "services":
        return
    from activity.services import writer
    from shop.services import settle, tidy

    settle.flush()
    tidy.flush()
    writer.flush()


def _stop_background(level: str) -> None:
    """Stop the services' batch writers before their daemon goes."""
    if level != "services":
        return
    from activity.services import writer
    from shop.services import settle, tidy

    settle.shutdown()
    tidy.shutdown()
    writer.shutdown()


def _one(workload, db, run: RunSpec, user: int) -> str:
    tally = monitor.Tally()
    ctx = FlowContext(db, run, user, tally, None)
    with monitor.bound(tally):
        return workload.user_flow(ctx, run.rng(user)).kind


def measure(level_name: str, run: RunSpec, args, census: Census | None) -> None:
    """Set up a fresh database on a fresh daemon, warm up, print each batch's
    cost per flow, then the level's invariant check (exit 3 if violated)."""
    level = levels.get(level_name)
    workload = level.workloads[run.scenario.name]
    with dbserver.Target(args.uri, engine=args.engine) as target:
        db_name = dbserver.fresh_name(f"cost_{level_name}", run.scenario.name)
        # One flow at a time needs one connection; the services level keeps
        # Marquee's own pool whatever is asked (bench/levels/services.py).
        db = level.connect(target.uri, db_name, 1)
        try:
            began = time.monotonic()
            note = workload.setup(db, run)
            took = time.monotonic() - began
            print(f"== {run.scenario.name}, {level_name} level: {note} ({took:.1f} s)")
            if target.pid is None:
                print("  the daemon's CPU is not known for a server given by URI")
            users = itertools.count()
            for _ in range(args.warm):
                _one(workload, db, run, next(users))
            _settle_background(level_name)
            for batch in range(1, args.batches + 1):
                print(
                    f"  batch {batch}: "
                    + _batch(level_name, workload, db, run, target, args, census, users)
                )
                if census is not None:
                    _print_census(census, args.flows)
            check = workload.check(db, run)
            print(f"  invariants: {'ok' if check.ok else 'VIOLATED'}")
            for line in check.lines:
                print(f"    {line}")
            if not check.ok:
                raise SystemExit(3)
        finally:
            _stop_background(level_name)
            if level.close is not None:
                level.close(db)
            target.drop(db_name)


def _batch(level_name, workload, db, run, target, args, census, users) -> str:
    """``args.flows`` flows one after another (the census counting, if any),
    the batch writers flushed inside the window; what they cost per flow."""
    if census is not None:
        census.clear()
        census.counting = True
    kinds: Counter = Counter()
    daemon0 = dbserver.cpu_seconds(target.pid)
    client0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(args.flows):
        kinds[_one(workload, db, run, next(users))] += 1
    _settle_background(level_name)
    wall = time.perf_counter() - wall0
    client = time.process_time() - client0
    daemon1 = dbserver.cpu_seconds(target.pid)
    if census is not None:
        census.counting = False
    per = 1000 / args.flows
    if daemon0 is None or daemon1 is None:
        daemon = "n/a"
    else:
        daemon = f"{(daemon1 - daemon0) * per:.2f} ms"
        if daemon1 - daemon0 < COARSE_TICKS * dbserver.CPU_TICK:
            # /proc counts CPU in sampled clock ticks: on a short batch the
            # figure may be off by a tick or two, even read as zero.
            daemon += f" (under {COARSE_TICKS} clock ticks: run more --flows)"
    outcomes = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
    return (
        f"{args.flows} flows ({outcomes}); per flow: wall {wall * per:.2f} ms, "
        f"daemon {daemon}, client {client * per:.2f} ms"
    )


def _print_census(census: Census, flows: int) -> None:
    rows = sorted(census.commands, key=lambda k: (-census.commands[k], k))
    print(f"    {'collection':<24}{'command':<15}{'commands':>9}{'statements':>11}")
    for key in rows:
        collection, name = key
        print(
            f"    {collection:<24}{name:<15}{census.commands[key] / flows:>9.2f}"
            f"{census.statements[key] / flows:>11.2f}"
        )
    reads = sum(n for (_, name), n in census.commands.items() if name in READS)
    writes = sum(n for (_, name), n in census.statements.items() if name not in READS)
    total = sum(census.commands.values())
    print(
        f"    per flow: {total / flows:.2f} commands, {reads / flows:.2f} reads, "
        f"{writes / flows:.2f} write statements"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=SCENARIOS, default="cart")
    parser.add_argument(
        "--level", default="services", help="comma-separated: raw, services"
    )
    parser.add_argument("--flows", type=int, default=400, help="per batch (400)")
    parser.add_argument("--batches", type=int, default=1)
    parser.add_argument("--warm", type=int, default=20, help="flows not measured")
    parser.add_argument(
        "--census", action="store_true", help="count every command by collection"
    )
    parser.add_argument(
        "--quick", action="store_true", help="the scenario's small data (tests)"
    )
    parser.add_argument("--engine", choices=("rust", "python"), default=None)
    parser.add_argument("--uri", default=os.environ.get("MONGODB_URI"))
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.level.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in LEVELS]
    if unknown or not chosen or args.flows < 1 or args.batches < 1 or args.warm < 0:
        parser.error(
            f"levels are {', '.join(LEVELS)}; --flows and --batches at least 1, "
            "--warm at least 0"
        )

    census = None
    if args.census:
        # Registered before any client exists, so every client reports to it.
        census = Census()
        monitoring.register(census)
    scenario = all_scenarios()[args.scenario]
    run = RunSpec(
        scenario=scenario,
        params=scenario.quick_params if args.quick else scenario.params,
        rate=scenario.rate,
        duration=scenario.duration,
    )
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"Cost of one flow at a time, {stamp}")
    print(f"machine: {os.cpu_count()} CPUs, load average {load}")
    for level_name in chosen:
        measure(level_name, run, args, census)


if __name__ == "__main__":
    main()
