"""Demo data of the booking app, loaded by ``manage.py load_demo``.

Three halls of different shapes, made through ``theater_create``, and about
four weeks of performances from tomorrow, made through ``session_create``:

* The Royal: a rectangular hall, 20 rows of 30 seats with two aisles;
* The Horseshoe: ragged stalls that widen towards the back, slips running up
  the side walls, a cross aisle, and a circle behind it;
* Studio 3: a small studio, 8 rows of 12.

The same seed gives the same halls, shows, times and prices.
"""

from __future__ import annotations

import random
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from string import ascii_uppercase

from django.utils import timezone

from booking.documents import Theater
from booking.services import layouts
from booking.values import SeatSpec, ZoneSpec
from config.progress import Progress

WEEKS = 4


def _seat(row: str, number: int, zone: str, *flags: str) -> SeatSpec:
    return SeatSpec(row=row, number=number, zone=zone, flags=frozenset(flags))


def royal_layout() -> list[list[SeatSpec | None]]:
    """20 x 30 seats, aisles after seats 8 and 22 (32 cells a row)."""
    layout = []
    for r in range(20):
        row = ascii_uppercase[r]
        cells: list[SeatSpec | None] = []
        for number in range(1, 31):
            centre = 9 <= number <= 22
            if r >= 16:
                zone = "rear"
            elif 2 <= r <= 10 and centre:
                zone = "premium"
            else:
                zone = "stalls"
            flags = []
            if r == 0 and (number <= 3 or number >= 28):
                flags.append("restricted")  # the first row's far ends
            if r == 19 and number in (1, 30):
                flags.append("wheelchair")
            if r == 19 and number in (2, 29):
                flags.append("companion")
            cells.append(_seat(row, number, zone, *flags))
            if number in (8, 22):
                cells.append(None)
        layout.append(cells)
    return layout


def horseshoe_layout() -> list[list[SeatSpec | None]]:
    """Ragged stalls (rows widen), side slips, a cross aisle and a circle."""
    width = 40
    layout: list[list[SeatSpec | None]] = []
    # Stalls A-J: three blocks split by two aisles, 13 seats at the front to
    # 31 at the back, centred; rows end after their last seat (ragged).
    for r in range(10):
        row = ascii_uppercase[r]
        side, middle = 3 + r // 2, 7 + r
        blocks = (side, middle, side)
        lead = (width - (sum(blocks) + 2)) // 2
        cells: list[SeatSpec | None] = [None] * lead
        number = 1
        for b, size in enumerate(blocks):
            if b:
                cells.append(None)  # aisle
            for i in range(size):
                zone = "stalls" if r < 7 or b == 1 else "rear_stalls"
                # Wheelchair spaces at the back, beside the aisles.
                beside_aisle = (b == 0 and i == size - 1) or (b == 2 and i == 0)
                flags = ["wheelchair"] if r == 9 and beside_aisle else []
                cells.append(_seat(row, number, zone, *flags))
                number += 1
        if r >= 3:
            # The slips run up the side walls from row D back: two rows of
            # their own (SL, SR), restricted view, at both ends of the grid.
            cells[0] = _seat("SL", r - 2, "slips", "restricted")
            cells += [None] * (width - 1 - len(cells))
            cells.append(_seat("SR", r - 2, "slips", "restricted"))
        layout.append(cells)
    layout.append([None] * width)  # the cross aisle
    # Circle K-N: the horseshoe's back, full width with two aisles.
    for r, row in enumerate("KLMN"):
        cells = [None] * (1 + r % 2)
        number = 1
        while len(cells) < width - (1 + r % 2):
            if len(cells) in (11, 28):
                cells.append(None)
                continue
            cells.append(_seat(row, number, "circle"))
            number += 1
        layout.append(cells)
    return layout


def studio_layout() -> list[list[SeatSpec | None]]:
    """8 x 12 benches; two wheelchair spaces with companions at the front."""
    layout = []
    for r in range(8):
        row = ascii_uppercase[r]
        cells = []
        for number in range(1, 13):
            flags = []
            if r == 0 and number in (1, 12):
                flags.append("wheelchair")
            if r == 0 and number in (2, 11):
                flags.append("companion")
            if r == 7 and number in (6, 7):
                flags.append("restricted")  # behind the lighting desk
            cells.append(_seat(row, number, "studio", *flags))
        layout.append(cells)
    return layout


