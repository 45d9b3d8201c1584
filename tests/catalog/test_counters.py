"""catalog.services.counters: a stock location's counter, on its own.

Each step is one conditional update of the counter, whose filter carries its
rule; none of them knows where the units are held (a hold key is only a
name here). The protocol around them is tested in tests/shop/
test_stock_services.py and tests/concurrency/test_stock_crashes.py.
"""

from datetime import UTC, datetime, timedelta

import pytest

from catalog.services import counters
from catalog.services.stock import stock_restock

NOW = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=10)


@pytest.fixture
def sku():
    stock_restock(sku="SKU-1", quantity=10, note="initial")
    return "SKU-1"


def counter(mongo_db, sku="SKU-1") -> dict:
    return mongo_db.inventories.find_one({"_id": sku})


def give_back(op: str, *, free: int = 0, sold: int = 0, forget=()) -> list:
    return counters.give(
        [
            (
                "SKU-1",
                "SKU-1|cart-a",
                {"op": op, "free": free, "sold": sold, "at": NOW},
                list(forget),
            )
        ]
    )


def test_a_take_short_of_units_changes_nothing(mongo_db, sku):
    assert counters.take(sku, "SKU-1|cart-a", 11, NOW) is None
    assert counters.take("NO-SUCH-SKU", "NO-SUCH-SKU|cart-a", 1, NOW) is None

    doc = counter(mongo_db)
    assert (doc["quantity"], doc.get("takes") or []) == (10, [])


def test_a_take_journals_its_move_and_an_untake_applies_once(mongo_db, sku):
    op = counters.take(sku, "SKU-1|cart-a", 4, NOW)

    doc = counter(mongo_db)
    assert doc["quantity"] == 6
    assert doc["takes"] == [{"op": op, "hold": "SKU-1|cart-a", "units": 4, "at": NOW}]

    assert counters.untake(sku, op, 4)
    assert not counters.untake(sku, op, 4)
    doc = counter(mongo_db)
    assert (doc["quantity"], doc["takes"]) == (10, [])


def test_a_take_drops_the_entries_this_process_finished(mongo_db, sku):
    first = counters.take(sku, "SKU-1|cart-a", 1, NOW)
    counters.taken(sku, first)

    second = counters.take(sku, "SKU-1|cart-b", 1, NOW)

    assert [entry["op"] for entry in counter(mongo_db)["takes"]] == [second]


def test_a_give_back_applies_once_and_drops_the_takes_it_forgets(mongo_db, sku):
    op = counters.take(sku, "SKU-1|cart-a", 3, NOW)

    assert give_back("g1", free=1, sold=2, forget=[op]) == ["g1"]
    # A second try of the same move (a retry, a stalled writer) adds nothing.
    assert give_back("g1", free=1, sold=2, forget=[op]) == ["g1"]

    doc = counter(mongo_db)
    assert (doc["quantity"], doc["sold"], doc["takes"]) == (8, 2, [])
    assert [entry["op"] for entry in doc["gives"]] == ["g1"]


def test_a_fenced_give_back_is_the_recovery_s_and_applies_once(mongo_db, sku):
    counters.take(sku, "SKU-1|cart-a", 3, NOW)

    assert counters.fence_give(sku, "g1", "SKU-1|cart-a", NOW)
    # The writer, late: refused, and told the move is not its own.
    assert give_back("g1", free=3) == []
    assert counters.apply_fenced(sku, "g1", free=3, sold=0, forget=[])
    assert not counters.apply_fenced(sku, "g1", free=3, sold=0, forget=[])

    doc = counter(mongo_db)
    assert doc["quantity"] == 10
    # The fence stays (a later write never drops it) until the retention.
    counters.given(sku, "g1")
    counters.take(sku, "SKU-1|cart-b", 1, NOW)
    assert [g["by"] for g in counter(mongo_db)["gives"]] == [counters.RECOVERY]
    counters.fences_purge(LATER)
    assert counter(mongo_db)["gives"] == []


def test_a_fence_after_the_writer_applied_leaves_the_move_to_it(mongo_db, sku):
    give_back("g1", free=0, sold=1)

    assert not counters.fence_give(sku, "g1", "SKU-1|cart-a", NOW)
    assert counter(mongo_db)["sold"] == 1


def test_the_recovery_lists_old_moves_but_not_its_own_fences(mongo_db, sku):
    op = counters.take(sku, "SKU-1|cart-a", 1, NOW)
    give_back("g1", free=1)
    counters.fence_give(sku, "g2", "SKU-1|cart-b", NOW)

    assert [m["op"] for _, m in counters.takes_before(LATER)] == [op]
    assert [m["op"] for _, m in counters.gives_before(LATER)] == ["g1"]
    assert list(counters.takes_before(NOW)) == []

    counters.drop(sku, takes=[op], gives=["g1"])
    doc = counter(mongo_db)
    assert (doc["takes"], [g["op"] for g in doc["gives"]]) == ([], ["g2"])
