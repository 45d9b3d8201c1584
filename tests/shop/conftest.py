"""Catalog data and a controllable clock for the shop's tests."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tests.shop.factories import make_product

# A fixed "now": services take ``now=`` so no test waits for time to pass.
T0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


@pytest.fixture
def now():
    return T0


@pytest.fixture
def later():
    """A moment after any hold started at T0 has run out."""
    return T0 + timedelta(hours=3)


@pytest.fixture
def product():
    """A product with one SKU, priced online, 100 units in stock."""
    return make_product(sku="SNKR-42", title="JC Sneaker", price=Decimal("100.00"))


@pytest.fixture
def builds(monkeypatch):
    """``builds(Document)``: a list that grows by one each time MongoEngine
    builds that document from its stored form (``_from_son``), for a test
    of a hot path that should answer without building it."""

    def spy(document) -> list:
        built: list = []
        real = document._from_son.__func__
        monkeypatch.setattr(
            document,
            "_from_son",
            classmethod(lambda cls, *a, **k: built.append(1) or real(cls, *a, **k)),
        )
        return built

    return spy
