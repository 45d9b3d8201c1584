"""Printing a run: the seed's table per level, budgets, invariants, ratios."""

from __future__ import annotations

import os
import platform
from collections import Counter

from bench.harness import RunResult, RunSpec, Shape
from bench.scenarios import Scenario
from bench.search import SearchResult

# The rows of the seed's published table, then the additions.
STAT_ROWS = (
    ("Runtime", "runtime_s", "s"),
    ("Mean", "mean", "ms"),
    ("Standard Deviation", "std", "ms"),
    ("75 percentile", "p75", "ms"),
    ("95 percentile", "p95", "ms"),
    ("99 percentile", "p99", "ms"),
    ("Minimum", "min", "ms"),
    ("Maximum", "max", "ms"),
)
LABEL_WIDTH = 24
COLUMN_WIDTH = 18


def machine() -> str:
    cpus = os.cpu_count()
    memory = ""
    try:
        with open("/proc/meminfo") as info:
            kib = int(info.readline().split()[1])
        memory = f", {kib / 1024 / 1024:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpus} CPUs{memory}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def _row(label: str, cells: list[str]) -> str:
    return label.ljust(LABEL_WIDTH) + "".join(c.rjust(COLUMN_WIDTH) for c in cells)


def _mib(kib: int | None) -> str:
    return f"{kib / 1024:.1f} MiB" if kib is not None else "n/a"


def _cpu(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.0%} of a core"


def _counts(counter: Counter) -> str:
    if not counter:
        return "none"
    return ", ".join(f"{k}: {n:,}" for k, n in counter.most_common())


def _ops(result: RunResult) -> str:
    ops = result.recording.ops
    flows = sum(ops.values())
    if not flows:
        return "n/a"
    low, high = min(ops), max(ops)
    if low == high:
        return str(low)
    mean = sum(k * n for k, n in ops.items()) / flows
    return f"{mean:.1f} ({low}-{high})"


def stats_table(scenario: Scenario, results: list[RunResult]) -> list[str]:
    """The seed's table, one column per level, then the seed's own columns."""
    headers = [r.level for r in results] + [f"seed {s.engine}" for s in scenario.seed]
    lines = [_row("Statistics", headers)]
    for label, attr, unit in STAT_ROWS:
        cells = []
        for r in results:
            if attr == "runtime_s":
                cells.append(f"{r.runtime_s:.3f} {unit}")
            elif r.latency is None:
                cells.append("n/a")
            else:
                cells.append(f"{getattr(r.latency, attr):.3f} {unit}")
        for s in scenario.seed:
            cells.append(f"{getattr(s, attr):.3f} {unit}")
        lines.append(_row(label, cells))
    seed_cells = lambda f: [f(s) for s in scenario.seed]  # noqa: E731
    lines.append(
        _row(
            "Users",
            [f"{r.run.users:,}" for r in results]
            + seed_cells(lambda s: f"{s.users:,}"),
        )
    )
    lines.append(
        _row(
            "Completed flows/s",
            [f"{r.flows_per_s:.1f}" for r in results]
            + seed_cells(lambda s: f"~{s.flows_per_s:.0f}"),
        )
    )
    lines.append(
        _row(
            "Failures",
            [
                _counts(
                    Counter({k: n for k, n in r.recording.kinds.items() if k != "ok"})
                )
                for r in results
            ]
            + seed_cells(lambda s: "n/a"),
        )
    )
    seed_ops = str(scenario.seed_ops_per_flow or "n/a")
    lines.append(
        _row(
            "DB ops per flow",
            [_ops(r) for r in results] + seed_cells(lambda s: seed_ops),
        )
    )
    lines.append(
        _row(
            "DB ops/flow (server)",
            [
                "n/a" if r.server_ops is None else f"{r.server_ops / r.run.users:.1f}"
                for r in results
            ],
        )
    )
    lines.append(_row("Peak RSS DB daemon", [_mib(r.db_peak_kib) for r in results]))
    lines.append(
        _row("Peak RSS load worker", [_mib(r.recording.peak_kib) for r in results])
    )
    lines.append(_row("CPU DB daemon", [_cpu(r.db_cpu_share) for r in results]))
    lines.append(_row("CPU load workers", [_cpu(r.worker_cpu_share) for r in results]))
    lines.append(
        _row(
            "Load average (1 min)",
            [f"{r.load_average[0]:.1f} -> {r.load_average[1]:.1f}" for r in results],
        )
    )
    lines.append(
        _row(
            "Start lag p99",
            [
                f"{_p99(r.recording.start_lags):.1f} ms"
                if r.recording.start_lags
                else "n/a"
                for r in results
            ],
        )
    )
    return lines


def _p99(values: list[float]) -> float:
    from bench.stats import percentile

    return percentile(sorted(values), 99)


def budget_table(results: list[RunResult], budgets: dict[str, dict[str, int]]):
    """Commands per action against each level's budget; (lines, violations)."""
    names: list[str] = []
    for r in results:
        for name in r.actions():
            if name not in names:
                names.append(name)
    lines = [_row("DB round trips/action", [f"{r.level} (budget)" for r in results])]
    violations = []
    for name in names:
        cells = []
        for r in results:
            counts = r.actions().get(name)
            budget = budgets[r.level].get(name)
            if not counts:
                cells.append("-")
                continue
            low, high = min(counts), max(counts)
            seen = str(high) if low == high else f"{low}-{high}"
            over = budget is None or high > budget
            if over:
                violations.append(
                    f"{r.level}: {name} issued {high} commands, budget "
                    f"{budget if budget is not None else 'not set'}"
                )
            cells.append(
                f"{seen} ({budget if budget is not None else '?'})"
                + (" OVER" if over else "")
            )
        lines.append(_row(name, cells))
    return lines, violations


