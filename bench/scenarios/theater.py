"""Theater, 5 tickets, successful checkout (seed 003) and its contended variant.

Per user, as the seed's simulator scenario ``theater_reservation_successful``:
create a cart, hold 5 adjacent seats of a session in one conditional update,
record the hold on the cart, check out. The original costs 7 operations:
cart insert, session seat hold, cart push, then cart read, receipt insert,
session multi-update, cart state. Users get distinct seats (arrival ``i``
gets the ``i``-th block of 5), so every checkout can succeed, as in the seed.
"""

from bench.scenarios import Scenario, SeedTable, TheaterParams

THEATER = Scenario(
    name="theater",
    family="theater",
    title="Theater, 5 tickets, successful checkout",
    params=TheaterParams(),
    rate=100,
    duration=25,
    # Small enough for the smoke test to run every level within minutes.
    quick_params=TheaterParams(theaters=2, sessions_per_theater=2),
    quick_rate=10,
    quick_duration=2,
    seed_ops_per_flow=7,
    seed=(
        SeedTable(
            "MMAP",
            124.397,
            2292.494,
            1527.972,
            2916.34,
            5211.314,
            7884.857,
            149.741,
            14779.998,
        ),
        SeedTable(
            "WiredTiger",
            112.994,
            2302.15,
            2052.946,
            3145.921,
            6451.251,
            9608.811,
            19.081,
            17122.854,
        ),
    ),
)

# 200 users, 20 seats, 2 seats each: at most 10 users can win.
THEATER_CONTENDED = Scenario(
    name="theater-contended",
    family="theater",
    title="Theater, users competing for the same 20 seats, 2 each",
    params=TheaterParams(theaters=1, sessions_per_theater=1, tickets=2, hot_seats=20),
    rate=200,
    duration=1,
    quick_params=TheaterParams(
        theaters=1, sessions_per_theater=1, tickets=2, hot_seats=20
    ),
    # 20 users for 10 pairs: at most half of them can win.
    quick_rate=10,
    quick_duration=2,
    contended=True,
)
