"""The flash sale's --quick mode end to end (bench/flash_sale.py), so it cannot rot.

A few shoppers at the http level against a real ``serve``: more shoppers
than units, so the sale sells out; the end state is checked by the bench
itself (sold + held == units, paid orders == units sold) and it exits 1 if
not. Speed is not asserted here (figures belong to bench/RESULTS.md).
"""

import re

from tests.processes import bench_output


def run_sale(*args: str) -> str:
    return bench_output("run.py", "--quick", "--shoppers", "24", "--units", "10", *args)


def test_a_quick_flash_sale_sells_out_exactly_and_says_how_fast():
    out = run_sale("--scenario", "flash-sale")

    assert re.search(r"24 shoppers in [\d.]+ s = [\d.]+ shoppers/s", out), out
    assert re.search(r"add POST ms: p50 \d+, p95 \d+, p99 \d+", out), out
    # What each shopper cost each part: a sale slower than the one before
    # says where its time went.
    assert re.search(
        r"CPU ms per shopper: database [\d.]+, web tier [\d.]+, browsers [\d.]+; "
        r"machine busy / idle / stolen \d+% / \d+% / [\d.]+%",
        out,
    ), out
    assert "sold 0 + held 10 = 10 of 10 (free 0); adds that succeeded 10" in out
    assert "invariants: ok" in out and "uptime before:" in out


def test_a_quick_flash_sale_with_checkout_pays_for_every_unit_twice_in_a_row():
    out = run_sale("--scenario", "flash-sale-checkout", "--repeat", "2")

    assert out.count("sold 10 + held 0 = 10 of 10") == 2, out
    assert out.count("paid orders 10") == 2, out
    assert re.search(r"checkout ms \(page, POST, order page\): p50 \d+, p95 \d+", out)
