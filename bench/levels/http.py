"""The http level: real shoppers over loopback against ``manage.py serve``.

Each run starts Marquee as it runs in production, ``manage.py serve
--no-demo --port P --workers N`` (gunicorn's gthread workers, 4 threads
each, plus the qcluster), pointed at the bench's database server and the
run's fresh database (``MONGODB_URI`` with the database in its path), with
``DJANGO_SETTINGS_MODULE=bench.web.settings``: Marquee's settings plus one
middleware that reports each request's MongoDB commands in a response
header (bench/web/counter.py). SQLite and collected static files go to a
temporary ``MARQUEE_VAR_DIR``. The server is stopped when the run ends, and
dies with the bench if the bench is killed (``PR_SET_PDEATHSIG``).

Each user is a browser of its own: a cookie jar (the signed session cookie,
``csrftoken``, ``messages``), keep-alive connections (at most one per
request in flight, as a browser opens up to six per host), the CSRF token
read from the page and sent as htmx sends it (``X-CSRFToken`` header and
the form's ``csrfmiddlewaretoken``), redirects followed by the flow itself.

Cart flow: open the first product's page (``GET /cart/add/?sku=``, which a
shopper without JS uses, and which gives the CSRF cookie); add it with
htmx (``POST /cart/add/`` with ``HX-Request``: the first add makes the
session's shopper key and the cart); add the other 4 concurrently the same
way; open the checkout page (``GET /checkout/``, whose form carries the
cart id); pay (``POST /checkout/``, the page's form with the test card);
follow the redirect to the order page, which shows "Paid".

Theater flow: the performance's page with its seat map (``GET
/sessions/<id>/``: ``view_seats``); an htmx hold of the user's own 5 seats
(the raw level's ``seats_for``) through the map's form, ``POST
/cart/tickets/<id>/hold/`` with the seats as repeated ``seat`` fields (the
form takes up to 10; a click on the map sends one), answered with the
redrawn map: ``hold_seats``; then checkout as above. Contended: a free
pair of the hot seats read from the map; when beaten, another pair from
the map the refusal redraws (the page's own behaviour), 3 tries.
"""

from __future__ import annotations

import ctypes
import http.client
import http.cookiejar
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

from bench import monitor
from bench.dbserver import cpu_seconds
from bench.levels import Level, Outcome, Workload, marquee, raw
from bench.web.counter import HEADER

ROOT = Path(__file__).resolve().parent.parent.parent
# gunicorn worker processes (`serve --workers`); bench/run.py --web-workers.
WORKERS_ENV = "MARQUEE_BENCH_WEB_WORKERS"
DEFAULT_WORKERS = 2
# Where the parent tells its load workers which server to talk to.
_SITE_ENV = "MARQUEE_BENCH_SITE"
READY_TIMEOUT_S = 180
REQUEST_TIMEOUT_S = 300
# gunicorn closes a keep-alive connection idle for 2 s; a browser that finds
# one closed retries. Connections idle longer than this are not reused.
KEEPALIVE_S = 1.0

_CSRF = re.compile(r'"X-CSRFToken": "([^"]+)"')
_CART_ID = re.compile(r'name="cart" value="([0-9a-f]{32})"')
_SOLD_OUT = re.compile(r"Sorry, .*(is sold out|left of)")
_SEAT = re.compile(r'id="seat-(\d+)-(\d+)" class="seat seat-(\w+)')
_TOAST = re.compile(r'class="toast toast-(\w+)"[^>]*>([^<]*)<')


# --- The server -------------------------------------------------------------


def with_database(uri: str, db_name: str) -> str:
    """``uri`` naming ``db_name`` as its database (config.mongo reads it)."""
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(path=f"/{db_name}"))


def _die_with_parent() -> None:
    # In the child before exec: SIGTERM when the bench process dies, so a
    # killed bench leaves no server behind (serve stops its children on it).
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_var: dict[str, str] = {}


def _var_dir() -> Path:
    """SQLite and static files of this bench process's servers (kept between
    runs, so that only the first ``serve`` migrates and collects)."""
    if "dir" not in _var:
        _var["dir"] = tempfile.mkdtemp(prefix="marquee-bench-web-")
        import atexit

        atexit.register(shutil.rmtree, _var["dir"], True)
    return Path(_var["dir"])


