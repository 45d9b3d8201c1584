"""bench/or_bench.py runs and prints a row per size, its two ways of
counting the carts past their hold agreeing (no speed is asserted: figures
belong to bench/RESULTS.md)."""

import re

from tests.processes import bench_output


def test_the_or_bench_prints_the_three_queries_per_size():
    out = bench_output("or_bench.py", "--sizes", "50", "200", "--samples", "3")
    rows = re.findall(
        r"^\s+([\d,]+)\s+([\d.]+) ms\s+([\d.]+) ms\s+([\d.]+) ms$", out, re.M
    )
    assert [row[0] for row in rows] == ["50", "200"]
    assert all(float(figure) > 0 for row in rows for figure in row[1:])
