"""The browse vocabulary shared by the summary builder and the browse query.

A facet value is stored in a summary as one string token ``"<facet>=<value>"``
(``"brand=Calvin Klein"``, ``"size=6"``, ``"price=25-50"``). One multikey
index over such an array serves an equality or ``$in`` on any facet, a
``$group`` on the unwound array counts every facet's values at once, and a
value is never interpreted by the database: whatever a shopper sends, it can
only ever be compared for equality with a token the catalog wrote itself.
"""

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal

# Facets of the item (one value per item) and of its variants (any variant).
ITEM_FACETS = ("brand", "price")
VARIANT_FACETS = ("size", "colour")
# Order of the sidebar.
FACETS = ("brand", "size", "colour", "price")
FACET_LABELS = {"brand": "Brand", "size": "Size", "colour": "Colour", "price": "Price"}

SEPARATOR = "="


@dataclass(frozen=True)
class PriceBand:
    key: str
    label: str
    low_cents: int
    high_cents: int | None  # exclusive; None: no upper bound


PRICE_BANDS = (
    PriceBand("0-25", "Under £25", 0, 2500),
    PriceBand("25-50", "£25 to £50", 2500, 5000),
    PriceBand("50-100", "£50 to £100", 5000, 10000),
    PriceBand("100-200", "£100 to £200", 10000, 20000),
    PriceBand("200-", "£200 and over", 20000, None),
)
PRICE_BAND_KEYS = tuple(band.key for band in PRICE_BANDS)


def price_band(cents: int) -> PriceBand:
    for band in PRICE_BANDS:
        if band.high_cents is None or cents < band.high_cents:
            return band
    raise AssertionError("the last band is unbounded")


def token(facet: str, value: str) -> str:
    return f"{facet}{SEPARATOR}{value}"


def split_token(text: str) -> tuple[str, str]:
    facet, _, value = text.partition(SEPARATOR)
    return facet, value


def cents(amount: Decimal) -> int:
    """Exact integer cents of a money amount (a sort key, never shown)."""
    return int((amount * 100).to_integral_value())


# Sizes sort the way a shopper reads them, not alphabetically.
_LETTER_SIZES = ("XXS", "XS", "S", "M", "L", "XL", "XXL", "3XL")
_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)")


def value_sort_key(facet: str, value: str) -> tuple:
    if facet == "price":
        return (PRICE_BAND_KEYS.index(value) if value in PRICE_BAND_KEYS else 99,)
    if facet == "size":
        if value in _LETTER_SIZES:
            return (0, _LETTER_SIZES.index(value), value)
        number = _NUMBER.match(value)
        if number:
            return (1, float(number.group(1)), value)
        return (2, 0, value.lower())
    return (value.lower(),)


def value_label(facet: str, value: str) -> str:
    if facet == "price":
        for band in PRICE_BANDS:
            if band.key == value:
                return band.label
    return value


# A keyword is a run of letters and digits, keeping inner punctuation that
# belongs to it ("t-shirt", "2.0", "o'neill") and a trailing "+" or "#".
_KEYWORD = re.compile(r"[^\W_]+(?:[.'&-][^\W_]+)*[+#]*")


def keywords_of(text: str) -> list[str]:
    """Lower-cased, accent-free search tokens of ``text``, in order, deduplicated."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return list(dict.fromkeys(_KEYWORD.findall(folded)))
