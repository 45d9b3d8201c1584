"""Catalog and stock data for tests, written with the real documents/services."""

from decimal import Decimal

from catalog.documents import ONLINE, Item, Price, Variant
from catalog.services.stock import stock_restock


def make_product(
    *,
    sku: str,
    title: str = "Product",
    price: Decimal | str = "10.00",
    stock: int | None = 100,
    attributes: dict | None = None,
) -> str:
    item_id = f"item-{sku}"
    Item(
        item_id=item_id,
        department="Shoes",
        category="Shoes/Sneakers",
        title=title,
    ).save()
    Variant(sku=sku, item_id=item_id, attributes=attributes or {}).save()
    Price(price_id=f"{sku}_{ONLINE}", amount=Decimal(price)).save()
    if stock:
        stock_restock(sku=sku, quantity=stock, note="initial")
    return sku


def set_price(sku: str, price: Decimal | str) -> None:
    Price.objects(price_id=f"{sku}_{ONLINE}").update_one(
        set__amount=Decimal(price), upsert=True
    )


GOOD_CARD = "4242424242424242"
DECLINED_CARD = "4000000000000002"
ERROR_CARD = "4000000000000119"

SHIPPING = {
    "name": "Ada Lovelace",
    "line1": "12 St James's Square",
    "line2": "",
    "city": "London",
    "postcode": "SW1Y 4JH",
    "country": "GB",
}


def card(number: str = GOOD_CARD):
    from shop.payments import Card

    return Card(number=number, exp_month=12, exp_year=2099, cvc="123")


def make_show(
    *, show: str = "Hamlet", hall: str = "Test Hall", days_after=None, layout=None
) -> str:
    """A performance on sale (booking's small hall unless ``layout``).

    It starts 30 days after the later of now and the shop tests' fixed clock
    (T0), so the box office (real clock) and the shop (T0) both see it open.
    """
    from datetime import UTC, datetime, timedelta

    from django.utils import timezone

    from tests.booking.factories import make_session, make_theater

    t0 = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)
    start = max(t0, timezone.now()) + (days_after or timedelta(days=30))
    theater = make_theater(hall, layout=layout)
    return make_session(theater, show=show, starts_in=start - timezone.now())


def make_store(store_id: str, name: str, *, lng: float, lat: float) -> str:
    """A store (click & collect), written through the catalog's service."""
    from catalog.documents import Address
    from catalog.services.stores import store_save

    store_save(
        store_id=store_id,
        name=name,
        group="sg-test",
        lng=lng,
        lat=lat,
        region="North",
        address=Address(city=name, zip=f"{store_id.upper()} 1AA"),
    )
    return store_id


def stock_store(sku: str, store_id: str, *, quantity: int, price=None) -> str:
    """A store's count of a SKU (and its own price if given); the location."""
    from catalog.documents import stock_location
    from catalog.services.store_stock import store_stock_set

    store_stock_set(store_id=store_id, sku=sku, quantity=quantity)
    if price is not None:
        Price.objects(price_id=f"{sku}_{store_id}").update_one(
            set__amount=Decimal(price), upsert=True
        )
    return stock_location(sku, store_id)
