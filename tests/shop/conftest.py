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
