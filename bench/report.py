"""Printing a run: the seed's table per level, budgets, invariants, ratios."""

from __future__ import annotations

import os
import platform
from collections import Counter

from bench.harness import RunResult, RunSpec, Shape
from bench.scenarios import Scenario
from bench.search import SearchResult
from bench.stats import percentile

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
    # A space before each cell even when it overflows its column.
    return label.ljust(LABEL_WIDTH) + "".join(
        " " + c.rjust(COLUMN_WIDTH - 1) for c in cells
    )


def _mib(kib: int | None) -> str:
    return f"{kib / 1024:.1f} MiB" if kib is not None else "n/a"


def _cpu(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.0%} of a core"


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.1f} ms"


def _machine(result) -> str:
    shares = result.measures.machine
    if shares is None:
        return "n/a"
    busy, idle, stolen = shares
    return f"{busy:.0%} / {idle:.0%} / {stolen:.1%}"


def _counts(counter: Counter) -> str:
    if not counter:
        return "none"
    return ", ".join(f"{k}: {n:,}" for k, n in counter.most_common())


def _ops(result: RunResult) -> str:
    ops = result.recording.ops
    flows = sum(ops.values())
    if not flows:
        # The load was not counted (bench/cli.py --count-flows); the row
        # below has the server's operations, which are not commands.
        return "not counted"
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

    def row(label, of_result, of_seed=None) -> None:
        cells = [of_result(r) for r in results]
        if of_seed is not None:
            cells += [of_seed(s) for s in scenario.seed]
        lines.append(_row(label, cells))

    seed_ops = str(scenario.seed_ops_per_flow or "n/a")
    row("Users", lambda r: f"{r.run.users:,}", lambda s: f"{s.users:,}")
    row(
        "Completed flows/s",
        lambda r: f"{r.flows_per_s:.1f}",
        lambda s: f"~{s.flows_per_s:.0f}",
    )
    row("Failures", _failures, lambda s: "n/a")
    row("DB ops per flow", _ops, lambda s: seed_ops)
    row("DB ops/flow (server)", _server_ops)
    row("Peak RSS DB daemon", lambda r: _mib(r.db_peak_kib))
    row("Peak RSS load worker", lambda r: _mib(r.recording.peak_kib))
    row("CPU DB daemon", lambda r: _cpu(r.measures.db_cpu_share))
    row("CPU load workers", lambda r: _cpu(r.worker_cpu_share))
    if any(r.measures.web_peak_kib is not None for r in results):
        row("Peak RSS web worker", lambda r: _mib(r.measures.web_peak_kib))
        row("CPU web workers", lambda r: _cpu(r.measures.web_cpu_share))
    row("CPU per flow (all)", lambda r: _ms(r.cpu_per_flow_s))
    row(
        "Load average (1 min)",
        lambda r: "{:.1f} -> {:.1f}".format(*r.measures.load_average),
    )
    row("Machine busy / idle / stolen", _machine)
    row("Start lag p99", _start_lag)
    row("DB ping p50 / p99", _ping)
    return lines


def _failures(result: RunResult) -> str:
    return _counts(
        Counter({k: n for k, n in result.recording.kinds.items() if k != "ok"})
    )


def _server_ops(result: RunResult) -> str:
    if result.measures.server_ops is None:
        return "n/a"
    return f"{result.measures.server_ops / result.run.users:.1f}"


def _ping(result: RunResult) -> str:
    ping = result.measures.ping
    return "n/a" if ping is None else f"{ping.p50:.1f} / {ping.p99:.1f} ms"


def _per_second(times: list[float]) -> list[int]:
    """Confirmed orders in each second of the run: a collapse shows here."""
    counts = [0] * (int(max(times)) + 1 if times else 0)
    for t in times:
        counts[max(0, int(t))] += 1
    return counts


def _start_lag(result: RunResult) -> str:
    lags = result.recording.start_lags
    return f"{_p99(lags):.1f} ms" if lags else "n/a"


def _p99(values: list[float]) -> float:
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
    """Each level against raw: flows/s (the issue's measure, at the offered
    rate), and CPU per flow (the cost behind it, whatever the hour)."""
    raw = next((r for r in results if r.level == "raw"), None)
    if raw is None or raw.flows_per_s == 0:
        return []
    lines = []
    for r in results:
        if r.level == "raw":
            continue
        lines.append(
            f"flows/s ratio {r.level}/raw: {r.flows_per_s / raw.flows_per_s:.2f}"
        )
        if r.cpu_per_flow_s and raw.cpu_per_flow_s:
            lines.append(
                f"CPU per flow {r.level}/raw: "
                f"{r.cpu_per_flow_s / raw.cpu_per_flow_s:.2f}"
            )
    return lines


def search_lines(level: str, search: SearchResult) -> list[str]:
    best = f"{search.best:g} users/s" if search.best is not None else "none found"
    probes = ", ".join(_probe_text(p) for p in search.probes)
    return [
        f"Highest rate with p99 <= {search.target_ms:g} ms ({level}, "
        f"{search.duration_s:g} s runs"
        + (f", at least {search.min_users} users" if search.min_users else "")
        + f"): {best}",
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
            "count_flows": r.shape.count_flows,
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
            "db_cpu_share": r.measures.db_cpu_share,
            "server_ops": r.measures.server_ops,
            "load_average": r.measures.load_average,
            "machine_busy_idle_stolen": r.measures.machine,
            "ping_ms": None if r.measures.ping is None else r.measures.ping.__dict__,
            "completed_per_s": _per_second(r.recording.completions),
            "worker_cpu_share": r.worker_cpu_share,
            "worker_peak_kib": r.recording.peak_kib,
            "web_peak_kib": r.measures.web_peak_kib,
            "web_cpu_share": r.measures.web_cpu_share,
            "cpu_per_flow_s": r.cpu_per_flow_s,
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
    for line in search_ratio_lines(searches):
        print(line)
    return violations


def search_ratio_lines(searches: dict) -> list[str]:
    """Each level's best p99-bounded rate against raw's, when both found one."""
    raw = searches.get("raw")
    if raw is None or not raw.best:
        return []
    return [
        f"p99 <= {search.target_ms:g} ms rate ratio {level}/raw: "
        f"{search.best / raw.best:.2f}"
        for level, search in searches.items()
        if level != "raw" and search.best
    ]
