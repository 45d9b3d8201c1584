"""The load benchmark's --quick mode, end to end, so that bench/ cannot rot.

Speed is not asserted here (figures belong to bench/RESULTS.md); what is: the
run finishes cleanly, prints the seed's table, stays within its round-trip
budgets (exit status 3 otherwise), and the contended runs really contend and
still sell nothing twice. The cart scenarios run at every level (raw,
Marquee's services in-process, real shoppers over HTTP against `serve`),
and so do the theater ones.
"""

import json

from tests.processes import bench_output

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
    "Machine busy / idle / stolen",
)
# Commands per flow of the uncontended scenarios, by level: deterministic,
# so a single figure (bench/README.md, "Round-trip budgets").
SEED_OPS = {"cart": "20", "theater": "7"}


def run_bench(tmp_path, *args: str) -> tuple[str, list]:
    """What ``bench/run.py --quick`` printed, and its figures per level."""
    figures = tmp_path / "figures.json"
    out = bench_output("run.py", "--quick", *args, "--json", str(figures))
    lines = out.splitlines()
    for row in TABLE_ROWS:
        assert any(line.startswith(row) for line in lines), row
    (scenario,) = json.loads(figures.read_text())["runs"]
    for result in scenario["results"]:
        # The machine's CPU over the load, read from /proc/stat: shares of
        # all of it, so they add up to one.
        busy, idle, stolen = result["machine_busy_idle_stolen"]
        assert min(busy, idle, stolen) >= 0 and abs(busy + idle + stolen - 1) < 1e-9
    return out, scenario["results"]


# At most this many commands between two flows of one run. Services: a
# checkout whose first count of a new hour bucket collided with a concurrent
# one (its upsert is retried as an update: 1), or whose lease was renewed
# (1). Over HTTP, also: a flow's first add makes the session, and its other
# four adds run in parallel, so their first hits of the session's throttle
# counter race: each loser's increment finds no document, its insert
# collides and it increments again (2 more each, 3 losers at most: 6;
# accounts/throttle.py, config/compat.py ``increment``); an add that
# straddles a throttle window's start makes the new window's counter (1);
# and a web worker that meets a SKU for the first time reads its names
# (variant and item: 2, then cached; catalog/selectors/pricing.py) for the
# product page and each of the 5 adds, which may land on either worker: 12.
# (The services level warms that cache in each load process first.) At
# both levels an add reads its SKU's price only when its process has not
# read it in the last CART_PRICE_SECONDS (catalog/selectors/pricing.py),
# which depends on the flows before: 0 to 5 per flow, and over HTTP the
# product page's too: 0 to 6.
FLOW_SPREAD = {"services": 2 + 5, "http": 21 + 6}


def assert_sound(result: dict, scenario: str, output: str) -> None:
    """No oversell, no flow raised, and the contended runs really contended."""
    level = result["level"]
    assert f"Invariants ({level}): ok, oversell 0" in output
    assert result["check"]["ok"] and result["check"]["oversell"] == 0
    assert not [kind for kind in result["kinds"] if kind.startswith("error")]
    sold = result["check"]["figures"]["sold"]
    if scenario == "cart-contended":
        # Three times more demand than stock: all of it sold, none twice, and
        # not everyone got what they asked for.
        assert sold == result["check"]["figures"]["offered"], level
        assert result["got"].get("5 of 5 items", 0) < result["users"], level
    elif scenario == "theater-contended":
        # 20 users, 20 seats, 2 each: at most 10 orders, each of 2 seats.
        assert sold == 2 * result["completed"] <= 20
        assert result["completed"] < result["users"]
    else:
        assert result["completed"] == result["users"], level
        # The same flow on the same data: the same commands every time, but
        # for the two first writes above (bench/README.md, the checkout and
        # first_add rows).
        counts = sorted(int(n) for n in result["ops_per_flow"])
        if level == "raw":
            assert len(counts) == 1, (level, counts)
        else:
            assert counts[-1] - counts[0] <= FLOW_SPREAD[level], (level, counts)


def test_quick_cart_runs_at_every_level_with_their_ratios_and_searches(tmp_path):
    out, results = run_bench(
        tmp_path, "--search", "--scenario", "cart", "--level", "raw,services,http"
    )

    assert [r["level"] for r in results] == ["raw", "services", "http"]
    for result in results:
        assert_sound(result, "cart", out)
        assert f"Highest rate with p99 <= 100 ms ({result['level']}" in out
    assert results[0]["ops_per_flow"] == {SEED_OPS["cart"]: results[0]["users"]}
    assert "flows/s ratio services/raw:" in out
    assert "flows/s ratio http/raw:" in out
    # What each level's flow cost, every process of it counted: the web
    # workers' CPU is part of the http level's.
    assert "CPU per flow services/raw:" in out
    assert "CPU per flow http/raw:" in out
    cost = {r["level"]: r["cpu_per_flow_s"] for r in results}
    assert all(cost.values()), cost
    assert cost["http"] > cost["services"] > cost["raw"], cost
    # The web workers were measured, and their commands counted per request.
    http = results[2]
    assert http["web_peak_kib"] and http["web_cpu_share"] is not None
    assert set(http["actions"]) >= {"view_product", "first_add", "checkout"}


def test_quick_contended_cart_sells_every_unit_once_at_every_level(tmp_path):
    out, results = run_bench(
        tmp_path, "--scenario", "cart-contended", "--level", "raw,services,http"
    )

    assert [r["level"] for r in results] == ["raw", "services", "http"]
    for result in results:
        assert_sound(result, "cart-contended", out)


def test_quick_theater_runs_at_every_level_with_their_ratios(tmp_path):
    # No search here: the cart test covers it, and time is short.
    out, results = run_bench(
        tmp_path, "--scenario", "theater", "--level", "raw,services,http"
    )

    assert [r["level"] for r in results] == ["raw", "services", "http"]
    for result in results:
        assert_sound(result, "theater", out)
    assert results[0]["ops_per_flow"] == {SEED_OPS["theater"]: results[0]["users"]}
    assert "flows/s ratio http/raw:" in out
    assert set(results[2]["actions"]) >= {"view_seats", "hold_seats", "checkout"}


def test_quick_contended_theater_sells_every_seat_once_at_every_level(tmp_path):
    out, results = run_bench(
        tmp_path, "--scenario", "theater-contended", "--level", "raw,services,http"
    )

    assert [r["level"] for r in results] == ["raw", "services", "http"]
    for result in results:
        assert_sound(result, "theater-contended", out)
