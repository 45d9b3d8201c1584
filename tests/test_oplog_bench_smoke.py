"""bench/oplog_bench.py runs and prints a row per daemon, without and with
the oplog (no speed is asserted: figures belong to bench/RESULTS.md)."""

import re

from tests.processes import bench_output


def test_the_oplog_bench_prints_a_run_without_and_with_the_oplog():
    out = bench_output(
        "oplog_bench.py", "--threads", "2", "--seconds", "0.5", "--rounds", "1"
    )
    rows = re.findall(
        r"^\s+(without|with)\s+([\d,]+)\s+([\d,]+) us\s+([\d,]+) us$", out, re.M
    )
    assert [row[0] for row in rows] == ["without", "with"]
    assert all(int(figure.replace(",", "")) > 0 for row in rows for figure in row[1:])
