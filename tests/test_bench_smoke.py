"""The load benchmark's --quick mode, end to end, so that bench/ cannot rot.

Speed is not asserted here (figures belong to bench/RESULTS.md); what is: the
run finishes cleanly, prints the seed's table, stays within its round-trip
budgets (exit status 3 otherwise), and the contended runs really contend and
still sell nothing twice.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

RUN = Path(settings.BASE_DIR) / "bench" / "run.py"
TABLE_ROWS = (
    "Runtime",
    "Mean",
    "Standard Deviation",
    "75 percentile",
    "95 percentile",
    "99 percentile",
    "Minimum",
    "Maximum",
    "Completed flows/s",
    "Failures",
    "DB ops per flow",
)


@pytest.mark.parametrize(
    "scenario", ["cart", "theater", "cart-contended", "theater-contended"]
)
def test_quick_raw_run_prints_the_table_and_never_oversells(scenario, tmp_path):
    figures = tmp_path / "figures.json"

    done = subprocess.run(
        [
            sys.executable,
            str(RUN),
            "--quick",
            "--search",
            "--scenario",
            scenario,
            "--level",
            "raw",
            "--json",
            str(figures),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=settings.BASE_DIR,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for row in TABLE_ROWS:
        assert any(line.startswith(row) for line in lines), row
    assert "Invariants (raw): ok, oversell 0" in done.stdout
    assert "Highest rate with p99 <= 100 ms (raw" in done.stdout
    (result,) = json.loads(figures.read_text())["runs"][0]["results"]
    assert result["check"]["ok"] and result["check"]["oversell"] == 0
    assert not [kind for kind in result["kinds"] if kind.startswith("error")]
    sold = result["check"]["figures"]["sold"]
    if scenario == "cart-contended":
        # Three times more demand than stock: all of it sold, none twice, and
        # not everyone got what they asked for.
        assert sold == result["check"]["figures"]["offered"]
        assert result["got"].get("5 of 5 items", 0) < result["users"]
    elif scenario == "theater-contended":
        # 40 users, 20 seats, 2 each: at most 10 orders, each of 2 seats.
        assert sold == 2 * result["completed"] <= 20
        assert result["completed"] < result["users"]
    else:
        assert result["completed"] == result["users"]
        assert result["ops_per_flow"] == {
            "20" if scenario == "cart" else "7": result["users"]
        }
