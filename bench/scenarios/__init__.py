"""The four workloads: what each user does and on what data, level-independent.

A ``Scenario`` fixes the data set (``params``), the default open-loop load
(users/s for a number of seconds, as the seed's simulator runs it) and a small
``--quick`` variant. How a workload is carried out (straight pymongo, Marquee's
services, HTTP) is a level's business: see bench/levels/.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal


@dataclass(frozen=True)
class CartParams:
    """Products with stock; each user reserves ``items`` of them and checks out."""

    products: int = 1000
    product_bytes: int = 1024
    stock: int = 1_000_000
    items: int = 5
    quantity: int = 1
    # When set, users pick only among the first ``hot`` products (contention).
    hot: int | None = None

    def price(self, product: int) -> Decimal:
        return Decimal("5.00") + Decimal(product % 100) / 4


@dataclass(frozen=True)
class TheaterParams:
    """Theaters of rows x seats, each with sessions; users hold seats and pay."""

    theaters: int = 10
    rows: int = 30
    seats_per_row: int = 30
    sessions_per_theater: int = 10
    tickets: int = 5
    price: Decimal = Decimal("10.00")
    # When set, every user competes for the first ``hot_seats`` seats of row 0
    # of one session: looks at the seat map, picks ``tickets`` adjacent free
    # seats, and tries again (up to ``attempts`` times) when beaten to them.
    hot_seats: int | None = None
    attempts: int = 3

    @property
    def blocks_per_session(self) -> int:
        return self.rows * (self.seats_per_row // self.tickets)

    def sessions_for(self, users: int) -> int:
        """Sessions per theater so that every one of ``users`` gets distinct seats.

        The seed's 10 x 10 sessions of 900 seats fit 18,000 users of 5 seats;
        a longer or faster run gets more sessions rather than failing users,
        since this is the *successful checkout* scenario.
        """
        if self.hot_seats is not None:
            return self.sessions_per_theater
        per_theater = self.blocks_per_session * self.theaters
        needed = -(-users // per_theater)
        return max(self.sessions_per_theater, needed)


@dataclass(frozen=True)
class SeedTable:
    """One of the seed article's published result tables (times in ms)."""

    engine: str
    runtime_s: float
    mean: float
    std: float
    p75: float
    p95: float
    p99: float
    min: float
    max: float
    users: int = 100_000

    @property
    def flows_per_s(self) -> float:
        # The simulator ran 4 processes x 1,000 users/s x 25 s; it prints no
        # throughput, so this is users / runtime.
        return self.users / self.runtime_s


@dataclass(frozen=True)
class Scenario:
    name: str
    family: str  # "cart" or "theater": which data set and flow a level uses
    title: str
    params: CartParams | TheaterParams
    rate: float
    duration: float
    quick_params: CartParams | TheaterParams
    quick_rate: float
    quick_duration: float
    contended: bool = False
    seed_ops_per_flow: int | None = None
    seed: tuple[SeedTable, ...] = field(default_factory=tuple)


def all_scenarios() -> dict[str, Scenario]:
    from bench.scenarios.cart import CART, CART_CONTENDED
    from bench.scenarios.theater import THEATER, THEATER_CONTENDED

    return {s.name: s for s in (CART, THEATER, CART_CONTENDED, THEATER_CONTENDED)}
