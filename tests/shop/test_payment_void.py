"""Closing a charge's reference (``PaymentProvider.void``), per provider:
what a checkout's recovery relies on before it reopens a cart. The void and
the charge of one reference are decided once, whichever comes first."""

from decimal import Decimal

import pytest

from shop.payments import VOIDED, AtCounter, PaymentError
from shop.payments.box_office import BoxOffice
from shop.payments.test_gateway import TestGateway
from tests.shop.factories import card

PROVIDERS = {
    "test gateway": (TestGateway, card),
    "box office": (BoxOffice, lambda: AtCounter(by="staff", name="Ada")),
}


def charge(provider, payment, reference="MQ-1-tag-1"):
    return provider.charge(
        reference=reference,
        amount=Decimal("20.00"),
        currency="GBP",
        card=payment,
        description="Marquee order MQ-1",
    )


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_a_voided_reference_takes_no_charge(mongo_db, name):
    make, payment = PROVIDERS[name]
    provider = make()

    assert provider.void(reference="MQ-1-tag-1") is None
    with pytest.raises(PaymentError) as refused:
        charge(provider, payment())

    assert str(refused.value) == VOIDED
    found = provider.lookup(reference="MQ-1-tag-1")
    assert found is None or found.outcome != "paid"
    # Another reference is untouched.
    assert charge(provider, payment(), "MQ-1-tag-2").outcome == "paid"


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_a_void_after_the_charge_returns_it_and_changes_nothing(mongo_db, name):
    make, payment = PROVIDERS[name]
    provider = make()
    paid = charge(provider, payment())

    assert provider.void(reference="MQ-1-tag-1") == paid
    assert provider.void(reference="MQ-1-tag-1") == paid
    assert provider.lookup(reference="MQ-1-tag-1") == paid
    assert charge(provider, payment()) == paid  # a repeat: the first answer
