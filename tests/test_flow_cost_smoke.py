"""``bench/flow_cost.py`` on a few flows, end to end, so that it cannot rot.
Speed is not asserted (figures belong to bench/RESULTS.md): each level's
flows run, every figure is printed, the invariants hold, and the census
counts what the flows send."""

import re

from tests.processes import bench_output

BATCH = re.compile(
    r"batch 1: 3 flows \(ok 3\); per flow: wall ([\d.]+) ms, "
    r"daemon ([\d.]+ ms[^,]*|n/a), client ([\d.]+) ms"
)
COARSE = re.compile(r"[\d.]+ ms \(under \d+ clock ticks: run more --flows\)")
PER_FLOW = re.compile(
    r"per flow: ([\d.]+) commands, ([\d.]+) reads, ([\d.]+) write statements"
)


def _run(*args: str) -> str:
    return bench_output("flow_cost.py", "--quick", "--flows", "3", "--warm", "1", *args)


def test_a_cart_flow_costs_are_printed_and_its_commands_counted_at_both_levels():
    out = _run("--scenario", "cart", "--level", "raw,services", "--census")

    raw, services = out.split("== cart, services level")
    assert "== cart, raw level" in raw
    for level in (raw, services):
        wall, daemon, client = BATCH.search(level).groups()
        assert float(wall) > 0 and float(client) > 0
        # The daemon's CPU is read from /proc (not for a server MONGODB_URI
        # names) in sampled clock ticks: three flows may not even cost one,
        # and then the figure says it is too coarse to read.
        assert (
            daemon == "n/a"
            or COARSE.fullmatch(daemon)
            or float(daemon.removesuffix(" ms")) > 0
        )
        assert "invariants: ok" in level
    # The raw level is the seed's flow: 20 operations, 6 of them reads (5
    # products and the cart) and 14 writes, the same every flow.
    assert PER_FLOW.search(raw).groups() == ("20.00", "6.00", "14.00")
    # The services level: one counter update per add and one for the
    # checkout's commit of the five lines.
    assert re.search(r"inventories\s+update\s+6\.00\s+6\.00", services)
    commands, reads, writes = map(float, PER_FLOW.search(services).groups())
    assert commands > 20 and 0 < reads < writes


def test_a_theater_flow_runs_one_at_a_time_with_its_invariants():
    out = _run("--scenario", "theater")

    assert "== theater, services level" in out
    assert BATCH.search(out)
    assert "invariants: ok" in out
    assert "statements" not in out  # no census unless asked
