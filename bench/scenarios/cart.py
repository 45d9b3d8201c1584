"""Cart, 5 items, successful checkout (seed 000) and its contended variant.

Per user, as the seed's simulator scenario ``cart_5_item_reservation_successful``:
create a cart; add 5 random products (of 1,000; 1 KiB of properties each;
stock 1,000,000 each) concurrently; check out. The original costs 20 database
operations per user: 1 cart upsert, 5 x (product read, inventory conditional
update, cart push), then cart read, order insert, cart state, inventory
multi-update.
"""

from bench.scenarios import CartParams, Scenario, SeedTable

CART = Scenario(
    name="cart",
    family="cart",
    title="Cart, 5 items, successful checkout",
    params=CartParams(),
    # The seed's load is 4,000 users/s (4 processes x 1,000) for 25 s; that
    # overloads every machine it met, so the default is a rate this machine
    # can sustain. bench/RESULTS.md runs both.
    rate=50,
    duration=25,
    # Small enough for the smoke test to run every level within minutes.
    quick_params=CartParams(products=200),
    quick_rate=10,
    quick_duration=2,
    seed_ops_per_flow=20,
    seed=(
        SeedTable(
            "MMAP",
            88.241,
            46416.268,
            21937.134,
            62873.337,
            67818.018,
            70497.126,
            20.034,
            74220.014,
        ),
        SeedTable(
            "WiredTiger",
            108.916,
            63597.036,
            27672.244,
            83614.989,
            87405.772,
            89546.218,
            41.414,
            93681.381,
        ),
    ),
)

# 10 hot products of stock 100 (1,000 units) and 1,000 users wanting 5 each:
# four users in five must come away with less than they asked for, and not
# one unit may be sold twice.
CART_CONTENDED = Scenario(
    name="cart-contended",
    family="cart",
    title="Cart, 5 of 10 hot products, more demand than stock",
    params=CartParams(stock=100, hot=10),
    rate=200,
    duration=5,
    # 30 users wanting 150 units of 50: three times more demand than stock.
    quick_params=CartParams(products=100, stock=5, hot=10),
    quick_rate=15,
    quick_duration=2,
    contended=True,
)
