import uuid
from datetime import date, datetime

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from booking.checks import MAX_SEATS_PER_REQUEST
from booking.forms import SeatListField
from shop.documents import ORDER_STATES, order_state_label

# The dates a staff filter or a performance may name: wide enough for any
# shop's records, narrow enough that a day's bounds and the order search's
# windows (a day either side) never leave the calendar's range, which
# would end the request with an OverflowError instead of a field error.
EARLIEST, LATEST = date(2000, 1, 1), date(2099, 12, 31)
_OUT_OF_RANGE = f"Choose a date between {EARLIEST:%Y} and {LATEST:%Y}."


def _in_range() -> list:
    return [
        MinValueValidator(EARLIEST, message=_OUT_OF_RANGE),
        MaxValueValidator(LATEST, message=_OUT_OF_RANGE),
    ]


def _date(label: str) -> forms.DateField:
    return forms.DateField(
        required=False,
        label=label,
        widget=forms.DateInput(attrs={"type": "date"}),
        validators=_in_range(),
    )


class _InRangeDateTime(forms.DateTimeField):
    """A date and time whose day is within EARLIEST..LATEST."""

    def validate(self, value):
        super().validate(value)
        if value and not EARLIEST <= value.date() <= LATEST:
            raise forms.ValidationError(_OUT_OF_RANGE)


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=500,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Give a reason: it is kept in the audit trail."},
    )


class SeatsForm(forms.Form):
    """Seats ticked on the staff seat map (``seat``: "row-col" keys, parsed
    by booking's ``SeatListField``, up to a request's limit, refused whole
    beyond it) and, to block them, a reason."""

    seat = SeatListField(
        required=False,
        max_seats=MAX_SEATS_PER_REQUEST,
        error_messages={"invalid": "That is not a seat of this map."},
    )
    reason = forms.CharField(required=False, max_length=200, strip=True)

    def __init__(self, data=None, *, need_reason: bool = False):
        super().__init__(data)
        self.need_reason = need_reason

    def clean(self):
        data = super().clean()
        if "seat" in self.errors:
            return data
        if not data.get("seat"):
            raise forms.ValidationError("Tick the seats first.")
        if self.need_reason and not data.get("reason"):
            raise forms.ValidationError("Give a reason to block seats.")
        data["seats"] = sorted(data["seat"])
        return data


class SaleForm(SeatsForm):
    """A box-office sale: the blocked seats ticked on the staff seat map and
    the customer they are sold to (the tickets are emailed to them)."""

    name = forms.CharField(
        max_length=150,
        strip=True,
        label="Customer's name",
        error_messages={"required": "Give the customer's name."},
    )
    email = forms.EmailField(
        max_length=254,
        label="Customer's email",
        error_messages={
            "required": "Give the customer's email: the tickets are sent there.",
            "invalid": "That email address is not valid: the tickets are sent there.",
        },
    )
    phone = forms.CharField(
        required=False, max_length=40, strip=True, label="Phone (optional)"
    )


class OrderFilterForm(forms.Form):
    q = forms.CharField(
        required=False, max_length=120, label="Order number, email or ticket code"
    )
    state = forms.ChoiceField(
        required=False,
        choices=[("", "Any state")] + [(s, order_state_label(s)) for s in ORDER_STATES],
    )
    kind = forms.ChoiceField(
        required=False,
        label="Holding",
        choices=[("", "Tickets or goods"), ("tickets", "Tickets"), ("goods", "Goods")],
    )
    since = _date("From")
    until = _date("To")
    after = forms.RegexField(
        required=False, regex=r"^[0-9T:+.\- ]+\|[0-9a-f]{24}$", widget=forms.HiddenInput
    )

    def clean_after(self):
        value = self.cleaned_data.get("after") or ""
        if value:
            try:
                at = datetime.fromisoformat(value.partition("|")[0])
            except ValueError:
                at = None
            # The pages write the cursor with its offset; one without can
            # only be hand-made, and cannot be compared with the orders'.
            if at is None or at.tzinfo is None:
                raise forms.ValidationError("That page link is broken.")
            # Like the dates, inside the range whose windows stay in the
            # calendar (a cursor is only ever written by a page).
            if not EARLIEST <= at.date() <= LATEST:
                raise forms.ValidationError("That page link is broken.")
        return value

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError("The start date is after the end date.")
        return data


# --- Box office -----------------------------------------------------------------


