"""``bench/activity_bench.py`` on a tiny load, end to end, so that it cannot
rot. Speed is not asserted (figures belong to bench/RESULTS.md): the run
finishes and prints each figure, with nothing lost by the writer."""

import re

from tests.processes import bench_output


def test_the_activity_bench_prints_every_figure():
    out = bench_output(
        "activity_bench.py",
        "--items",
        "12",
        "--page-runs",
        "5",
        "--events",
        "600",
        "--single-events",
        "20",
        "--job-events",
        "3000",
        "--order-share",
        "0.3",
    )  # fmt: skip

    assert re.search(r"batching writer: 600 events .* \(dropped 0, failed 0\)", out)
    assert "one insert per event: 20 events" in out
    assert "product page p50: logging on" in out
    assert "one product view logged" in out
    assert "recently viewed (6 items): p50" in out
    assert "often bought together: p50" in out
    found = re.search(r"bought-together job: .* \((\d+) items with partners\)", out)
    assert found and int(found[1]) == 12, out
    assert out.count("load average") == 2
