"""The rate search of bench/run.py --search: doubling, then bisecting."""

from types import SimpleNamespace

from bench.search import find_max_rate


def runs_up_to(limit: float, errors_at: float | None = None):
    """What a level does: p99 within 100 ms up to ``limit`` users/s."""

    def run_at(rate: float):
        p99 = 50.0 if rate <= limit else 400.0
        errors = 1 if errors_at is not None and rate >= errors_at else 0
        return SimpleNamespace(
            latency=SimpleNamespace(p99=p99), errors=errors, flows_per_s=rate
        )

    return run_at


def test_the_search_doubles_then_brackets_the_highest_rate_that_meets():
    found = find_max_rate(runs_up_to(37), start=10, duration_s=1)

    assert [p.rate for p in found.probes][:3] == [10, 20, 40]
    assert 37 * 0.9 <= found.best <= 37
    assert found.stopped.startswith("bracketed")
    assert all(p.met == (p.rate <= 37) for p in found.probes)


def test_errors_miss_even_when_fast_and_a_level_that_never_meets_has_no_best():
    with_errors = find_max_rate(runs_up_to(100, errors_at=15), start=10, duration_s=1)
    never = find_max_rate(runs_up_to(0.1), start=10, duration_s=1)

    assert 15 * 0.9 <= with_errors.best < 15
    assert never.best is None
    assert never.stopped.startswith("missed even at")


def test_the_time_budget_stops_the_search_after_a_first_probe():
    found = find_max_rate(runs_up_to(37), start=10, duration_s=1, budget_s=0)

    assert [p.rate for p in found.probes] == [10]
    assert found.best == 10
    assert found.stopped == "time budget of 0 s"
