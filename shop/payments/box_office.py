"""The box office's counter as a payment provider: no card, money taken by
staff at the counter (``shop.payments.AtCounter``).

A charge is recorded as settled (``CounterPayment``, ``_id`` the
reference: once per reference, the first record stands), so a checkout
that stops after it is finished like a card's (``lookup``). A refund is
the money handed back at the counter, recorded once per reference, never
more than the charge. A voided reference (a checkout's recovery closed it,
``kind: void``) takes no charge.
"""

from decimal import Decimal

from bson.decimal128 import Decimal128
from django.utils import timezone
from pymongo.errors import DuplicateKeyError

from config.decimals import decimal_of
from shop.documents import CounterPayment
from shop.payments import (
    BOX_OFFICE,
    VOID,
    VOIDED,
    AtCounter,
    Charge,
    PaymentError,
    PaymentProvider,
    Refund,
)


def _record(son: dict) -> dict:
    """Insert the counter's record, or read the first one of its reference."""
    try:
        CounterPayment.coll().insert_one(son)
    except DuplicateKeyError:
        return CounterPayment.coll().find_one({"_id": son["_id"]})
    return son


class BoxOffice(PaymentProvider):
    name = BOX_OFFICE

    def charge(
        self,
        *,
        reference: str,
        amount: Decimal,
        currency: str,
        card: AtCounter,
        description: str,
    ) -> Charge:
        if not isinstance(card, AtCounter):
            raise PaymentError("The box office takes payment at its counter only.")
        record = _record(
            {
                "_id": reference,
                "kind": "charge",
                "amount": Decimal128(amount),
                "currency": currency,
                "by": card.by,
                "at": timezone.now(),
            }
        )
        if record["kind"] == VOID:
            raise PaymentError(VOIDED)
        return self._charge(record)

    def lookup(self, *, reference: str) -> Charge | None:
        record = CounterPayment.coll().find_one({"_id": reference, "kind": "charge"})
        return self._charge(record) if record else None

    def void(self, *, reference: str) -> Charge | None:
        record = _record({"_id": reference, "kind": VOID, "at": timezone.now()})
        return self._charge(record) if record["kind"] == "charge" else None

    def refund(
        self, *, reference: str, charge_reference: str, amount: Decimal, currency: str
    ) -> Refund:
        charge = CounterPayment.coll().find_one(
            {"_id": charge_reference, "kind": "charge"}
        )
        if charge is None:
            raise PaymentError("There is no counter payment to refund.")
        if amount > decimal_of(charge["amount"]) or currency != charge["currency"]:
            raise PaymentError("A refund cannot exceed what was paid.")
        record = _record(
            {
                "_id": reference,
                "kind": "refund",
                "charge_reference": charge_reference,
                "amount": Decimal128(amount),
                "currency": currency,
                "at": timezone.now(),
            }
        )
        return Refund(
            provider=self.name,
            reference=record["_id"],
            charge_reference=record["charge_reference"],
            amount=decimal_of(record["amount"]),
        )

    def _charge(self, record: dict) -> Charge:
        return Charge(provider=self.name, reference=record["_id"], outcome="paid")
