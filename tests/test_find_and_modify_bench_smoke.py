"""bench/find_and_modify_bench.py runs and prints a row per size (no speed
is asserted: figures belong to bench/RESULTS.md)."""

import re

from tests.processes import bench_output


def test_the_find_and_modify_bench_prints_both_writes_per_size():
    out = bench_output(
        "find_and_modify_bench.py", "--sizes", "50", "200", "--samples", "5"
    )
    rows = re.findall(r"^\s+([\d,]+)\s+([\d.]+) ms\s+([\d.]+) ms$", out, re.M)
    assert [size for size, _, _ in rows] == ["50", "200"]
    assert all(float(a) > 0 and float(b) > 0 for _, a, b in rows)
