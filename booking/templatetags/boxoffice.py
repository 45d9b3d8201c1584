from decimal import Decimal

from django import template

from booking.values import format_money

register = template.Library()


@register.filter
def money(amount: Decimal | None) -> str:
    """£35, £20.50: how the box office writes a price."""
    return "" if amount is None else format_money(amount)