THEATERS = [
    {
        "name": "The Royal",
        "zones": [
            ZoneSpec("premium", "Premium stalls", "#7a1f3d", 0),
            ZoneSpec("stalls", "Stalls", "#2f6db5", 1),
            ZoneSpec("rear", "Rear stalls", "#2f7a4c", 2),
        ],
        "layout": royal_layout,
        "prices": {"premium": 55, "stalls": 38, "rear": 24},
    },
    {
        "name": "The Horseshoe",
        "zones": [
            ZoneSpec("stalls", "Stalls", "#2f6db5", 0),
            ZoneSpec("circle", "Circle", "#8a5a1f", 1),
            ZoneSpec("rear_stalls", "Rear stalls", "#2f7a4c", 2),
            ZoneSpec("slips", "Slips", "#6b4fa0", 3),
        ],
        "layout": horseshoe_layout,
        "prices": {"stalls": 42, "circle": 32, "rear_stalls": 26, "slips": 15},
    },
    {
        "name": "Studio 3",
        "zones": [ZoneSpec("studio", "Studio", "#b5542f", 0)],
        "layout": studio_layout,
        "prices": {"studio": 16},
    },
]

# Shows per theater, in repertory, two weeks each: (show, description).
REPERTOIRE = {
    "The Royal": [
        ("Hamlet", "Shakespeare's tragedy of the Prince of Denmark."),
        (
            "The Importance of Being Earnest",
            "Wilde's trivial comedy for serious people.",
        ),
    ],
    "The Horseshoe": [
        (
            "A Midsummer Night's Dream",
            "Lovers, mechanicals and fairies lose their way.",
        ),
        ("The Cherry Orchard", "Chekhov: an estate, a family, an axe in the distance."),
    ],
    "Studio 3": [
        ("Uncle Vanya", "Chekhov up close, in a room of ninety-six."),
        ("Late Night Jazz", "A trio, a double bass and no interval."),
    ],
}
# Weekday (Monday 0) -> performance times; matinees on Saturday and Sunday.
TIMES = {
    "The Royal": {
        1: ["19:30"],
        2: ["19:30"],
        3: ["19:30"],
        4: ["19:30"],
        5: ["14:30", "19:30"],
    },
    "The Horseshoe": {
        2: ["19:00"],
        3: ["19:00"],
        4: ["19:00"],
        5: ["19:00"],
        6: ["15:00"],
    },
    "Studio 3": {3: ["20:00"], 4: ["20:00"], 5: ["20:00"]},
}


def _schedule(rng: random.Random, first_day: date) -> list[dict]:
    """Every performance of the demo weeks, in a deterministic order."""
    performances = []
    for theater in THEATERS:
        name = theater["name"]
        shows = list(REPERTOIRE[name])
        rng.shuffle(shows)
        # Each show runs for two weeks; prices shift a little per show.
        uplift = {show: Decimal(rng.choice([0, 0, 2, 4])) for show, _ in shows}
        for offset in range(WEEKS * 7):
            day = first_day + timedelta(days=offset)
            show, description = shows[(offset // 14) % len(shows)]
            if show == "Late Night Jazz":  # a late slot, Fridays and Saturdays
                slots = ["22:30"] if day.weekday() in (4, 5) else []
            else:
                slots = TIMES[name].get(day.weekday(), [])
            for slot in slots:
                hour, minute = map(int, slot.split(":"))
                start = timezone.make_aware(datetime.combine(day, time(hour, minute)))
                length = timedelta(minutes=rng.choice([90, 120, 150, 165]))
                performances.append(
                    {
                        "theater": name,
                        "show": show,
                        "description": description,
                        "start": start,
                        "end": start + length,
                        "prices": {
                            zone: Decimal(amount) + uplift[show]
                            for zone, amount in theater["prices"].items()
                        },
                    }
                )
    return performances


def load(*, items: int, seed: int, out) -> None:
    """Create the demo halls and ~4 weeks of sessions; skip if halls exist.

    ``items`` sizes the catalog, not the box office: it is ignored here.
    """
    if Theater.objects.count():
        out.write("Box office: theaters already present, skipped.\n")
        return
    rng = random.Random(seed)
    ids = {}
    for theater in THEATERS:
        ids[theater["name"]] = layouts.theater_create(
            name=theater["name"], zones=theater["zones"], layout=theater["layout"]()
        )
    first_day = timezone.localdate() + timedelta(days=1)
    performances = _schedule(rng, first_day)
    # Django wraps a command's stderr to end every write with a newline,
    # which would break the bar's redraw on a terminal: use the raw stream.
    stream = getattr(out, "_out", out)
    with Progress("Sessions", len(performances), stream=stream) as progress:
        for performance in performances:
            layouts.session_create(
                theater_id=ids[performance["theater"]],
                show=performance["show"],
                description=performance["description"],
                start=performance["start"],
                end=performance["end"],
                prices=performance["prices"],
            )
            progress.advance()
    out.write(f"Box office: {len(THEATERS)} theaters, {len(performances)} sessions.\n")
