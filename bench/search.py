"""The highest arrival rate a level sustains with p99 <= a target.

The simulator's own optimizer aims at p99 <= 100 ms. Here: short runs, each on
a fresh database, doubling the rate until one misses the target, then
bisecting between the last rate that met it and the first that did not,
until they are within ``precision`` of each other or the time budget is
spent. A run meets the target when its p99 (arrival to confirmed order) is
within it and no flow ended in an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.harness import RunResult


@dataclass(frozen=True)
class Probe:
    rate: float
    p99_ms: float | None
    flows_per_s: float
    met: bool


@dataclass
class SearchResult:
    target_ms: float
    duration_s: float
    min_users: int = 0
    best: float | None = None
    probes: list[Probe] = field(default_factory=list)
    spent_s: float = 0.0
    stopped: str = ""


def meets(result: RunResult, target_ms: float) -> bool:
    return (
        result.latency is not None
        and result.latency.p99 <= target_ms
        and result.errors == 0
    )


def _tidy(rate: float) -> float:
    return float(round(rate)) if rate >= 10 else round(rate, 1)


def find_max_rate(
    run_at: Callable[[float], RunResult],
    *,
    start: float,
    duration_s: float,
    min_users: int = 0,
    target_ms: float = 100.0,
    budget_s: float = 300.0,
    precision: float = 0.1,
    max_rate: float = 20_000,
    min_rate: float = 0.5,
    log: Callable[[str], None] = lambda line: None,
) -> SearchResult:
    search = SearchResult(
        target_ms=target_ms, duration_s=duration_s, min_users=min_users
    )
    began = time.monotonic()
    good: float | None = None
    bad: float | None = None
    rate = _tidy(start)
    last_cost = 0.0
    while True:
        spent = time.monotonic() - began
        if search.probes and spent + last_cost > budget_s:
            search.stopped = f"time budget of {budget_s:.0f} s"
            break
        probe_began = time.monotonic()
        result = run_at(rate)
        last_cost = time.monotonic() - probe_began
        met = meets(result, target_ms)
        p99 = result.latency.p99 if result.latency else None
        search.probes.append(Probe(rate, p99, result.flows_per_s, met))
        p99_text = f"{p99:.1f} ms" if p99 is not None else "n/a"
        log(
            f"  search: {rate:g} users/s -> p99 {p99_text}, "
            f"{result.flows_per_s:.1f} flows/s: {'met' if met else 'missed'}"
        )
        if met:
            good = rate
        else:
            bad = rate
        if bad is None:
            if rate >= max_rate:
                search.stopped = f"reached the cap of {max_rate:g} users/s"
                break
            rate = _tidy(min(rate * 2, max_rate))
        elif good is None:
            if rate / 2 < min_rate:
                search.stopped = f"missed even at {rate:g} users/s"
                break
            rate = _tidy(rate / 2)
        else:
            if (bad - good) / bad <= precision:
                search.stopped = f"bracketed within {precision:.0%}"
                break
            middle = _tidy((good + bad) / 2)
            if middle in (good, bad):
                search.stopped = "bracket cannot be split further"
                break
            rate = middle
    search.best = good
    search.spent_s = time.monotonic() - began
    return search
