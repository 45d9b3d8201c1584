"""Presentation helpers of the catalog pages: stars, thumbnails, URLs (money is
the site's one filter, ``config.templatetags.money``)."""

import zlib

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def stars(rating: float | None) -> str:
    if rating is None:
        return ""
    full = int(round(rating))
    return "★" * full + "☆" * (5 - full)


SWATCHES = {
    "black": "#1d1b22",
    "white": "#f7f5f0",
    "navy": "#1f2a44",
    "grey": "#8a8d91",
    "red": "#b3261e",
    "tan": "#c69c6d",
    "green": "#2f6b45",
    "blue": "#2f5fa7",
    "burgundy": "#6d1a36",
    "cream": "#efe6cf",
    "pink": "#e8a3b8",
    "olive": "#6b6b2f",
}


@register.filter
def swatch(colour: str | None) -> str:
    return SWATCHES.get((colour or "").lower(), "#cfcbd6")


@register.simple_tag
def thumb(category: str, title: str, size: int = 240):
    """An inline SVG placeholder, its colour fixed by the category.

    No external image: the hue comes from the category path, the initials
    from the title, so a grid reads as a catalogue even without photos.
    """
    hue = zlib.crc32(category.encode()) % 360
    department_hue = zlib.crc32(category.split("/")[0].encode()) % 360
    initials = "".join(word[0] for word in title.split()[:2]).upper()
    return format_html(
        '<svg class="thumb" viewBox="0 0 240 240" width="{size}" height="{size}" '
        'role="img" aria-label="{title}">'
        '<defs><linearGradient id="g{hue}" x1="0" y1="0" x2="1" y2="1">'
        '<stop offset="0" stop-color="hsl({hue} 55% 88%)"/>'
        '<stop offset="1" stop-color="hsl({dhue} 45% 72%)"/></linearGradient></defs>'
        '<rect width="240" height="240" fill="url(#g{hue})"/>'
        '<circle cx="120" cy="112" r="58" fill="hsl({hue} 40% 97% / .55)"/>'
        '<text x="120" y="132" text-anchor="middle" font-size="52" '
        'font-family="Georgia, serif" fill="hsl({hue} 35% 30%)">{initials}</text>'
        '<text x="120" y="214" text-anchor="middle" font-size="15" '
        'font-family="system-ui, sans-serif" fill="hsl({hue} 30% 28%)">{leaf}</text>'
        "</svg>",
        size=size,
        title=title,
        hue=hue,
        dhue=department_hue,
        initials=initials,
        leaf=category.rsplit("/", 1)[-1],
    )


@register.simple_tag
def browse_url(form, path: str | None = None):
    """The current browse URL moved to category ``path`` (filters kept)."""
    return form.category_url(path) if path else form.url()


@register.simple_tag
def next_url(form, cursor):
    return form.next_url(cursor)
