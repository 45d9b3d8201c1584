"""A ticket's QR code, drawn inline as SVG (no request leaves the page)."""

from django import template
from django.utils.safestring import mark_safe

from shop.printing import qr_svg

register = template.Library()


@register.simple_tag
def ticket_qr(code: str) -> str:
    # segno's markup, of a code from the fixed ticket alphabet: nothing of
    # the request reaches it.
    return mark_safe(qr_svg(str(code)))  # noqa: S308
