from django import template

from shop.documents import order_state_label

register = template.Library()


@register.filter
def pounds(pence) -> str:
    """Pence (the counters' unit) as £1,234.56."""
    try:
        value = int(pence)
    except (TypeError, ValueError):
        return ""
    sign = "-" if value < 0 else ""
    return f"{sign}£{abs(value) / 100:,.2f}"


@register.filter
def get(mapping, key):
    """``mapping[key]``, or "" when absent (a zone's colour on the seat map)."""
    try:
        return mapping.get(key, "")
    except AttributeError:
        return ""


register.filter("state_label", order_state_label)


@register.filter
def seats_in(row) -> bool:
    """Whether a row of the staff seat map has a seat (a walkway has none,
    and is hidden from screen readers: a row must have cells)."""
    return any(seat.state != "gap" for seat in row)
