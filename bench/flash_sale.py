"""Flash sale: 2,000 shoppers, 16 at a time, for one SKU of exactly 1,000 units.

Closed loop at the http level (``manage.py serve`` with its defaults, as
bench/levels/http.py starts it): each shopper is a fresh browser (no
cookie, no session) that GETs the product page (``/p/<item>/``), reads the
page's own add-to-cart form and posts it as htmx does; in the ``checkout``
variant every shopper whose add succeeded then checks out with the test
card (checkout page, its form posted, the order page). Reports shoppers/s,
the add POST's p50/p95/p99, checkout's p50/p95 (the POST), and the end
state: units sold + held must be exactly the units on offer, every add that
succeeded got one unit, paid orders must equal units sold. ``--repeat N``
runs the sale N times in a row on one database without any cleanup in
between (a fresh SKU each time), to show whether the data left behind slows
the next sale.

    python bench/run.py --scenario flash-sale [--quick] [--repeat 3]
    python bench/run.py --scenario flash-sale-checkout
"""

from __future__ import annotations

import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from bench.dbserver import cpu_seconds, fresh_name, machine_shares, machine_ticks
from bench.levels import http, marquee
from bench.stats import percentile

NAMES = ("flash-sale", "flash-sale-checkout")
_FORM = re.compile(
    r'<form class="add-to-cart" method="post" action="([^"]+)".*?</form>', re.S
)
_INPUT = re.compile(r'<input [^>]*name="([^"]+)" value="([^"]*)"')


@dataclass(frozen=True)
class Sale:
    shoppers: int = 2000
    concurrency: int = 16
    units: int = 1000
    checkout: bool = False


@dataclass
class Shopper:
    added: bool = False
    paid: bool = False
    add_ms: float = 0.0
    checkout_ms: float | None = None
    error: str = ""


def _form(page: http.Page) -> tuple[str, dict]:
    """The page's add-to-cart form: its action and its fields."""
    found = _FORM.search(page.text)
    if found is None:
        raise RuntimeError("no add-to-cart form on the product page")
    fields = dict(_INPUT.findall(found.group(0)))
    fields.pop("csrfmiddlewaretoken", None)  # the browser sends its own
    return found.group(1), fields


def shop(base: str, item_id: str, checkout: bool) -> Shopper:
    """One shopper with a fresh browser, from the product page on."""
    browser = http.Browser(base)
    out = Shopper()
    try:
        page = browser.get(f"/p/{item_id}/").expect(200, "product page")
        browser.csrf = page.csrf_token()
        action, fields = _form(page)
        began = time.perf_counter()
        answer = browser.post(action, fields, htmx=True).expect(200, "add")
        out.add_ms = (time.perf_counter() - began) * 1000
        toast = http._TOAST.search(answer.text)
        out.added = bool(toast and toast.group(1) == "success")
        if not out.added and not (toast and http._SOLD_OUT.search(toast.group(2))):
            raise RuntimeError(f"add: {answer.text[:200]}")
        if out.added and checkout:
            began = time.perf_counter()
            http._checkout(browser)
            out.checkout_ms = (time.perf_counter() - began) * 1000
            out.paid = True
    except Exception as exc:  # counted and reported, never hidden
        out.error = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        browser.close()
    return out


def _setup(sku: str, units: int) -> str:
    from django.utils import timezone

    from catalog.services.stock import stock_restock

    marquee.add_products({sku: (1, "25.00")}, lambda: "A launch.", timezone.now())
    stock_restock(sku=sku, quantity=units, note="flash sale")
    return f"item-{sku}"


def _end_state(db, sku: str, shoppers: list[Shopper], sale: Sale) -> list[str]:
    """The end state's lines; raises AssertionError when it is wrong."""
    from catalog.selectors.stock import stock_level
    from shop.kinds import PRODUCTS

    level = stock_level(sku=sku)
    added = sum(s.added for s in shoppers)
    paid_orders = db.orders.count_documents({"state": "paid", "lines.key": sku})
    lines = [
        f"end state: sold {level.sold} + held {level.held} = "
        f"{level.sold + level.held} of {sale.units} (free {level.free}); "
        f"adds that succeeded {added}; paid orders {paid_orders}",
    ]
    problems = PRODUCTS.resource_problems()
    errors = [s.error for s in shoppers if s.error]
    ok = (
        level.sold + level.held == sale.units
        and added == sale.units
        and paid_orders == level.sold
        and (not sale.checkout or level.sold == sale.units)
        and not problems
        and not errors
    )
    lines.append(f"invariants: {'ok' if ok else 'BROKEN'}")
    lines += [f"stock problem: {p}" for p in problems[:3]]
    lines += [f"error: {e}" for e in errors[:3]]
    if not ok:
        raise AssertionError("\n".join(lines))
    return lines