def outcome_lines(result: RunResult) -> list[str]:
    lines = [f"Who got what ({result.level}): {_counts(result.recording.got)}"]
    check = result.check
    if check is not None:
        verdict = "ok" if check.ok else "BROKEN"
        lines.append(
            f"Invariants ({result.level}): {verdict}, oversell {check.oversell}"
        )
        lines += [f"  {line}" for line in check.lines]
    for error in result.recording.errors:
        lines.append(f"  error sample: {error}")
    return lines


def ratio_lines(results: list[RunResult]) -> list[str]:
    raw = next((r for r in results if r.level == "raw"), None)
    if raw is None or raw.flows_per_s == 0:
        return []
    return [
        f"flows/s ratio {r.level}/raw: {r.flows_per_s / raw.flows_per_s:.2f}"
        for r in results
        if r.level != "raw"
    ]


def search_lines(level: str, search: SearchResult) -> list[str]:
    best = f"{search.best:g} users/s" if search.best is not None else "none found"
    probes = ", ".join(_probe_text(p) for p in search.probes)
    return [
        f"Highest rate with p99 <= {search.target_ms:g} ms ({level}, "
        f"{search.duration_s:g} s runs): {best}",
        f"  probes: {probes}",
        f"  stopped: {search.stopped}; {search.spent_s:.0f} s spent",
    ]


def _probe_text(probe) -> str:
    if probe.p99_ms is None:
        return f"{probe.rate:g} n/a"
    verdict = "ok" if probe.met else "over"
    return f"{probe.rate:g} {verdict} (p99 {probe.p99_ms:.1f} ms)"


def as_json(scenario: Scenario, results, searches, target: str) -> dict:
    def one(r: RunResult) -> dict:
        lat = r.latency
        return {
            "level": r.level,
            "rate": r.run.rate,
            "duration_s": r.run.duration,
            "users": r.run.users,
            "processes": r.shape.processes,
            "threads": r.shape.threads,
            "pool": r.shape.pool,
            "runtime_s": r.runtime_s,
            "latency_ms": None if lat is None else lat.__dict__,
            "completed": r.completed,
            "flows_per_s": r.flows_per_s,
            "kinds": dict(r.recording.kinds),
            "got": dict(r.recording.got),
            "ops_per_flow": {str(k): n for k, n in r.recording.ops.items()},
            "actions": {
                name: {str(k): n for k, n in counts.items()}
                for name, counts in r.actions().items()
            },
            "db_peak_kib": r.db_peak_kib,
            "db_cpu_share": r.db_cpu_share,
            "server_ops": r.server_ops,
            "load_average": r.load_average,
            "worker_cpu_share": r.worker_cpu_share,
            "worker_peak_kib": r.recording.peak_kib,
            "setup": r.setup_note,
            "setup_s": r.setup_s,
            "check": None
            if r.check is None
            else {
                "ok": r.check.ok,
                "oversell": r.check.oversell,
                "lines": r.check.lines,
                "figures": dict(r.check.figures),
            },
            "errors": r.recording.errors,
        }

    return {
        "scenario": scenario.name,
        "machine": machine(),
        "database": target,
        "results": [one(r) for r in results],
        "search": {
            level: {
                "best": s.best,
                "target_ms": s.target_ms,
                "duration_s": s.duration_s,
                "probes": [p.__dict__ for p in s.probes],
                "stopped": s.stopped,
            }
            for level, s in searches.items()
        },
    }


def print_scenario(
    run: RunSpec, shape: Shape, levels, results: list[RunResult], searches: dict
) -> list[str]:
    """Print one scenario's report; the budget violations found."""
    scenario = run.scenario
    print()
    print(f"== {scenario.name}: {scenario.title}")
    violations: list[str] = []
    if results:
        print(
            f"open-loop: {run.rate:g} users/s for {run.duration:g} s "
            f"({run.users:,} users), {shape.processes} processes x "
            f"{shape.threads} threads, pool {shape.pool}; latency from each "
            "user's scheduled arrival to its confirmed order"
        )
        for r in results:
            print(f"data ({r.level}): {r.setup_note} (setup {r.setup_s:.1f} s)")
        if scenario.seed:
            print(
                "seed: MongoDB 3.0.1 on a MacBook Pro 2015, simulator with 4 "
                "processes x pool 50, 1,000 users/s per process for 25 s; its "
                "flows/s is users / runtime"
            )
        print()
        for line in stats_table(scenario, results):
            print(line)
        print()
        lines, violations = budget_table(
            results, {level.name: dict(level.budgets) for level in levels}
        )
        for line in lines:
            print(line)
        print()
        for r in results:
            for line in outcome_lines(r):
                print(line)
        for line in ratio_lines(results):
            print(line)
    for level_name, search in searches.items():
        for line in search_lines(level_name, search):
            print(line)
    return violations
