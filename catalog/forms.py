"""Where request data becomes typed values (and typed values become URLs again).

Only the parameters named here are read; anything else in a query string
(``brand[$ne]=x``, ``brand__ne=``, ``where=...``) is ignored, and every value
reaches a selector as a plain string or number, never as a query fragment.
"""

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import quote, urlencode

from django import forms
from django.utils.http import url_has_allowed_host_and_scheme

from catalog import facets
from catalog.selectors.browse import (
    DEFAULT_SORT,
    MAX_PER_PAGE,
    PER_PAGE,
    SORTS,
    BrowseQuery,
    Cursor,
)

ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NUMBER = re.compile(r"^-?\d{1,16}(\.\d{1,17})?(e-?\d{1,3})?$")
# Where a page position of each sort can be: the pages write a price in
# pence and a time in ms (so whole numbers, a time within the calendar, a
# price a float holds exactly), a rating or a relevance score (small). A
# value outside could only be hand-made, and would overflow the query.
WHOLE_SORTS = ("price_asc", "price_desc", "newest")
CURSOR_RANGE = {
    "price_asc": (-(2**53), 2**53),
    "price_desc": (-(2**53), 2**53),
    "newest": (0, 253_402_300_799_999),  # 1970 to the end of 9999, in ms
}
OTHER_RANGE = (-1e9, 1e9)
MAX_VALUES = 20
MAX_TEXT = 80


