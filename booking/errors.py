"""Domain errors of the booking app.

Each carries a message a shopper can read as it is; ``status`` is the HTTP
status a view answers with.
"""

from collections.abc import Sequence

from config.errors import DomainError


def _join(labels: Sequence[str]) -> str:
    if len(labels) <= 1:
        return "".join(labels)
    return ", ".join(labels[:-1]) + " and " + labels[-1]


class BookingError(DomainError):
    """Any refusal of the box office."""


class InvalidRequest(BookingError):
    """The request itself is malformed (seat list, counts, ids, prices...)."""

    status = 400
    message = "That request could not be understood."


class InvalidSeats(InvalidRequest):
    message = "Seats must be given as row and column numbers."


class InvalidLayout(InvalidRequest):
    message = "That seat layout is not valid."


class UnknownZone(InvalidRequest):
    message = "There is no such price zone in this theater."


class SeatOffMap(InvalidRequest):
    """A position outside the layout, or a gap (aisle, stage edge) in it."""

    def __init__(self, seats: Sequence[tuple[int, int]]):
        self.seats = tuple(seats)
        where = _join([f"row {r + 1}, column {c + 1}" for r, c in self.seats])
        super().__init__(f"There is no seat at {where} on this map.")


class TheaterNotFound(BookingError):
    status = 404
    message = "That theater does not exist."


class SchedulingBusy(BookingError):
    """Another scheduling of the theater held its turn too long."""

    status = 409
    message = (
        "Another performance is being scheduled in this theater right now: "
        "look at its performances, then try again."
    )


class PerformanceOverlaps(BookingError):
    """Another performance uses the theater during that time."""

    status = 409

    def __init__(self, show: str, start, end):
        from django.utils import timezone

        begins = timezone.localtime(start).strftime("%a %d %b %H:%M")
        ends = timezone.localtime(end).strftime("%H:%M")
        super().__init__(
            f"The theater is taken then: {show} plays {begins}–{ends}. "
            "Choose another time or theater."
        )


class SessionNotFound(BookingError):
    status = 404
    message = "That performance does not exist."


class SessionClosed(BookingError):
    """The performance has started (or is over): its seats are off sale."""

    status = 409
    message = "This performance has already started; its seats are no longer on sale."


class SeatsTaken(BookingError):
    """Another cart got (some of) the seats first; nothing was held."""

    status = 409

    def __init__(self, labels: Sequence[str] = (), seats=()):
        self.labels = tuple(labels)
        self.seats = tuple(seats)
        if not self.labels:
            message = "Those seats were just taken. Please choose others."
        elif len(self.labels) == 1:
            message = f"{self.labels[0]} was just taken. Please choose another seat."
        else:
            message = f"{_join(self.labels)} were just taken. Please choose others."
        super().__init__(message)


class SeatsAlreadyHeld(SeatsTaken):
    """The seats are taken, by this very cart (a double click, a retry)."""

    def __init__(self, labels: Sequence[str] = (), seats=()):
        super().__init__(labels, seats)
        self.message = f"You already hold {_join(self.labels) or 'those seats'}."
        self.args = (self.message,)


class SeatsNotHeld(BookingError):
    """The cart does not (or no longer) hold the seats it wants to buy."""

    status = 409

    def __init__(self, labels: Sequence[str] = (), seats=()):
        self.labels = tuple(labels)
        self.seats = tuple(seats)
        super().__init__(
            f"Your hold on {_join(self.labels) or 'those seats'} has expired."
            " Please choose your seats again."
        )


class NoAdjacentSeats(BookingError):
    status = 409

    def __init__(self, count: int, zone_name: str | None):
        self.count = count
        where = f" in {zone_name}" if zone_name else ""
        if count == 1:
            message = f"There are no seats left{where}. Try another zone."
        else:
            message = (
                f"There are no {count} seats together{where} any more."
                " Try fewer seats or another zone."
            )
        super().__init__(message)


class BoxOfficeBusy(BookingError):
    """Lost too many races in a row; nothing was changed by this request."""

    status = 503
    message = "The box office is very busy right now. Please try again."


class SeatsNotBlockable(BookingError):
    """Staff asked to block seats a shopper holds or has bought."""

    status = 409

    def __init__(self, labels: Sequence[str] = (), seats=(), why: str = "held or sold"):
        self.labels = tuple(labels)
        self.seats = tuple(seats)
        super().__init__(
            f"{_join(self.labels) or 'Those seats'} cannot be blocked: {why}."
            " Release the hold or refund the order first."
        )


class SeatsAlreadyBlocked(SeatsNotBlockable):
    def __init__(self, labels: Sequence[str] = (), seats=()):
        super().__init__(labels, seats)
        verb = "is" if len(self.labels) == 1 else "are"
        self.message = f"{_join(self.labels) or 'Those seats'} {verb} already blocked."
        self.args = (self.message,)


class SeatsNotBlocked(BookingError):
    """Unblocking (or selling as blocked) seats that are not blocked."""

    status = 409

    def __init__(self, labels: Sequence[str] = (), seats=(), now: str = ""):
        self.labels = tuple(labels)
        self.seats = tuple(seats)
        self.now = now  # what they are instead ("free", "sold"), if known
        verb = "is" if len(self.labels) == 1 else "are"
        instead = f" ({now})" if now else ""
        super().__init__(
            f"{_join(self.labels) or 'Those seats'} {verb} not blocked{instead}."
        )
