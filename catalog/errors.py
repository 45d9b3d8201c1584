"""What the catalog tells the shopper: its refusals (domain errors, whose
``message`` is shown) and its confirmations, in one place."""

from config.errors import DomainError


class UnknownItem(DomainError):
    message = "That product does not exist."
    status = 404


class UnknownSku(DomainError):
    message = "That product variant does not exist."
    status = 404


class UnknownStore(DomainError):
    message = "That store does not exist."
    status = 404


class NotForSale(DomainError):
    message = "That product has no price and cannot be sold."
    status = 409


# --- Online stock ------------------------------------------------------------


class NotStocked(DomainError):
    message = "That product is not sold online."
    status = 409


class OutOfStock(DomainError):
    """Not enough free units; ``available`` says how many there are."""

    status = 409

    def __init__(self, *, available: int, name: str | None = None):
        self.available = max(available, 0)
        what = name or "that product"
        if self.available == 0:
            message = f"Sorry, {what} is sold out."
        else:
            message = f"Sorry, only {self.available} left of {what}."
        super().__init__(message)


class AlreadyReserved(DomainError):
    message = "That product is already held for this cart."
    status = 409


class ReservationMissing(DomainError):
    message = "That product is no longer held for this cart."
    status = 409


class InvalidQuantity(DomainError):
    message = "Please choose a quantity of at least 1."


class FreeStockShort(DomainError):
    """An adjustment would take more units than are free (held and sold units
    are not the stockroom's to write off)."""

    status = 409

    def __init__(self, *, free: int, asked: int):
        self.free, self.asked = free, asked
        super().__init__(
            f"Refused: only {free} units are free, so {asked} cannot be taken "
            "off (free stock cannot go below zero). Nothing changed."
        )


class AlreadyRecorded(DomainError):
    """A ledger entry already carries this request's key: the form was sent
    twice (a double click, a retry, the Back button). Nothing was added;
    ``seq`` is the entry the first sending wrote, ``same`` whether this
    sending asked for the same movement."""

    status = 409

    def __init__(self, *, seq: int, same: bool, refused: bool = False):
        self.seq, self.same, self.refused = seq, same, refused
        if refused:
            message = (
                f"This write-off was already refused as ledger entry {seq}: "
                "the form was sent twice. Nothing changed."
            )
        elif same:
            message = (
                f"Already recorded as ledger entry {seq}: the form was sent "
                "twice and counted once."
            )
        else:
            message = (
                f"This form was already used for ledger entry {seq}, so "
                "nothing changed. The form is renewed: enter the movement "
                "again to record another."
            )
        super().__init__(message)


class InvalidProduct(DomainError):
    message = "That product is not valid."
    status = 400


class SkuTaken(DomainError):
    message = "That SKU belongs to another product."
    status = 409


class StockShort(DomainError):
    message = "Not enough of that variant in that store."
    status = 409


class InvalidStore(DomainError):
    message = "That store is not valid."
    status = 400


# --- Not found: the 404's reason ------------------------------------------------

NO_SUCH_DEPARTMENT = "No such department."
NO_SUCH_CATEGORY = "No such department or category."
NO_SUCH_VARIANT = "No such product variant."


# --- What the store and location choices say ----------------------------------

NOT_A_STORE = "Not a valid store."
STORE_GONE = "Your store is no longer available; showing online prices."
ONLINE_PRICES = "Showing online prices."


def store_chosen(store) -> str:
    return f"Prices and stock for {store.name}."


def no_store_near(place: str) -> str:
    return f"We have no store near “{place}”. Try a town or postcode."
