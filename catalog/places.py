"""Where a typed UK postcode, postcode district or town is: offline.

Pure (no database): the places are a CSV shipped with the code
(``catalog/data/uk_places.csv``, its sources and licences beside it), read
once per process. A full postcode ("SW1A 1AA") is placed at its district's
centroid ("SW1A"), which is close enough to rank stores by distance.
"""

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PLACES = Path(__file__).resolve().parent / "data" / "uk_places.csv"

# The outward code, then (for a full postcode) the inward code.
_POSTCODE = re.compile(r"^([A-Z]{1,2}[0-9][A-Z0-9]?)\s*([0-9][A-Z]{2})?$")


@dataclass(frozen=True)
class Place:
    lat: float
    lng: float
    label: str


@cache
def _places() -> tuple[dict[str, Place], dict[str, Place]]:
    districts: dict[str, Place] = {}
    towns: dict[str, Place] = {}
    with PLACES.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            place = Place(float(row["lat"]), float(row["lng"]), row["name"])
            if row["kind"] == "district":
                districts[row["name"]] = place
            else:
                towns[row["name"].casefold()] = place
    return districts, towns


def postcode_parts(text: str) -> tuple[str, str] | None:
    """("SW1A", "1AA") for "sw1a1aa", ("LS2", "") for "LS2"; None otherwise."""
    found = _POSTCODE.match(" ".join(text.upper().split()))
    if found is None:
        return None
    return found.group(1), found.group(2) or ""


def place_lookup(text: str) -> Place | None:
    """A postcode, a postcode district or a town, or None if unknown."""
    text = " ".join(text.split())
    if not text:
        return None
    districts, towns = _places()
    parts = postcode_parts(text)
    if parts is not None and parts[0] in districts:
        outward, inward = parts
        found = districts[outward]
        label = f"{outward} {inward}" if inward else outward
        return Place(found.lat, found.lng, label)
    return towns.get(text.casefold())