def _cpu(handle, db_pid: int | None) -> tuple[float | None, float, float]:
    """CPU seconds so far: the database daemon, serve's processes, and this
    process (the shoppers' browsers)."""
    return cpu_seconds(db_pid), handle.server.tree_cpu_seconds(), time.process_time()


def _cpu_line(before, after, shoppers: int, machine) -> str:
    """CPU per shopper of each part, and the machine's shares: what a sale
    slower than the one before it spent its time on."""
    names = ("database", "web tier", "browsers")
    parts = [
        f"{name} {(b - a) * 1000 / shoppers:.1f}"
        for name, a, b in zip(names, before, after, strict=True)
        if a is not None and b is not None
    ]
    line = "  CPU ms per shopper: " + ", ".join(parts)
    if machine is not None:
        line += "; machine busy / idle / stolen {:.0%} / {:.0%} / {:.1%}".format(
            *machine
        )
    return line


def one_sale(handle, db, sale: Sale, round_: int, db_pid: int | None) -> list[str]:
    sku = f"FLASH-{round_}"
    item_id = _setup(sku, sale.units)
    cpu, machine = _cpu(handle, db_pid), machine_ticks()
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=sale.concurrency) as pool:
        shoppers = list(
            pool.map(
                lambda _: shop(handle.base, item_id, sale.checkout),
                range(sale.shoppers),
            )
        )
    elapsed = time.perf_counter() - began
    used = _cpu_line(
        cpu,
        _cpu(handle, db_pid),
        sale.shoppers,
        machine_shares(machine, machine_ticks()),
    )
    adds = sorted(s.add_ms for s in shoppers if not s.error)
    checkouts = sorted(s.checkout_ms for s in shoppers if s.checkout_ms is not None)
    lines = [
        f"sale {round_}: {sale.shoppers} shoppers in {elapsed:.1f} s = "
        f"{sale.shoppers / elapsed:.1f} shoppers/s",
        "  add POST ms: p50 {:.0f}, p95 {:.0f}, p99 {:.0f}".format(
            *(percentile(adds, p) for p in (50, 95, 99))
        ),
    ]
    if checkouts:
        lines.append(
            "  checkout ms (page, POST, order page): p50 {:.0f}, p95 {:.0f}".format(
                *(percentile(checkouts, p) for p in (50, 95))
            )
        )
    lines.append(used)
    lines += ["  " + line for line in _end_state(db, sku, shoppers, sale)]
    return lines


def run(target, sale: Sale, *, repeat: int = 1, web_workers: int = 2) -> list[str]:
    """Run the sale ``repeat`` times on one database and server; the report."""
    import os

    os.environ[http.WORKERS_ENV] = str(web_workers)
    name = fresh_name("http", "flash_sale")
    handle = http.connect(target.uri, name, 1)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout
    lines = [
        f"flash sale{' with checkout' if sale.checkout else ''}: {sale.shoppers} "
        f"shoppers, {sale.concurrency} at a time, {sale.units} units; serve "
        f"--workers {web_workers}",
        f"uptime before: {uptime.strip()}",
    ]
    try:
        from config import mongo

        mongo.ensure_indexes()
        for round_ in range(1, repeat + 1):
            lines += one_sale(handle, handle.db, sale, round_, target.pid)
    except AssertionError as broken:
        # What the server said about it, before its log goes with it.
        tail = handle.server.log_tail(80) if handle.server else ""
        raise AssertionError(f"{broken}\nserve's log:\n{tail}") from None
    finally:
        http.close(handle)
        target.drop(name)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout
    lines.append(f"uptime after: {uptime.strip()}")
    return lines