def _free_port() -> int:
    from config.embedded import free_port

    return free_port()


def _children() -> dict[int, list[int]]:
    """Parent PID -> child PIDs, for every process on the machine."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _cmdline(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes()).replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


class Server:
    """One ``manage.py serve`` for one run's database."""

    def __init__(self, uri: str, db_name: str, workers: int):
        self.uri = with_database(uri, db_name)
        self.db_name = db_name
        self.workers = workers
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = _var_dir() / f"serve-{db_name}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "MONGODB_URI": self.uri,
            "MONGODB_DB": self.db_name,
            "DJANGO_SETTINGS_MODULE": "bench.web.settings",
            "MARQUEE_VAR_DIR": str(_var_dir()),
            "PYTHONUNBUFFERED": "1",
        }
        command = [
            sys.executable,
            str(ROOT / "manage.py"),
            "serve",
            "--no-demo",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
        ]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command,
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"serve exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200 and len(self.worker_pids()) >= 1:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            time.sleep(0.25)
        raise RuntimeError(
            f"serve not ready in {READY_TIMEOUT_S} s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _children_running(self, needle: str) -> list[int]:
        """serve's live child processes whose command line has ``needle``."""
        return [
            pid
            for pid in _children().get(self.process.pid, [])
            if needle in _cmdline(pid) and not _zombie(pid)
        ]

    def tree_cpu_seconds(self) -> float:
        """CPU used so far by every live process under serve (gunicorn's
        master and workers, the qcluster and its workers)."""
        if self.process is None:
            return 0.0
        tree, total, todo = _children(), 0.0, [self.process.pid]
        while todo:
            pid = todo.pop()
            total += cpu_seconds(pid) or 0.0
            todo += tree.get(pid, [])
        return total

    def worker_pids(self) -> list[int]:
        """gunicorn's workers: the children of the gunicorn master under serve."""
        if self.process is None:
            return []
        tree = _children()
        masters = [
            pid for pid in tree.get(self.process.pid, []) if "gunicorn" in _cmdline(pid)
        ]
        return [pid for master in masters for pid in tree.get(master, [])]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # serve stops its children by process group, and django-q2's cluster
        # signalled as a whole group outlasts serve's grace period (15 s,
        # then SIGKILL); its leader alone stops in a couple of seconds. So
        # the cluster first, then serve (gunicorn stops in about one).
        for pid in self._children_running("qcluster"):
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while self._children_running("qcluster") and time.monotonic() < deadline:
            time.sleep(0.1)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# --- A browser ----------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    status: int
    location: str
    text: str
    commands: int

    def expect(self, status: int, what: str) -> Page:
        if self.status != status:
            raise RuntimeError(f"{what}: HTTP {self.status}: {self.text[:300]}")
        return self

    def csrf_token(self) -> str:
        found = _CSRF.search(self.text)
        if found is None:
            raise RuntimeError("no CSRF token in the page")
        return found.group(1)


class _Headers:
    """What CookieJar.extract_cookies needs of a response."""

    def __init__(self, message):
        self._message = message

    def info(self):
        return self._message


class Browser:
    """One shopper's browser: cookies, keep-alive connections, CSRF token."""

    def __init__(self, base: str):
        self.base = base
        parts = urlsplit(base)
        self._host, self._port = parts.hostname, parts.port
        self.jar = http.cookiejar.CookieJar()
        self.csrf = ""
        self._idle: list[tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()

    def get(self, path: str, *, htmx: bool = False) -> Page:
        return self.request("GET", path, htmx=htmx)

    def post(self, path: str, fields: dict, *, htmx: bool = False) -> Page:
        return self.request("POST", path, fields=fields, htmx=htmx)

    def request(
        self, method: str, path: str, *, fields=None, htmx: bool = False
    ) -> Page:
        url = self.base + path
        headers = {"Accept": "text/html", "User-Agent": "marquee-bench"}
        body = None
        if fields is not None:
            body = urlencode({"csrfmiddlewaretoken": self.csrf, **fields}, doseq=True)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Origin"] = self.base
            headers["Referer"] = url
        if htmx:
            headers["HX-Request"] = "true"
            headers["HX-Current-URL"] = url
            headers["X-CSRFToken"] = self.csrf
        cookies = urllib.request.Request(url)
        self.jar.add_cookie_header(cookies)
        if cookies.has_header("Cookie"):
            headers["Cookie"] = cookies.get_header("Cookie")
        response, data = self._exchange(method, path, body, headers)
        self.jar.extract_cookies(_Headers(response.msg), cookies)
        commands = int(response.getheader(HEADER) or 0)
        monitor.count(commands)
        return Page(
            status=response.status,
            location=response.getheader("Location") or "",
            text=data.decode("utf-8", "replace"),
            commands=commands,
        )

    def _exchange(self, method, path, body, headers):
        for attempt in (1, 2):
            conn, reused = self._connection()
            try:
                conn.request(method, path, body, headers)
                response = conn.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, ConnectionError):
                conn.close()
                # A kept-alive connection the server had closed: the request
                # never reached it, and a browser sends it again.
                if reused and attempt == 1:
                    continue
                raise
            if response.will_close:
                conn.close()
            else:
                with self._lock:
                    self._idle.append((conn, time.monotonic()))
            return response, data
        raise AssertionError("unreachable")

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                conn, since = self._idle.pop()
                if now - since < KEEPALIVE_S:
                    return conn, True
                conn.close()
        conn = http.client.HTTPConnection(
            self._host, self._port, timeout=REQUEST_TIMEOUT_S
        )
        return conn, False

    def close(self) -> None:
        with self._lock:
            for conn, _ in self._idle:
                conn.close()
            self._idle.clear()


# --- The level ------------------------------------------------------------------


class Handle:
    """What ``connect`` returns: the site to browse, and in the parent the
    database (for set-up and checks) and the server."""

    def __init__(
        self,
        base: str,
        db=None,
        server: Server | None = None,
        *,
        uri: str = "",
        db_name: str = "",
    ):
        self.base = base
        self.db = db
        self.server = server
        self._uri, self._db_name = uri, db_name
        self._lock = threading.Lock()

    def browser(self) -> Browser:
        return Browser(self.base)

    def sessions(self) -> tuple[list[str], str]:
        """The theater sessions' ids (a shopper arrives knowing the one it
        wants): read once, with a client of the bench's own in a worker."""
        with self._lock:
            if self.db is None:
                from pymongo import MongoClient

                self.db = MongoClient(self._uri, tz_aware=True)[self._db_name]
        return marquee.sessions(self.db)


def connect(uri: str, db_name: str, pool: int) -> Handle:
    if multiprocessing.parent_process() is not None:
        # A load worker: the parent started the server before spawning it.
        started_for, _, base = os.environ.get(_SITE_ENV, "").partition(" ")
        if started_for != db_name:
            raise RuntimeError(f"no server was started for {db_name}")
        return Handle(base, uri=uri, db_name=db_name)
    db = marquee.connect(uri, db_name)
    workers = int(os.environ.get(WORKERS_ENV) or DEFAULT_WORKERS)
    server = Server(uri, db_name, workers)
    began = time.monotonic()
    server.start()
    print(
        f"  http: serve --workers {workers} ready on {server.base} in "
        f"{time.monotonic() - began:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    os.environ[_SITE_ENV] = f"{db_name} {server.base}"
    return Handle(server.base, db, server)


def close(handle: Handle) -> None:
    if handle.server is not None:
        began = time.monotonic()
        handle.server.stop()
        print(
            f"  http: serve stopped in {time.monotonic() - began:.1f} s",
            file=sys.stderr,
            flush=True,
        )


def server_pids(handle: Handle) -> list[int]:
    return handle.server.worker_pids() if handle.server is not None else []


def _add(browser: Browser, sku: str, quantity: int, action: str) -> bool:
    """An htmx add-to-cart; False when the product is sold out."""
    with monitor.action(action):
        page = browser.post(
            "/cart/add/", {"sku": sku, "quantity": str(quantity)}, htmx=True
        ).expect(200, f"add {sku}")
    toast = _TOAST.search(page.text)
    if toast and toast.group(1) == "success":
        return True
    if toast and _SOLD_OUT.search(toast.group(2)):
        return False
    raise RuntimeError(f"add {sku}: {toast.group(2) if toast else page.text[:300]}")


def _open_product(browser: Browser, sku: str) -> None:
    with monitor.action("view_product"):
        page = browser.get(f"/cart/add/?sku={sku}").expect(200, f"product {sku}")
    browser.csrf = page.csrf_token()


def _checkout(browser: Browser) -> None:
    """The checkout page, its form posted, the order page it leads to."""
    with monitor.action("view_checkout"):
        page = browser.get("/checkout/").expect(200, "checkout page")
    found = _CART_ID.search(page.text)
    if found is None:
        raise RuntimeError("no cart id in the checkout page")
    browser.csrf = page.csrf_token()
    fields = {
        "cart": found.group(1),
        "email": marquee.EMAIL,
        **{key: value for key, value in marquee.SHIPPING.items()},
        "card_number": marquee.CARD_NUMBER,
        "card_expiry": "12/99",
        "card_cvc": "123",
    }
    with monitor.action("checkout"):
        paid = browser.post("/checkout/", fields).expect(302, "checkout")
    if "/orders/" not in paid.location:
        raise RuntimeError(f"checkout redirected to {paid.location!r}")
    with monitor.action("view_order"):
        order = browser.get(paid.location).expect(200, "order page")
    if "Paid" not in order.text:
        raise RuntimeError("the order page does not say Paid")


def cart_flow(ctx, rng) -> Outcome:
    p = ctx.run.params
    skus = [marquee.sku(i) for i in rng.sample(range(p.hot or p.products), p.items)]
    browser = ctx.db.browser()
    try:
        # The first add that holds makes the cart (a refused one leaves
        # none): one at a time until then, as the raw level creates its cart.
        _open_product(browser, skus[0])
        first, adds = False, list(skus)
        while adds and not first:
            first = _add(browser, adds.pop(0), p.quantity, "first_add")
        rest = ctx.parallel(
            [partial(_add, browser, s, p.quantity, "add_to_cart") for s in adds]
        )
        got = sum(1 for added in (first, *rest) if added)
        if got == 0:
            return Outcome(kind="sold_out", got="nothing")
        _checkout(browser)
    finally:
        browser.close()
    return Outcome(got=f"{got} of {p.items} items")


def cart_probe(ctx, rng) -> None:
    """Every cart action once, on the probe's own SKUs."""
    first, second = marquee.PROBE_SKUS
    browser = ctx.db.browser()
    try:
        _open_product(browser, first)
        if not _add(browser, first, 1, "first_add"):
            raise RuntimeError("probe: could not add the probe's first SKU")
        if not _add(browser, second, 1, "add_to_cart"):
            raise RuntimeError("probe: could not add the probe's second SKU")
        with monitor.action("change_quantity"):
            page = browser.post(
                "/cart/update/", {"sku": second, "quantity": "2"}, htmx=True
            ).expect(200, "change quantity")
        toast = _TOAST.search(page.text)
        if not toast or toast.group(1) != "success":
            raise RuntimeError(f"probe: change quantity refused: {page.text[:300]}")
        _checkout(browser)
    finally:
        browser.close()


def _seat_states(page: Page) -> dict[tuple[int, int], str]:
    """Every seat of the drawn map and its state (free, taken, mine)."""
    return {(int(row), int(col)): state for row, col, state in _SEAT.findall(page.text)}


def _view_seats(browser: Browser, session_id: str) -> Page:
    """The performance's page with its seat map (and the CSRF token)."""
    with monitor.action("view_seats"):
        page = browser.get(f"/sessions/{session_id}/").expect(200, "seat map")
    browser.csrf = page.csrf_token()
    return page


def _hold(browser: Browser, session_id: str, seats) -> tuple[bool, Page]:
    """An htmx hold of ``seats``: (held?, the redrawn map it answers with)."""
    fields = {"seat": [f"{row}-{col}" for row, col in seats]}
    with monitor.action("hold_seats"):
        page = browser.post(
            f"/cart/tickets/{session_id}/hold/", fields, htmx=True
        ).expect(200, "hold seats")
    toast = _TOAST.search(page.text)
    if toast and toast.group(1) == "success":
        return True, page
    if toast and "just taken" in toast.group(2):
        return False, page
    raise RuntimeError(f"hold: {toast.group(2) if toast else page.text[:300]}")


def theater_flow(ctx, rng) -> Outcome:
    """The performance's page, a hold of this user's own seats, checkout."""
    index, seats = raw.seats_for(ctx.run, ctx.user)
    session_id = ctx.db.sessions()[0][index]
    browser = ctx.db.browser()
    try:
        _view_seats(browser, session_id)
        held, _ = _hold(browser, session_id, seats)
        if not held:
            return Outcome(kind="seats_taken", got="nothing")
        _checkout(browser)
    finally:
        browser.close()
    return Outcome(got=f"{len(seats)} seats")


def contended_theater_flow(ctx, rng) -> Outcome:
    """The page; a free pair of the hot seats; when beaten, another pair from
    the map the refusal redraws (as the page does), 3 tries."""
    p = ctx.run.params
    session_id = ctx.db.sessions()[0][0]
    browser = ctx.db.browser()
    try:
        page = _view_seats(browser, session_id)
        for _ in range(p.attempts):
            states = _seat_states(page)
            row = [states.get((0, col), "taken") for col in range(p.hot_seats)]
            free = raw.free_blocks(row, p.tickets, free="free")
            if not free:
                return Outcome(kind="sold_out", got="nothing")
            first = rng.choice(free)
            held, page = _hold(
                browser, session_id, [(0, first + k) for k in range(p.tickets)]
            )
            if held:
                _checkout(browser)
                return Outcome(got=f"{p.tickets} seats")
    finally:
        browser.close()
    return Outcome(kind="seats_taken", got="nothing")


def theater_probe(ctx, rng) -> None:
    """Every theater action once, on the probe's own session."""
    p = ctx.run.params
    session_id = ctx.db.sessions()[1]
    browser = ctx.db.browser()
    try:
        _view_seats(browser, session_id)
        held, _ = _hold(browser, session_id, [(0, k) for k in range(p.tickets)])
        if not held:
            raise RuntimeError("probe: could not hold the probe session's seats")
        _checkout(browser)
    finally:
        browser.close()


def _theater(user_flow) -> Workload:
    return Workload(
        setup=lambda handle, run: marquee.theater_setup(handle.db, run),
        user_flow=user_flow,
        probe=theater_probe,
        check=lambda handle, run: marquee.theater_check(handle.db, run),
    )


_CART = Workload(
    setup=lambda handle, run: marquee.cart_setup(handle.db, run),
    user_flow=cart_flow,
    probe=cart_probe,
    check=lambda handle, run: marquee.cart_check(handle.db, run),
)

LEVEL = Level(
    name="http",
    description="real shoppers over loopback against manage.py serve (gunicorn)",
    connect=connect,
    # Commands per request, counted in the web worker; bench/README.md,
    # "Round-trip budgets", lists them.
    # A hold or an add also counts itself in the throttle (accounts/
    # throttle.py): one command per counter (session, address), two for a
    # counter's first request in its window.
    budgets={
        "view_product": 4,
        "first_add": 14,
        "add_to_cart": 13,
        "change_quantity": 10,
        "view_checkout": 3,
        # The service's 15, and one read of the shopper's decline windows
        # (session and address, by _id) before the view runs
        # (accounts/declines.py).
        "checkout": 16,
        "view_order": 2,
        "view_seats": 2,
        # Refused at worst: the throttle's 4, the service's 11 (the wanted
        # pair's two holders read, the session's header read by a worker's
        # first hold), the redrawn map's 2.
        "hold_seats": 17,
    },
    workloads={
        "cart": _CART,
        "cart-contended": _CART,
        "theater": _theater(theater_flow),
        "theater-contended": _theater(contended_theater_flow),
    },
    server_pids=server_pids,
    close=close,
)
