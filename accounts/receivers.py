"""The shop's order events become emails (connected in AccountsConfig.ready)."""

import logging

from django.contrib import messages

from accounts.mail import queue
from shop.documents import REFUNDED

log = logging.getLogger("marquee.accounts.mail")

# The moves ``order_moved`` announces that send an email (a payment is
# announced by ``orders_paid``).
EMAIL_ON = {REFUNDED: "refunded"}


def order_moved(sender, order, before, after, at, **kwargs) -> None:
    """Queue the confirmation of a refunded order. Never raises: the order
    changed already, and a queue that fails must not undo a page."""
    kind = EMAIL_ON.get(after)
    if kind is None:
        return
    try:
        queue("send_order_email", str(order["_id"]), kind)
    except Exception:
        log.exception("order %s: could not queue its %s email", order["number"], kind)


def orders_paid(sender, paid, **kwargs) -> None:
    """Queue the confirmations of paid orders announced together: one task
    for all (it sends each order's email once). Raises if the queue fails:
    the orders stay to be announced again (shop.services.settle)."""
    queue("send_order_emails", [str(order["_id"]) for order, _ in paid], "paid")


def logged_out(sender, request, user, **kwargs) -> None:
    """Logging out lands on the home page, saying so (the session is gone;
    messages live in their own signed cookie)."""
    if request is not None and hasattr(request, "_messages"):
        messages.info(request, "You are logged out. See you soon.")
