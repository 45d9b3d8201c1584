"""Request data -> typed values. The only place the shop reads request input.

Nothing a shopper sends names a price, a total, a stock figure or an owner:
prices come from the catalog, the owner from the session or the login.
"""

from datetime import date

from django import forms
from django.core.validators import RegexValidator
from localflavor.de.forms import DEZipCodeField
from localflavor.es.forms import ESPostalCodeField
from localflavor.fr.forms import FRZipCodeField
from localflavor.gb.forms import GBPostcodeField
from localflavor.ie.forms import EircodeField
from localflavor.it.forms import ITZipCodeField
from localflavor.nl.forms import NLZipCodeField
from localflavor.us.forms import USZipCodeField

from booking.forms import SeatListField
from shop.limits import MAX_LINE_QUANTITY
from shop.payments import Card

SKU_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
CART_ID_PATTERN = r"^[0-9a-f]{32}$"
SESSION_ID_PATTERN = r"^[0-9a-f]{24}$"

COUNTRIES = [
    ("GB", "United Kingdom"),
    ("IE", "Ireland"),
    ("FR", "France"),
    ("DE", "Germany"),
    ("NL", "Netherlands"),
    ("ES", "Spain"),
    ("IT", "Italy"),
    ("US", "United States"),
]
# Each country's postcode, as django-localflavor checks and writes it.
POSTCODES = {
    "GB": GBPostcodeField,
    "IE": EircodeField,
    "FR": FRZipCodeField,
    "DE": DEZipCodeField,
    "NL": NLZipCodeField,
    "ES": ESPostalCodeField,
    "IT": ITZipCodeField,
    "US": USZipCodeField,
}


class CardInput(forms.TextInput):
    """A card field that is never echoed back into a page (re-typed instead)."""

    def format_value(self, value):
        return None


class SkuField(forms.CharField):
    default_validators = [
        RegexValidator(SKU_PATTERN, "That is not a product code we know.")
    ]

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("widget", forms.HiddenInput)
        super().__init__(**kwargs)


def _quantity(minimum: int) -> forms.IntegerField:
    return forms.IntegerField(
        min_value=minimum,
        max_value=MAX_LINE_QUANTITY,
        initial=1,
        error_messages={
            "invalid": "Please enter a whole number.",
            "min_value": f"Please choose a quantity of at least {minimum}.",
            "max_value": f"Please choose at most {MAX_LINE_QUANTITY}.",
        },
    )


# A store id, and a cart line's key: its stock location, the SKU or
# "<sku>@<store_id>" for a line to collect at a store.
STORE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
LINE_KEY_PATTERN = (
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(@[A-Za-z0-9][A-Za-z0-9_-]{0,63})?$"
)


class LineKeyField(forms.CharField):
    """A product line of the cart (``CartLine.sku``: its stock location)."""

    default_validators = [
        RegexValidator(LINE_KEY_PATTERN, "That is not a line of your cart.")
    ]

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 129)
        kwargs.setdefault("widget", forms.HiddenInput)
        super().__init__(**kwargs)


class SkuForm(forms.Form):
    sku = SkuField()


class LineForm(forms.Form):
    sku = LineKeyField()


class AddToCartForm(forms.Form):
    """A SKU and how many; with ``store_id``, to collect at that store
    (its stock and price), else delivered."""

    sku = SkuField()
    quantity = _quantity(1)
    store_id = forms.CharField(
        required=False,
        max_length=64,
        widget=forms.HiddenInput,
        validators=[RegexValidator(STORE_PATTERN, "That store does not exist.")],
    )

    def clean_store_id(self) -> str | None:
        return self.cleaned_data["store_id"] or None


class SetQuantityForm(forms.Form):
    """A line's new quantity; 0 removes it."""

    sku = LineKeyField()
    quantity = _quantity(0)


class TicketRemoveForm(forms.Form):
    """Seats of one performance to take out of the cart; none means all."""

    session = forms.CharField(
        max_length=24,
        widget=forms.HiddenInput,
        validators=[RegexValidator(SESSION_ID_PATTERN, "That performance is unknown.")],
    )
    seat = SeatListField(required=False)