class PerformanceFilterForm(forms.Form):
    when = forms.ChoiceField(
        required=False,
        choices=[("upcoming", "Upcoming"), ("past", "Past")],
        label="Performances",
    )
    show = forms.CharField(required=False, max_length=160, label="Show")
    theater = forms.ChoiceField(
        required=False,
        label="Theater",
        error_messages={"invalid_choice": "There is no such theater: choose one."},
    )
    day = _date("Date")

    def __init__(self, *args, theaters=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["theater"].choices = [("", "Any theater")] + [
            (t.theater_id, t.name) for t in theaters
        ]


class TicketCodeForm(forms.Form):
    code = forms.CharField(
        max_length=40,
        strip=True,
        label="Ticket code",
        error_messages={"required": "Type or scan a ticket code."},
        widget=forms.TextInput(
            attrs={
                "autocomplete": "off",
                "autocapitalize": "characters",
                "spellcheck": "false",
                "autofocus": True,
                "enterkeyhint": "go",
            }
        ),
    )


class UndoAdmissionForm(forms.Form):
    code = forms.CharField(max_length=40, strip=True)
    reason = forms.CharField(max_length=500, required=False, strip=True)


# --- Stock ------------------------------------------------------------------------


class StockSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=120, label="Item, title or SKU")
    store = forms.ChoiceField(
        required=False,
        label="Store",
        error_messages={"invalid_choice": "There is no such store: choose one."},
    )
    # The page: the SKU it starts after (the "Next SKUs" link's).
    after = forms.CharField(required=False, max_length=200, widget=forms.HiddenInput)

    def __init__(self, *args, stores=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["store"].choices = [("", "Online only")] + [
            (s.store_id, f"{s.name} ({s.city})" if s.city else s.name) for s in stores
        ]


_OUT_OF_DATE = "This form is out of date: reload the page and send it again."


def _new_key() -> str:
    return uuid.uuid4().hex


class _SentOnce(forms.Form):
    """A form whose action must not happen twice when it is sent twice (a
    double click, a retry, the Back button): each page it is drawn on
    carries a new ``key``, which the service records with the action (and
    whose form the service checks: catalog/services/stock.py ``_entry_id``)."""

    key = forms.CharField(
        widget=forms.HiddenInput,
        initial=_new_key,
        max_length=64,
        error_messages={"required": _OUT_OF_DATE, "max_length": _OUT_OF_DATE},
    )


class ScheduleForm(_SentOnce):
    """A performance: theater, show, start, end, and one price per zone of the
    chosen theater (fields ``price_<zone>``, added for that theater); sent
    twice, it schedules once (its ``key``)."""

    theater = forms.ChoiceField(label="Theater")
    show = forms.CharField(max_length=160, label="Show")
    start = _InRangeDateTime(
        label="Starts", widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    end = _InRangeDateTime(
        label="Ends", widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )

    def __init__(self, *args, theaters=(), chosen=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["theater"].choices = [(t.theater_id, t.name) for t in theaters]
        self.zones = chosen.zones if chosen else ()
        for code, name in self.zones:
            self.fields[f"price_{code}"] = forms.DecimalField(
                label=f"Price, {name} (£)",
                min_value=0,
                max_digits=8,
                decimal_places=2,
            )

    def clean(self):
        data = super().clean()
        start, end = data.get("start"), data.get("end")
        if start and end and end <= start:
            self.add_error("end", "A performance must end after it starts.")
        return data

    def prices(self) -> dict:
        return {code: self.cleaned_data[f"price_{code}"] for code, _ in self.zones}


class ReceiveForm(_SentOnce):
    quantity = forms.IntegerField(
        min_value=1, max_value=1_000_000, label="Units received"
    )
    note = forms.CharField(
        required=False, max_length=200, label="Note (delivery, supplier)"
    )


class AdjustForm(_SentOnce):
    kind = forms.ChoiceField(
        label="Reason",
        choices=[
            ("damaged", "Damaged (units leave)"),
            ("correction", "Count correction"),
        ],
    )
    delta = forms.IntegerField(
        label="Change in units (negative: fewer)",
        min_value=-1_000_000,
        max_value=1_000_000,
    )
    note = forms.CharField(
        max_length=200,
        label="Details (kept in the audit trail)",
        error_messages={
            "required": "Say what happened: it is kept in the audit trail."
        },
    )

    def clean(self):
        data = super().clean()
        delta, kind = data.get("delta"), data.get("kind")
        if delta == 0:
            self.add_error("delta", "An adjustment changes at least one unit.")
        elif kind == "damaged" and delta is not None and delta > 0:
            self.add_error(
                "delta", "Damaged units leave stock: give a negative number."
            )
        return data


class ThresholdForm(forms.Form):
    threshold = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=1_000_000,
        label="Low-stock threshold (empty: the default)",
    )


class StoreStockForm(forms.Form):
    store = forms.ChoiceField(label="Store")
    quantity = forms.IntegerField(
        min_value=0, max_value=1_000_000, label="Units in the store"
    )

    def __init__(self, *args, stores=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["store"].choices = [
            (s.store_id, f"{s.name} ({s.city})" if s.city else s.name) for s in stores
        ]


# --- Staff (the team) -------------------------------------------------------------

_NO_ROLE = "There is no such role: choose Box office, Shop manager or Administrator."


def _role_field(label: str = "Role") -> forms.ChoiceField:
    from staff.roles import ROLE_SLUGS

    return forms.ChoiceField(
        label=label,
        choices=list(ROLE_SLUGS.items()),
        error_messages={"required": "Choose a role.", "invalid_choice": _NO_ROLE},
    )


class AddMemberForm(forms.Form):
    """A new member of the staff: an email and a role."""

    email = forms.EmailField(
        max_length=150,
        label="Email",
        error_messages={
            "required": "Give the new member's email: the invitation goes there.",
            "invalid": "That is not an email address.",
        },
        widget=forms.EmailInput(attrs={"autocomplete": "off"}),
    )
    role = _role_field()
    reason = forms.CharField(
        required=False, max_length=500, strip=True, label="Note (optional)"
    )

    def clean_email(self) -> str:
        return self.cleaned_data["email"].strip().lower()


class RoleForm(forms.Form):
    """A member's new role; ``reason`` is kept in the audit trail."""

    role = _role_field("New role")
    reason = forms.CharField(
        required=False, max_length=500, strip=True, label="Note (optional)"
    )
