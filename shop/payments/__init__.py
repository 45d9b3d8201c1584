"""Taking payment: one small interface, providers plugged in behind it.

``provider()`` returns the configured provider (setting
``SHOP_PAYMENT_PROVIDER``, a dotted path; the built-in test gateway by
default). A provider charges a card once per ``reference`` (a repeat returns
the first result) and can look a charge up by reference, which is how a
checkout interrupted after charging is finished later, and can close a
reference to charges (``void``), which is how a checkout's recovery makes
sure that a charge still on its way cannot land once the cart is reopened.

References: a charge's is ``<order number>-<tag>-<attempt>``, the tag
random and drawn with its attempt; a refund's is its charge's reference and
``-refund``. Order numbers and attempt numbers can come round again (a
restored backup hands out once more those given after it), and a provider
that charges a reference once would answer the repeat with the lost
payment; the tag keeps every charge's reference new, and a refund's stays
the same for as long as its charge's does (a refund restored by a backup
and asked again is answered with the first, not paid twice).

A payment method other than a card: ``AtCounter``, money taken at the box
office's counter by staff. Its provider (``provider(BOX_OFFICE)``,
``shop.payments.box_office``) records the charge as settled there; the
order remembers the method (``payment_method``) so that looking its charge
up and refunding it go to the same provider. A card order has no method
recorded and goes to the configured provider, as it always did.
"""

import secrets
from abc import ABC, abstractmethod
from dataclasses import dataclass
from decimal import Decimal
from typing import ClassVar

from django.conf import settings
from django.utils.module_loading import import_string

DEFAULT_PROVIDER = "shop.payments.test_gateway.TestGateway"

# A reference closed to charges (``PaymentProvider.void``), and what a
# charge under it tells the shopper.
VOID = "void"
VOIDED = (
    "This checkout was stopped before its payment went through, "
    "and nothing was charged."
)


@dataclass(frozen=True)
class Card:
    """Card details as typed; never stored, only ``label`` is."""

    number: str
    exp_month: int
    exp_year: int
    cvc: str
    # The order records no method for a card: the configured provider's.
    method: ClassVar[str | None] = None

    @property
    def last4(self) -> str:
        return self.number[-4:]

    @property
    def brand(self) -> str:
        if self.number.startswith("4"):
            return "Visa"
        if "51" <= self.number[:2] <= "55" or "2221" <= self.number[:4] <= "2720":
            return "Mastercard"
        if self.number[:2] in {"34", "37"}:
            return "Amex"
        return "Card"

    @property
    def label(self) -> str:
        return f"{self.brand} ending {self.last4}"

    def order_fields(self) -> dict:
        """A card order records nothing beside its charge."""
        return {}

    def __repr__(self) -> str:  # keep card numbers out of logs and tracebacks
        return f"Card({self.label})"


BOX_OFFICE = "box_office"


@dataclass(frozen=True)
class AtCounter:
    """Paid at the box office's counter (cash, or the counter's own
    terminal): no card. ``by`` is the staff member who took the money; the
    order carries the customer's ``name`` and, if given, ``phone``."""

    by: str
    name: str
    phone: str = ""
    method: ClassVar[str] = BOX_OFFICE
    label: ClassVar[str] = "Box office"

    def order_fields(self) -> dict:
        """What the order records of this payment beside its charge."""
        fields = {"payment_method": self.method, "customer_name": self.name}
        if self.phone:
            fields["customer_phone"] = self.phone
        return fields


@dataclass(frozen=True)
class Charge:
    """A charge the provider took (``outcome == "paid"``) or refused."""

    provider: str
    reference: str
    outcome: str
    message: str = ""


@dataclass(frozen=True)
class Refund:
    """Money the provider gave back for a charge."""

    provider: str
    reference: str
    charge_reference: str
    amount: Decimal


class PaymentDeclined(Exception):
    """The card was refused; nothing was charged. ``str()`` is for the shopper."""


class PaymentError(Exception):
    """The provider failed and says nothing was charged; trying again is fine."""


class PaymentProvider(ABC):
    name: str

    @abstractmethod
    def charge(
        self,
        *,
        reference: str,
        amount: Decimal,
        currency: str,
        card: Card,
        description: str,
    ) -> Charge:
        """Charge once per reference. Raises PaymentDeclined or PaymentError;
        any other exception leaves the outcome unknown (looked up later)."""

    @abstractmethod
    def lookup(self, *, reference: str) -> Charge | None:
        """The charge taken under ``reference``, or None if there is none."""

    @abstractmethod
    def void(self, *, reference: str) -> Charge | None:
        """Close ``reference`` to charges, so that one still on its way
        (a run that stalled past its lease) can no longer succeed: from now
        on a charge under it raises PaymentError, nothing charged. Returns
        the paid charge taken under it before, if there is one (then
        nothing changes), else None. Raises PaymentError when the provider
        could not say; trying again later is fine.

        What a checkout's recovery calls before it reopens a cart: a paid
        order must never be for units its cart has given back."""

    @abstractmethod
    def refund(
        self, *, reference: str, charge_reference: str, amount: Decimal, currency: str
    ) -> Refund:
        """Give ``amount`` of a paid charge back, once per ``reference`` (a
        repeat returns the first refund). Raises PaymentError when nothing was
        refunded (no such paid charge, more than it took, the provider
        failed); trying again later is fine."""


def provider(method: str | None = None) -> PaymentProvider:
    """The provider of a payment ``method`` (an order's ``payment_method``,
    a payment's ``method``): the counter's for BOX_OFFICE, else the
    configured one (cards)."""
    if method == BOX_OFFICE:
        from shop.payments.box_office import BoxOffice

        return BoxOffice()
    path = getattr(settings, "SHOP_PAYMENT_PROVIDER", DEFAULT_PROVIDER)
    return import_string(path)()


def new_tag() -> str:
    """A reference's random tag (module docstring)."""
    return secrets.token_hex(4)


def reference_of(number: str, tag: str | None, attempt: int) -> str:
    """The reference of a charge: its order's number, its attempt's tag and
    number. An attempt made before references had a tag keeps its old form."""
    return f"{number}-{tag}-{attempt}" if tag else f"{number}-{attempt}"


def charge_reference(order: dict) -> str:
    """The reference of the order's (raw SON's) latest payment attempt."""
    return reference_of(
        order["number"], order.get("payment_tag"), order["payment_attempts"]
    )


def refund_reference(order) -> str:
    """The reference of a paid order's (document's) refund."""
    return f"{order.payment_reference}-refund"
