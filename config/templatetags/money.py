"""The site's one money filter: ``{{ price|money }}`` writes £1,234.50.

``{{ price|money:"whole" }}`` drops the pence of whole pounds (£35, but
£20.50): the box office reads seat prices aloud that way. None writes
nothing.
"""

from decimal import Decimal

from django import template

register = template.Library()

WHOLE = "whole"


def format_money(amount: Decimal | None, style: str = "") -> str:
    if amount is None:
        return ""
    if style == WHOLE and amount == amount.to_integral_value():
        return f"£{amount:,.0f}"
    return f"£{amount:,.2f}"


@register.filter
def money(amount: Decimal | None, style: str = "") -> str:
    return format_money(amount, style)
