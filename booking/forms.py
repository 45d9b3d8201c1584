"""Request data of the box office pages, parsed into typed values.

Seats travel as "row-column" strings ("4-12"), either as repeated ``seat``
fields (one button per seat) or comma-separated in one field. Everything is
checked here, before any query: only tuples of ints reach the services, so a
crafted parameter (``seat[$ne]=x``, ``seat__ne=``) is just a missing seat.
"""

import re

from django import forms

from booking.checks import MAX_SEATS_PER_HOLD
from booking.values import Seat

# ASCII digits: "\d" would also take other scripts' digits.
_SEAT = re.compile(r"^([0-9]{1,3})-([0-9]{1,3})$")
_ZONE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
SEAT_HELP = 'Seats are given as row and column numbers, like "4-12".'


class SeatListField(forms.Field):
    """Repeated and/or comma-separated "r-c" values -> tuple of (row, col)."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {
        "required": "Choose at least one seat.",
        "invalid": SEAT_HELP,
        "too_many": "Choose at most %(limit)s seats at a time.",
        "duplicate": "The same seat was chosen twice.",
    }

    def __init__(self, *, max_seats: int = MAX_SEATS_PER_HOLD, **kwargs):
        self.max_seats = max_seats
        super().__init__(**kwargs)

    def to_python(self, value) -> tuple[Seat, ...]:
        if value in self.empty_values:
            return ()
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise forms.ValidationError(self.error_messages["invalid"], "invalid")
        parts = [p.strip() for v in value for p in str(v).split(",") if p.strip()]
        # Bound the work before parsing: 500 seats is refused, not parsed.
        if len(parts) > self.max_seats:
            raise forms.ValidationError(
                self.error_messages["too_many"],
                "too_many",
                params={"limit": self.max_seats},
            )
        seats = []
        for part in parts:
            match = _SEAT.match(part)
            if not match:
                raise forms.ValidationError(self.error_messages["invalid"], "invalid")
            seats.append((int(match[1]), int(match[2])))
        if len(set(seats)) != len(seats):
            raise forms.ValidationError(self.error_messages["duplicate"], "duplicate")
        return tuple(seats)

    def validate(self, value):
        if self.required and not value:
            raise forms.ValidationError(self.error_messages["required"], "required")


class SeatsForm(forms.Form):
    """The seats a shopper clicked (hold), 1..10 of them."""

    seat = SeatListField()


class ReleaseSeatsForm(forms.Form):
    """Seats to give back (a click releases one); none means all of them."""

    seat = SeatListField(required=False)


class BestAvailableForm(forms.Form):
    count = forms.IntegerField(
        min_value=1,
        max_value=MAX_SEATS_PER_HOLD,
        error_messages={
            "min_value": f"Choose between 1 and {MAX_SEATS_PER_HOLD} seats.",
            "max_value": f"Choose between 1 and {MAX_SEATS_PER_HOLD} seats.",
            "invalid": f"Choose between 1 and {MAX_SEATS_PER_HOLD} seats.",
            "required": "Choose how many seats you want.",
        },
    )
    zone = forms.RegexField(
        regex=_ZONE,
        max_length=32,
        required=False,
        error_messages={"invalid": "There is no such price zone."},
    )

    def clean_zone(self) -> str | None:
        return self.cleaned_data["zone"] or None


class MapRefreshForm(forms.Form):
    """``since``: the map version the page shows (nothing new -> 204)."""

    since = forms.IntegerField(min_value=0, required=False)