class StringListField(forms.Field):
    """Several values of one query parameter (``?brand=A&brand=B``)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value):
        if not value:
            return ()
        if isinstance(value, str):
            value = [value]
        if len(value) > MAX_VALUES:
            raise forms.ValidationError(f"At most {MAX_VALUES} values.")
        cleaned = []
        for item in value:
            if not isinstance(item, str):
                raise forms.ValidationError("Not a valid value.")
            item = item.strip()
            if not item or len(item) > MAX_TEXT or not item.isprintable():
                raise forms.ValidationError("Not a valid value.")
            cleaned.append(item)
        return tuple(dict.fromkeys(cleaned))


def _clean_path(path: str) -> list[str] | None:
    """Segments of a /c/ path, or None when it cannot be a category."""
    parts = [p for p in path.strip("/").split("/")] if path.strip("/") else []
    if len(parts) > 6 or any(
        not p.strip() or len(p) > MAX_TEXT or not p.isprintable() for p in parts
    ):
        return None
    return parts


class BrowseForm(forms.Form):
    q = forms.CharField(required=False, max_length=100, strip=True)
    sort = forms.ChoiceField(required=False, choices=list(SORTS.items()))
    per_page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PER_PAGE)
    min_price = forms.DecimalField(
        required=False, min_value=0, max_value=1_000_000, decimal_places=2
    )
    max_price = forms.DecimalField(
        required=False, min_value=0, max_value=1_000_000, decimal_places=2
    )
    # The keyset cursor: the last sort value and _id of the previous page.
    at = forms.CharField(required=False, max_length=40)
    after = forms.CharField(required=False, max_length=64)

    def __init__(self, data=None, *, path: str = ""):
        super().__init__(data)
        for name in facets.FACETS:
            self.fields[name] = StringListField(required=False)
        self.segments = _clean_path(path)
        self._query: BrowseQuery | None = None

    @property
    def path_ok(self) -> bool:
        return self.segments is not None

    def clean_at(self):
        at = self.cleaned_data["at"]
        if at and not NUMBER.match(at):
            raise forms.ValidationError("Not a valid page position.")
        return at

    def clean_after(self):
        after = self.cleaned_data["after"]
        if after and not ID.match(after):
            raise forms.ValidationError("Not a valid page position.")
        return after

    def clean(self):
        data = super().clean()
        low, high = data.get("min_price"), data.get("max_price")
        if low is not None and high is not None and low > high:
            self.add_error("max_price", "The maximum is below the minimum.")
        prices = data.get("price") or ()
        if any(value not in facets.PRICE_BAND_KEYS for value in prices):
            self.add_error("price", "Not a price band.")
        if bool(data.get("at")) != bool(data.get("after")):
            self.add_error("after", "Not a valid page position.")
        elif data.get("at") and not self._position_fits(
            float(data["at"]), data.get("sort") or DEFAULT_SORT
        ):
            self.add_error("at", "Not a valid page position.")
        return data

    @staticmethod
    def _position_fits(value: float, sort: str) -> bool:
        low, high = CURSOR_RANGE.get(sort, OTHER_RANGE)
        if not (math.isfinite(value) and low <= value <= high):
            return False
        return sort not in WHOLE_SORTS or value == int(value)

    # --- typed values out --------------------------------------------------

    def _cursor(self, sort: str) -> Cursor | None:
        at, after = self.cleaned_data.get("at"), self.cleaned_data.get("after")
        if not at or not after or "after" in self.errors or "at" in self.errors:
            return None
        value = float(at)
        return Cursor(value=int(value) if sort in WHOLE_SORTS else value, item_id=after)

    def browse_query(self) -> BrowseQuery:
        """The query from whatever was valid (invalid fields are dropped)."""
        if self._query is None:
            self._query = self._build_query()
        return self._query

    def _build_query(self) -> BrowseQuery:
        self.errors  # noqa: B018 (cleans the data once, if not yet done)
        data = self.cleaned_data
        segments = self.segments or []
        sort = data.get("sort") or DEFAULT_SORT
        low, high = data.get("min_price"), data.get("max_price")
        return BrowseQuery(
            department=segments[0] if segments else None,
            category="/".join(segments) if len(segments) > 1 else None,
            text=data.get("q") or "",
            selected={name: data[name] for name in facets.FACETS if data.get(name)},
            min_cents=facets.cents(low) if low is not None else None,
            max_cents=facets.cents(high) if high is not None else None,
            sort=sort,
            per_page=data.get("per_page") or PER_PAGE,
            after=self._cursor(sort),
        )

    # --- and back into URLs ------------------------------------------------

    @staticmethod
    def base_url(segments: list[str]) -> str:
        if not segments:
            return "/"
        return "/c/" + "/".join(quote(s, safe="") for s in segments) + "/"

    def params(self, **changes) -> list[tuple[str, str]]:
        """The current valid parameters, with ``changes`` applied, in order."""
        query = self.browse_query()
        values = {
            "q": query.text,
            "sort": "" if query.sort == DEFAULT_SORT else query.sort,
            "per_page": "" if query.per_page == PER_PAGE else str(query.per_page),
            "min_price": _pounds(query.min_cents),
            "max_price": _pounds(query.max_cents),
            **{name: list(query.selected.get(name, ())) for name in facets.FACETS},
        }
        values.update(changes)
        pairs = []
        for name, value in values.items():
            for one in value if isinstance(value, list | tuple) else [value]:
                if one not in ("", None):
                    pairs.append((name, str(one)))
        return pairs

    def url(self, *, segments: list[str] | None = None, **changes) -> str:
        target = self.base_url(self.segments if segments is None else segments)
        pairs = self.params(**changes)
        return target + ("?" + urlencode(pairs) if pairs else "")

    def next_url(self, cursor: Cursor) -> str:
        return self.url(at=repr(cursor.value), after=cursor.item_id)

    def category_url(self, path: str) -> str:
        return self.url(segments=path.split("/"))

    def chips(self) -> list["Chip"]:
        """One removable chip per active filter."""
        query = self.browse_query()
        chips = []
        if query.text:
            chips.append(Chip(f"“{query.text}”", self.url(q="")))
        for name in facets.FACETS:
            chosen = list(query.selected.get(name, ()))
            for value in chosen:
                rest = [v for v in chosen if v != value]
                label = (
                    f"{facets.FACET_LABELS[name]}: {facets.value_label(name, value)}"
                )
                chips.append(Chip(label, self.url(**{name: rest})))
        if query.min_cents is not None or query.max_cents is not None:
            low = f"£{_pounds(query.min_cents)}" if query.min_cents is not None else ""
            high = f"£{_pounds(query.max_cents)}" if query.max_cents is not None else ""
            label = f"Price: {low or '£0'} – {high or 'any'}"
            chips.append(Chip(label, self.url(min_price="", max_price="")))
        return chips

    @property
    def price_values(self) -> dict[str, str]:
        """The price bounds in force, as the inputs show them."""
        query = self.browse_query()
        return {"min": _pounds(query.min_cents), "max": _pounds(query.max_cents)}

    def clear_url(self) -> str:
        return self.base_url(self.segments or [])


@dataclass(frozen=True)
class Chip:
    label: str
    remove_url: str


def _pounds(cents: int | None) -> str:
    if cents is None:
        return ""
    return str((Decimal(cents) / 100).quantize(Decimal("0.01")))


class ItemForm(forms.Form):
    sku = forms.CharField(required=False, max_length=64)

    def clean_sku(self):
        sku = self.cleaned_data["sku"]
        if sku and not ID.match(sku):
            raise forms.ValidationError("Not a valid product variant.")
        return sku or None


def safe_next(request, value: str | None, default: str = "/") -> str:
    """A local URL to return to; anything else becomes ``default``."""
    if value and url_has_allowed_host_and_scheme(
        value, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return value
    return default


class StoreChoiceForm(forms.Form):
    """The store a shopper shops at ("" for online)."""

    store_id = forms.CharField(required=False, max_length=64)
    next = forms.CharField(required=False, max_length=2000)

    def clean_store_id(self):
        store_id = self.cleaned_data["store_id"]
        if store_id and not ID.match(store_id):
            raise forms.ValidationError("Not a valid store.")
        return store_id or None


class LocationForm(forms.Form):
    """Where the shopper is: a typed zip or city, or the browser's position."""

    place = forms.CharField(required=False, max_length=MAX_TEXT, strip=True)
    lat = forms.FloatField(required=False, min_value=-90, max_value=90)
    lng = forms.FloatField(required=False, min_value=-180, max_value=180)
    clear = forms.BooleanField(required=False)
    next = forms.CharField(required=False, max_length=2000)

    def clean(self):
        data = super().clean()
        if self.errors or data.get("clear"):
            return data
        has_point = data.get("lat") is not None and data.get("lng") is not None
        if (data.get("lat") is None) != (data.get("lng") is None):
            raise forms.ValidationError("A position needs both latitude and longitude.")
        if not has_point and not data.get("place"):
            raise forms.ValidationError("Type a postcode or a town.")
        return data
