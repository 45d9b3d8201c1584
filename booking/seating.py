"""Seating arithmetic on a hall's layout and a session's seat states: pure.

Where a seat is on the layout, its label, and which block of seats "best
available" picks. The seat services (``booking.services.seats``) read a
session's states and its hall (``booking.halls``) and hand them here; the
rules of the pick live in ``best_block``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from booking.documents import FREE
from booking.errors import SeatOffMap
from booking.values import Seat, seat_label


def cell_at(layout: list, seat: Seat) -> dict | None:
    """The layout cell of a seat, or None when off the map or on a gap."""
    row, col = seat
    if row >= len(layout) or col >= len(layout[row]):
        return None
    cell = layout[row][col]
    return cell if cell.get("kind") == "seat" else None


def check_on_map(layout: list, positions: Sequence[Seat]) -> None:
    off = [p for p in positions if cell_at(layout, p) is None]
    if off:
        raise SeatOffMap(off)


def label_of(layout: list, seat: Seat) -> str:
    cell = cell_at(layout, seat)
    return seat_label(cell["row"], cell["number"]) if cell else str(seat)


def _zone_centres(layout: list) -> dict[str, tuple[float, float]]:
    """Each zone's centre: the mean (row, column) of its seats."""
    sums: dict[str, list[float]] = {}
    for r, row in enumerate(layout):
        for c, cell in enumerate(row):
            if cell.get("kind") == "seat":
                acc = sums.setdefault(cell["zone"], [0.0, 0.0, 0])
                acc[0] += r
                acc[1] += c
                acc[2] += 1
    return {code: (a[0] / a[2], a[1] / a[2]) for code, a in sums.items()}


def best_block(
    layout: list, zones: list, state: list, count: int, zone: str | None
) -> list[Seat] | None:
    """The best ``count`` adjacent FREE seats of one row, or None.

    Adjacent means neighbouring cells of one grid row: an aisle (a gap)
    breaks a block, and so does a change of zone. Wheelchair spaces and
    companion seats are never allocated blindly (they are chosen on the map).
    The best block has no restricted-view seat if any block has none, then
    lies in the best-ranked zone, then nearest the centre of its zone (the
    mean position of the zone's seats), then front-most, then left-most.
    Only FREE seats count: held, sold and blocked seats are never offered.
    """
    ranks = {z["code"]: z["rank"] for z in zones}
    centres = _zone_centres(layout)
    best = None
    for r, row in enumerate(layout):
        run: list[int] = []
        for c, cell in enumerate(row):
            usable = (
                cell.get("kind") == "seat"
                and state[r][c] == FREE
                and (zone is None or cell["zone"] == zone)
                and not {"wheelchair", "companion"} & set(cell.get("flags", ()))
            )
            if not usable or (run and row[run[-1]]["zone"] != cell["zone"]):
                run = []
            if not usable:
                continue
            run.append(c)
            if len(run) < count:
                continue
            cols = run[-count:]
            code = cell["zone"]
            centre_r, centre_c = centres[code]
            middle = (cols[0] + cols[-1]) / 2
            restricted = sum("restricted" in row[k].get("flags", ()) for k in cols)
            key = (
                restricted,
                ranks.get(code, math.inf),
                (r - centre_r) ** 2 + (middle - centre_c) ** 2,
                r,
                cols[0],
            )
            if best is None or key < best[0]:
                best = (key, [(r, k) for k in cols])
    return best[1] if best else None
