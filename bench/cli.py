"""The command line of bench/run.py."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from bench import flash_sale, levels, report
from bench.dbserver import Target
from bench.harness import RunSpec, Shape, run_level
from bench.levels import http as http_level
from bench.scenarios import all_scenarios
from bench.search import find_max_rate

EXIT_BROKEN = 1  # an invariant failed or a flow raised
EXIT_USAGE = 2  # bad arguments, or a level not available on this branch
EXIT_OVER_BUDGET = 3  # an action issued more DB commands than its budget


def parser() -> argparse.ArgumentParser:
    scenarios = list(all_scenarios())
    p = argparse.ArgumentParser(
        prog="bench/run.py",
        description=(
            "Replay the seed articles' simulator scenarios open-loop against "
            "Marquee at one or more levels and print the seed's statistics table."
        ),
    )
    p.add_argument(
        "--scenario",
        default="cart",
        choices=[*scenarios, *flash_sale.NAMES, "all"],
        help="workload (default cart); 'all' runs the four in turn; "
        "flash-sale[-checkout]: bench/flash_sale.py (http level, closed loop)",
    )
    sale = p.add_argument_group("flash sale")
    sale.add_argument("--shoppers", type=int, help="shoppers (2000; quick 40)")
    sale.add_argument("--concurrency", type=int, default=16, help="at a time (16)")
    sale.add_argument("--units", type=int, help="units of the SKU (1000; quick 20)")
    sale.add_argument(
        "--repeat", type=int, default=1, help="sales in a row on one database (1)"
    )
    p.add_argument(
        "--level",
        default="raw",
        help=f"comma-separated levels of {', '.join(levels.NAMES)}, or 'all' "
        "(default raw)",
    )
    p.add_argument("--rate", type=float, help="arrivals per second (users/s)")
    p.add_argument("--duration", type=float, help="seconds of arrivals")
    p.add_argument("--processes", type=int, default=2, help="worker processes (2)")
    p.add_argument("--threads", type=int, default=50, help="threads per worker (50)")
    p.add_argument("--pool", type=int, default=50, help="connections per worker (50)")
    p.add_argument(
        "--web-workers",
        type=int,
        default=2,
        help="http level: gunicorn worker processes of `serve` (2)",
    )
    p.add_argument(
        "--count-flows",
        action="store_true",
        help="count every flow's commands in the load workers (a pymongo "
        "listener, which costs them CPU); without it only the probe is counted "
        "and the server's opcounters give operations per flow (on with --quick)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (1)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="small data, a couple of seconds of load: the smoke test's mode",
    )
    search = p.add_argument_group("p99 rate search")
    search.add_argument(
        "--search",
        action="store_true",
        help="after the run, find the highest rate with p99 <= --target-p99-ms",
    )
    search.add_argument(
        "--search-only", action="store_true", help="the search without the run"
    )
    search.add_argument("--target-p99-ms", type=float, default=100.0)
    search.add_argument(
        "--search-duration", type=float, help="seconds per search run (5; quick 1)"
    )
    search.add_argument(
        "--search-min-users",
        type=int,
        help="lengthen a search run at a low rate to at least this many users, "
        "so its p99 is not one flow (50; quick 0)",
    )
    search.add_argument(
        "--search-budget",
        type=float,
        help="seconds for the whole search (300; quick 8)",
    )
    search.add_argument(
        "--search-start", type=float, default=10.0, help="first rate tried (10)"
    )
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    p.add_argument(
        "--uri",
        default=os.environ.get("MONGODB_URI"),
        help="MongoDB to use (default MONGODB_URI; unset: a fresh embedded server)",
    )
    p.add_argument(
        "--db-pid", type=int, help="PID of the --uri server's daemon, for its memory"
    )
    p.add_argument(
        "--engine",
        choices=("rust", "python"),
        default=None,
        help="the embedded server (default: MARQUEE_DB_ENGINE, else rust)",
    )
    p.add_argument(
        "--no-sync-on-commit",
        action="store_true",
        help="embedded server without --sync-on-commit (diagnostic: the fsync's share)",
    )
    p.add_argument(
        "--oplog",
        action="store_true",
        help="embedded server writing an oplog, as before it ran without "
        "(diagnostic: the oplog's share)",
    )
    p.add_argument("--keep-db", action="store_true", help="keep each run's database")
    return p


def _levels(spec: str) -> list[levels.Level]:
    names = (
        list(levels.NAMES) if spec == "all" else [n.strip() for n in spec.split(",")]
    )
    return [levels.get(name) for name in names if name]


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Plan:
    """Everything the command line decided, apart from the scenario."""

    levels: tuple[levels.Level, ...]
    shape: Shape
    run: bool
    search: bool
    search_start: float
    search_duration: float
    search_min_users: int
    search_budget: float
    target_ms: float
    keep_db: bool


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        chosen = _levels(args.level)
    except levels.LevelUnavailable as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if min(args.processes, args.threads, args.pool, args.web_workers) < 1:
        print(
            "bench: --processes, --threads, --pool and --web-workers must be >= 1",
            file=sys.stderr,
        )
        return EXIT_USAGE
    # Read by the http level when it starts `serve` (bench/levels/http.py).
    os.environ[http_level.WORKERS_ENV] = str(args.web_workers)
    plan = Plan(
        levels=tuple(chosen),
        shape=Shape(
            processes=args.processes,
            threads=args.threads,
            pool=args.pool,
            count_flows=args.count_flows or args.quick,
        ),
        run=not args.search_only,
        search=args.search or args.search_only,
        search_start=args.search_start,
        search_duration=args.search_duration or (1.0 if args.quick else 5.0),
        search_min_users=args.search_min_users
        if args.search_min_users is not None
        else (0 if args.quick else 50),
        search_budget=args.search_budget or (8.0 if args.quick else 300.0),
        target_ms=args.target_p99_ms,
        keep_db=args.keep_db,
    )
    if args.scenario in flash_sale.NAMES:
        return _flash_sale(args)
    names = list(all_scenarios()) if args.scenario == "all" else [args.scenario]
    status = 0
    date = datetime.now(UTC).isoformat(timespec="seconds")
    document = {"date": date, "command": _command(argv), "runs": []}
    with Target(
        args.uri,
        db_pid=args.db_pid,
        sync_on_commit=not args.no_sync_on_commit,
        oplog=args.oplog,
        engine=args.engine,
    ) as target:
        print(f"Marquee load benchmark, {date}")
        print(f"machine: {report.machine()}")
        print(f"database: {target.description}")
        print(f"command: {document['command']}")
        for name in names:
            scenario = all_scenarios()[name]
            run = RunSpec(
                scenario=scenario,
                params=scenario.quick_params if args.quick else scenario.params,
                rate=args.rate
                or (scenario.quick_rate if args.quick else scenario.rate),
                duration=args.duration
                or (scenario.quick_duration if args.quick else scenario.duration),
                seed=args.seed,
            )
            status = max(status, _scenario(plan, run, target, document))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(document, out, indent=2, default=str)
    return status


def _flash_sale(args) -> int:
    """The flash sale (bench/flash_sale.py): its own closed-loop runner."""
    sale = flash_sale.Sale(
        shoppers=args.shoppers or (40 if args.quick else 2000),
        concurrency=args.concurrency,
        units=args.units or (20 if args.quick else 1000),
        checkout=args.scenario == "flash-sale-checkout",
    )
    with Target(
        args.uri,
        db_pid=args.db_pid,
        sync_on_commit=not args.no_sync_on_commit,
        oplog=args.oplog,
        engine=args.engine,
    ) as target:
        print(f"machine: {report.machine()}")
        print(f"database: {target.description}")
        try:
            lines = flash_sale.run(
                target, sale, repeat=args.repeat, web_workers=args.web_workers
            )
        except AssertionError as broken:
            print(f"BROKEN: {broken}")
            return EXIT_BROKEN
    print("\n".join(lines))
    return 0


def _command(argv: list[str] | None) -> str:
    return " ".join(["python bench/run.py", *(sys.argv[1:] if argv is None else argv)])


def _scenario(plan: Plan, run: RunSpec, target: Target, document: dict) -> int:
    """Run one scenario at every level, print its report; the exit status."""
    _log(f"== {run.scenario.name}: {run.scenario.title}")
    results, searches, broken = [], {}, []
    chosen = [level for level in plan.levels if run.scenario.name in level.workloads]
    for level in plan.levels:
        if level not in chosen:
            print(
                f"bench: level {level.name!r} has no {run.scenario.name!r} "
                "workload on this branch; skipped",
                file=sys.stderr,
            )
    if not chosen:
        return EXIT_USAGE
    plan = replace(plan, levels=tuple(chosen))
    for level in plan.levels:
        if plan.run:
            target.renew()
            results.append(
                run_level(
                    level, run, plan.shape, target, keep_db=plan.keep_db, log=_log
                )
            )
        if plan.search:
            searches[level.name], failed = _search(plan, level, run, target)
            broken += failed
    violations = report.print_scenario(run, plan.shape, plan.levels, results, searches)
    for r in results:
        if r.check is not None and not r.check.ok:
            broken.append(f"{r.level}: invariants broken")
        if r.errors:
            broken.append(f"{r.level}: {r.errors} flows raised")
    for line in violations:
        print(f"OVER BUDGET: {line}")
    for line in broken:
        print(f"BROKEN: {line}")
    sys.stdout.flush()
    document["runs"].append(
        report.as_json(run.scenario, results, searches, target.description)
    )
    if broken:
        return EXIT_BROKEN
    if violations:
        return EXIT_OVER_BUDGET
    return 0


def _search(plan: Plan, level: levels.Level, run: RunSpec, target: Target):
    """The p99 rate search for one level; (result, invariant failures)."""
    probes = []

    def run_at(rate: float):
        target.renew()
        result = run_level(
            level,
            replace(
                run,
                rate=rate,
                # A step at a low rate lasts long enough for min_users users.
                duration=max(plan.search_duration, plan.search_min_users / rate),
            ),
            plan.shape,
            target,
        )
        probes.append(result)
        return result

    found = find_max_rate(
        run_at,
        start=plan.search_start,
        duration_s=plan.search_duration,
        min_users=plan.search_min_users,
        target_ms=plan.target_ms,
        budget_s=plan.search_budget,
        log=_log,
    )
    failed = [
        f"{level.name} search at {p.run.rate:g} users/s: invariants broken"
        for p in probes
        if p.check is not None and not p.check.ok
    ]
    return found, failed
