"""The built-in test gateway: real records in MongoDB, outcomes by card number.

| card number | outcome |
| --- | --- |
| 4242 4242 4242 4242, 5555 5555 5555 4444 | paid |
| 4000 0000 0000 0002 | declined |
| 4000 0000 0000 0119 | provider error (nothing charged) |
| any other | declined ("not a test card") |

Refunds give back up to what a paid charge took, once per refund reference.
A voided reference (``void``: its record, ``outcome: void``, written first)
refuses every charge under it with a provider error.
"""

from decimal import Decimal

from bson.decimal128 import Decimal128
from django.utils import timezone
from pymongo.errors import DuplicateKeyError

from config.decimals import decimal_of
from shop.documents import GatewayCharge, GatewayRefund
from shop.payments import (
    VOID,
    VOIDED,
    Card,
    Charge,
    PaymentDeclined,
    PaymentError,
    PaymentProvider,
    Refund,
)

SUCCEEDS = frozenset({"4242424242424242", "5555555555554444"})
DECLINES = "4000000000000002"
FAILS = "4000000000000119"


def _first(record: dict) -> dict:
    """Record a reference's answer, or read the first one: a charge and a
    void of the same reference are decided once, whichever comes first."""
    collection = GatewayCharge.coll()
    try:
        collection.insert_one(record)
    except DuplicateKeyError:
        return collection.find_one({"_id": record["_id"]})
    return record


class TestGateway(PaymentProvider):
    __test__ = False  # not a pytest test class, despite its name

    name = "test"

    def charge(
        self,
        *,
        reference: str,
        amount: Decimal,
        currency: str,
        card: Card,
        description: str,
    ) -> Charge:
        if card.number == FAILS:
            raise PaymentError(
                "The payment provider had a problem and nothing was charged. "
                "Please try again."
            )
        if card.number in SUCCEEDS:
            outcome, message = "paid", ""
        elif card.number == DECLINES:
            outcome, message = "declined", "Your card was declined."
        else:
            outcome, message = "declined", "The test gateway declines this card."
        record = {
            "_id": reference,
            "amount": Decimal128(amount),
            "currency": currency,
            "outcome": outcome,
            "card": card.label,
            "message": message,
            "at": timezone.now(),
        }
        record = _first(record)
        charge = self._charge(record)
        if charge.outcome == VOID:
            raise PaymentError(charge.message)
        if charge.outcome != "paid":
            raise PaymentDeclined(charge.message)
        return charge

    def lookup(self, *, reference: str) -> Charge | None:
        record = GatewayCharge.coll().find_one({"_id": reference})
        return self._charge(record) if record else None

    def void(self, *, reference: str) -> Charge | None:
        record = _first(
            {
                "_id": reference,
                "outcome": VOID,
                "message": VOIDED,
                "at": timezone.now(),
            }
        )
        return self._charge(record) if record["outcome"] == "paid" else None

    def refund(
        self, *, reference: str, charge_reference: str, amount: Decimal, currency: str
    ) -> Refund:
        charge = GatewayCharge.coll().find_one({"_id": charge_reference})
        if charge is None or charge["outcome"] != "paid":
            raise PaymentError("There is no paid charge to refund.")
        if amount > decimal_of(charge["amount"]) or currency != charge["currency"]:
            raise PaymentError("A refund cannot exceed what was charged.")
        record = {
            "_id": reference,
            "charge_reference": charge_reference,
            "amount": Decimal128(amount),
            "currency": currency,
            "at": timezone.now(),
        }
        collection = GatewayRefund.coll()
        try:
            collection.insert_one(record)
        except DuplicateKeyError:
            record = collection.find_one({"_id": reference})  # the first stands
        return Refund(
            provider=self.name,
            reference=record["_id"],
            charge_reference=record["charge_reference"],
            amount=decimal_of(record["amount"]),
        )

    def _charge(self, record: dict) -> Charge:
        return Charge(
            provider=self.name,
            reference=record["_id"],
            outcome=record["outcome"],
            message=record.get("message", ""),
        )
