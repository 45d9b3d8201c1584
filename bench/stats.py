"""The seed's statistics table: mean, standard deviation, percentiles, extremes."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """Latency statistics of the completed flows, in milliseconds."""

    count: int
    mean: float
    std: float
    p50: float
    p75: float
    p95: float
    p99: float
    min: float
    max: float


def percentile(ordered: list[float], q: float) -> float:
    """The q-th percentile (0-100) of sorted values, linearly interpolated."""
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(values: list[float]) -> Summary | None:
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)
    mean = math.fsum(ordered) / n
    # Sample standard deviation, as the simulator's running stats report it.
    variance = math.fsum((v - mean) ** 2 for v in ordered) / (n - 1) if n > 1 else 0
    return Summary(
        count=n,
        mean=mean,
        std=math.sqrt(variance),
        p50=percentile(ordered, 50),
        p75=percentile(ordered, 75),
        p95=percentile(ordered, 95),
        p99=percentile(ordered, 99),
        min=ordered[0],
        max=ordered[-1],
    )
