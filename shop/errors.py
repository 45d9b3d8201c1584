"""What the shop tells the shopper: its refusals and its confirmations.

Refusals are domain errors (``message`` is shown to the shopper, ``status``
is the page's); the views raise none of their own and word no success
message of their own: both are here, so every sentence the shop says is in
one place.
"""

from config.errors import DomainError


class CartNotFound(DomainError):
    message = "That cart does not exist."
    status = 404


class CartInactive(DomainError):
    message = "Your cart can no longer be changed."
    status = 409


class CartExpired(DomainError):
    message = (
        "Your cart's hold has run out and its items went back on the shelves. "
        "Please add them again."
    )
    status = 409


class CartPending(DomainError):
    message = "Your payment is being processed; the cart cannot change meanwhile."
    status = 409


class CartEmpty(DomainError):
    message = "Your cart is empty."
    status = 409


class CartChanged(DomainError):
    message = "Your cart changed meanwhile; please check it and try again."
    status = 409


class LineNotInCart(DomainError):
    message = "That product is not in your cart."
    status = 404


class QuantityTooLarge(DomainError):
    status = 400

    def __init__(self, *, limit: int):
        super().__init__(f"You can have at most {limit} of one product in a cart.")


class ExtensionsUsed(DomainError):
    message = "Your hold has been extended as often as it can be."
    status = 409


class PricesChanged(DomainError):
    """Prices moved since the lines were added; the cart now shows the new ones."""

    status = 409

    def __init__(self, changes: list[str]):
        self.changes = changes
        super().__init__(
            "Prices changed since you added these items: "
            + "; ".join(changes)
            + ". Please review the new total and pay again."
        )


class LineUnavailable(DomainError):
    status = 409

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason} Please change your cart and try again.")


class PaymentFailed(DomainError):
    """The card was declined or the provider failed; nothing was charged."""

    status = 402


class CardDeclined(PaymentFailed):
    """The provider declined the card (not a failure of the provider's own):
    what the checkout view announces, so the decline limit counts it."""


class AddressNeeded(DomainError):
    """Goods to deliver but no delivery address (the cart gained goods since
    the page that asked for none)."""

    message = "Your cart has items to deliver: please give a delivery address."
    status = 400


class CheckoutTakenOver(DomainError):
    """This run's lease lapsed and the checkout was taken over (finished or
    reopened by a recovery, or by the shopper's next attempt) before it
    charged: it must not charge."""

    message = (
        "Your payment took too long to start and was stopped; you were not"
        " charged. Please check your cart and pay again."
    )
    status = 409


class CheckoutInProgress(DomainError):
    """Another run of this checkout holds its lease (``seconds`` left)."""

    message = "Your payment is already being processed; please wait a moment."
    status = 409

    def __init__(self, seconds: int | None = None):
        self.seconds = seconds
        super().__init__(
            None
            if seconds is None
            else "Your payment is already being processed. If this page does "
            f"not move on, submit again in {seconds} seconds: nothing will be "
            "charged twice."
        )


class OrderNotFound(DomainError):
    message = "That order does not exist."
    status = 404


class SeatsNotInCart(DomainError):
    message = "Those seats are not in your cart."
    status = 409


class OrderNotCancelable(DomainError):
    status = 409
    message = "This order can no longer be canceled."


class RefundFailed(DomainError):
    """The provider could not refund; the order stays paid, nothing changed."""

    status = 502
    message = (
        "The payment provider could not refund this order just now; it is still "
        "paid and nothing changed. Please try again in a moment."
    )


# --- Admission at the door (shop.services.admissions) ------------------------


class UnknownTicket(DomainError):
    status = 404
    message = "No ticket has this code. Check it and type it again."


class TicketForAnotherPerformance(DomainError):
    status = 409

    def __init__(self, show: str, start):
        from django.utils import timezone

        when = timezone.localtime(start).strftime("%a %d %b %H:%M")
        super().__init__(f"Wrong performance: this ticket is for {show}, {when}.")


class TicketRefunded(DomainError):
    status = 409
    message = "Refunded: this ticket's order was canceled, so it does not admit."


class TicketUnpaid(DomainError):
    status = 409
    message = "Not paid: this ticket's order was never paid, so it does not admit."


class TicketAlreadyAdmitted(DomainError):
    status = 409

    def __init__(self, at, by: str):
        from django.utils import timezone

        self.at, self.by = at, by
        when = timezone.localtime(at).strftime("%H:%M")
        super().__init__(f"Already admitted at {when} by {by}.")


class TicketNotAdmitted(DomainError):
    status = 409
    message = "This ticket has not been admitted: there is nothing to undo."


# --- Not found: the 404's reason (never shown to the shopper as such) ----------

NO_SUCH_PRODUCT = "No such product."
NO_SUCH_CART = "No such cart."
NO_SUCH_ORDER = "No such order."
NO_SUCH_PERFORMANCE = "No such performance."


# --- Confirmations ----------------------------------------------------------------

ADDED = "Added to your cart."
CART_UPDATED = "Cart updated."
REMOVED = "Removed from your cart."
CART_EMPTIED = "Your cart is empty now."
HOLD_EXTENDED = "Your items are held for longer."
CART_EMPTY_AT_CHECKOUT = "Your cart is empty."
SEATS_REMOVED = "Seats removed."


def _join(labels) -> str:
    labels = list(labels)
    if len(labels) == 1:
        return labels[0]
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def seats_held(held) -> str:
    return f"{_join(held.labels)}: held for you."


def seats_released(freed) -> str:
    return f"{_join(freed.labels)}: released." if freed.seats else SEATS_REMOVED


def best_seats_found(held) -> str:
    return f"We found {_join(held.labels)} for you."


def hold_extended(cart) -> str:
    """After "Hold them longer": until when, and how many more are left."""
    from django.utils import timezone

    from shop.limits import MAX_EXTENSIONS

    left = max(0, MAX_EXTENSIONS - cart.extensions)
    until = timezone.localtime(cart.expires_at).strftime("%H:%M")
    more = (
        f"{left} more extension{'s' if left != 1 else ''} left"
        if left
        else "that was the last extension"
    )
    return f"Your cart is now held until {until}: {more}."


def order_paid(order) -> str:
    return f"Thank you! Order {order.number} is paid."


def order_canceled(order) -> str:
    return f"Order {order.number} is canceled and refunded; its seats are back on sale."


# --- Per-order caps (shop/services/caps.py) ------------------------------------


class TooManySeats(DomainError):
    status = 409

    def __init__(self, *, limit: int):
        super().__init__(
            f"One order can have at most {limit} seats for a performance. "
            "Nothing was held; your seats are as they were."
        )


class TooManyLines(DomainError):
    status = 409

    def __init__(self, *, limit: int):
        super().__init__(
            f"A cart can have at most {limit} different products and "
            "performances. Check out this one, or remove something first."
        )


# --- Box-office sales (shop/services/box_office.py) ----------------------------


class CustomerInvalid(DomainError):
    """A box-office sale's customer: a name and a valid email are needed."""

    status = 400


class NotHouseSeats(DomainError):
    """A box-office sale of seats that are not blocked (free, held or sold)."""

    status = 409

    def __init__(self, labels=(), now: str = ""):
        seats = "; ".join(labels) or "Those seats"
        verb = "is" if len(labels) == 1 else "are"
        instead = f" ({now})" if now else ""
        super().__init__(
            f"{seats} {verb} not blocked{instead}. The box office sells blocked "
            "(house) seats only: block a free seat first; a held or sold one is "
            "someone else's. Nothing was sold."
        )
