"""The activity log's fixtures: a small catalog with stock, and the log's
events read back from every partition (after the writer has flushed)."""

import pytest

from activity import periods
from activity.services import writer
from catalog.services.stock import stock_restock
from tests.catalog.conftest import ITEMS, add_item, sku_of


@pytest.fixture
def catalog(mongo_db):
    """The catalog tests' six items, each SKU with 20 units online."""
    for row in ITEMS:
        add_item(*row)
        for size, colour in row[6]:
            stock_restock(sku=sku_of(row[0], size, colour), quantity=20, note="t")
    return mongo_db


def logged(mongo_db, **match) -> list[dict]:
    """Every event written so far (the writer flushed first), oldest first."""
    writer.flush()
    found = []
    for name in mongo_db.list_collection_names():
        if periods.parse(name):
            found.extend(mongo_db[name].find(match))
    return sorted(found, key=lambda d: (d["ts"], str(d["_id"])))