def _digits(value: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also says yes to "²" or "٣",
    which ``int`` then refuses or a card network never sees."""
    return value.isascii() and value.isdigit()


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _auto(token: str) -> forms.TextInput:
    """A text input the browser may fill in (``autocomplete`` token)."""
    return forms.TextInput(attrs={"autocomplete": token})


ADDRESS_FIELDS = ("name", "line1", "line2", "city", "postcode", "country")
CARD_FIELDS = ("card_number", "card_expiry", "card_cvc")


class CheckoutForm(forms.Form):
    """Contact, delivery address (only when the cart has goods to deliver:
    ``needs_address``) and card."""

    cart = forms.CharField(
        widget=forms.HiddenInput,
        max_length=32,
        validators=[RegexValidator(CART_ID_PATTERN, "That cart is not yours.")],
    )
    email = forms.EmailField(
        max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    name = forms.CharField(
        label="Full name", max_length=100, widget=_auto("shipping name")
    )
    line1 = forms.CharField(
        label="Address", max_length=120, widget=_auto("shipping address-line1")
    )
    line2 = forms.CharField(
        label="Address line 2",
        max_length=120,
        required=False,
        widget=_auto("shipping address-line2"),
    )
    city = forms.CharField(
        label="Town or city", max_length=80, widget=_auto("shipping address-level2")
    )
    postcode = forms.CharField(
        label="Postcode", max_length=16, widget=_auto("shipping postal-code")
    )
    country = forms.ChoiceField(
        choices=COUNTRIES,
        initial="GB",
        widget=forms.Select(attrs={"autocomplete": "shipping country"}),
    )
    card_number = forms.CharField(
        label="Card number",
        max_length=23,
        widget=CardInput(attrs={"autocomplete": "cc-number", "inputmode": "numeric"}),
    )
    card_expiry = forms.CharField(
        label="Expiry (MM/YY)",
        max_length=5,
        widget=forms.TextInput(
            attrs={"autocomplete": "cc-exp", "placeholder": "MM/YY"}
        ),
    )
    card_cvc = forms.CharField(
        label="Security code",
        max_length=4,
        widget=CardInput(attrs={"autocomplete": "cc-csc", "inputmode": "numeric"}),
    )

    def __init__(self, *args, needs_address: bool | None = True, **kwargs):
        """``needs_address``: True (goods to deliver), False (tickets only:
        no address fields), None (a post: the address as given, whole or
        not at all; the checkout refuses goods without one)."""
        super().__init__(*args, **kwargs)
        self.needs_address = needs_address
        if needs_address is False:
            for name in ADDRESS_FIELDS:
                del self.fields[name]
        elif needs_address is None:
            for name in ADDRESS_FIELDS:
                self.fields[name].required = False

    def clean(self):
        data = super().clean()
        if self.needs_address is None and self._address_given(data):
            for name in ADDRESS_FIELDS:
                if name != "line2" and not data.get(name):
                    self.add_error(name, "This field is required.")
        self._clean_postcode(data)
        return data

    def _clean_postcode(self, data) -> None:
        """The postcode as its country writes it (django-localflavor's field
        of that country): checked, and written in its usual form."""
        field = POSTCODES.get(data.get("country"))
        if field is None or not data.get("postcode"):
            return
        try:
            data["postcode"] = field().clean(data["postcode"])
        except forms.ValidationError as exc:
            country = dict(COUNTRIES)[data["country"]]
            said = f"That is not a postcode of {country}. {exc.messages[0]}"
            self.add_error("postcode", said)

    def _address_given(self, data) -> bool:
        return any(data.get(name) for name in ADDRESS_FIELDS if name != "country")

    def clean_card_number(self) -> str:
        digits = "".join(self.cleaned_data["card_number"].split()).replace("-", "")
        if not _digits(digits) or not 12 <= len(digits) <= 19 or not _luhn_ok(digits):
            raise forms.ValidationError("That card number is not valid.")
        return digits

    def clean_card_expiry(self) -> tuple[int, int]:
        value = self.cleaned_data["card_expiry"].strip()
        month, sep, year = value.partition("/")
        if not (sep and _digits(month) and _digits(year) and len(year) == 2):
            raise forms.ValidationError("Please enter the expiry as MM/YY.")
        month, year = int(month), 2000 + int(year)
        if not 1 <= month <= 12:
            raise forms.ValidationError("Please enter the expiry as MM/YY.")
        today = date.today()
        if (year, month) < (today.year, today.month):
            raise forms.ValidationError("That card has expired.")
        return month, year

    def clean_card_cvc(self) -> str:
        value = self.cleaned_data["card_cvc"].strip()
        if not (_digits(value) and len(value) in (3, 4)):
            raise forms.ValidationError("Please enter the 3 or 4 digits on the card.")
        return value

    def card(self) -> Card:
        month, year = self.cleaned_data["card_expiry"]
        return Card(
            number=self.cleaned_data["card_number"],
            exp_month=month,
            exp_year=year,
            cvc=self.cleaned_data["card_cvc"],
        )

    def shipping(self) -> dict | None:
        """The delivery address, or None when none was asked or given."""
        if self.needs_address is False or not self._address_given(self.cleaned_data):
            return None
        return {key: self.cleaned_data[key] for key in ADDRESS_FIELDS}
