"""The box office's presentation: a seat's words for screen readers, and the
seat grid and list drawn in Python.

Prices are written by the site's money filter (``config.templatetags.money``)
in its "whole" style: £35, £20.50.
"""

from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe

from booking.values import MapCell, SeatMap
from config.templatetags.money import WHOLE, format_money

register = template.Library()

STATE_WORDS = {"free": "available", "taken": "taken", "mine": "held by you"}
FLAG_WORDS = {
    "wheelchair": "wheelchair space",
    "companion": "companion seat",
    "restricted": "restricted view",
}


def flag_words(cell: MapCell) -> tuple[str, ...]:
    return tuple(FLAG_WORDS[f] for f in cell.flags)


@register.filter
def accessible_name(cell: MapCell) -> str:
    """ "Row F, seat 12, Stalls, £35, available" (flags before the state)."""
    if not cell.is_seat:
        return ""
    parts = [cell.label, cell.zone_name, format_money(cell.price, WHOLE)]
    parts += flag_words(cell)
    parts.append(STATE_WORDS[cell.state])
    return ", ".join(p for p in parts if p)


# The seat grid and the list of free seats are drawn here rather than by
# template loops: a 30 x 30 hall is 900 buttons of a dozen attributes each,
# redrawn after every click and poll, and the template engine spent most of
# a request's CPU on them. Every value is escaped as the template escapes it
# (``django.utils.html.escape`` is this ``escape``, marked safe); the markup
# is the same.
_REDRAW = (
    'hx-target="#seat-map" hx-swap="outerHTML" hx-sync="closest #seat-map:replace"'
)


def _seat(cell: MapCell, can_hold: bool, can_release: bool, release_url: str) -> str:
    if not cell.is_seat:
        return '<span class="cell gap" role="gridcell"></span>'
    classes = " ".join(
        ["seat", f"seat-{cell.state}", *(f"seat-{f}" for f in cell.flags)]
    )
    key = escape(cell.key)
    if cell.state == "free" and can_hold:
        action = f'type="submit" name="seat" value="{key}"'
    elif cell.state == "mine" and can_release:
        url = escape(release_url)
        action = (
            f'type="submit" name="seat" value="{key}" formaction="{url}" '
            f'hx-post="{url}" {_REDRAW}'
        )
    else:
        action = 'type="button" aria-disabled="true"'
    return (
        f'<span class="cell" role="gridcell"><button id="{cell.dom_id}" '
        f'class="{escape(classes)}" '
        f'style="--zone: {escape(cell.colour)}; --zone-ink: {cell.ink}" '
        f'data-row="{cell.row}" data-col="{cell.col}" '
        f'aria-label="{escape(accessible_name(cell))}" {action}>'
        f"{escape(str(cell.number))}</button></span>"
    )


@register.simple_tag
def seat_rows(
    seat_map: SeatMap, can_hold: bool, can_release: bool, release_url: str | None
) -> SafeString:
    """Every row of the seat grid, its seats' buttons and its labels."""
    rows = []
    for row in seat_map.rows:
        label = escape(row.label)
        seats = "".join(
            _seat(cell, can_hold, can_release, release_url or "") for cell in row.cells
        )
        if not any(cell.is_seat for cell in row.cells):
            # A walkway: no seat to name, so nothing for a screen reader (a
            # row header with no text is an empty header).
            rows.append(f'<div class="seat-row" aria-hidden="true">{seats}</div>')
            continue
        rows.append(
            '<div class="seat-row" role="row">\n'
            f'  <span class="row-label" role="rowheader">{label}</span>\n'
            f"  {seats}\n"
            f'  <span class="row-label" aria-hidden="true">{label}</span>\n'
            "</div>"
        )
    return mark_safe("\n".join(rows))


@register.simple_tag
def free_seat_items(cells: list[MapCell], can_hold: bool) -> SafeString:
    """The list view's items: a button to hold each free seat (or its name
    when holding is not possible), with its flags in words."""
    items = []
    for cell in cells:
        label = escape(cell.label)
        if can_hold:
            # An id, so htmx gives focus back to it when the map is redrawn.
            label = (
                f'<button type="submit" id="list-{cell.dom_id}" class="link" '
                f'name="seat" value="{escape(cell.key)}" '
                f'aria-label="Hold {escape(accessible_name(cell))}">{label}</button>'
            )
        flags = "".join(
            f'<span class="flag">, {escape(words)}</span>' for words in flag_words(cell)
        )
        items.append(f"<li>{label}{flags}</li>")
    return mark_safe("\n".join(items))
