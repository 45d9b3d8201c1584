"""Orders of no account become an account's: on login (the same browser
placed them, lately) or by their email (proven by a link sent to it, see
accounts).

Orders of no account are a shopper's anonymous ones and the box office's
(sold at the counter to a named customer, shop/services/box_office.py); a
box-office order can only be claimed by its email."""

from datetime import datetime, timedelta

from django.conf import settings

from shop.documents import PENDING_PAYMENT
from shop.services.common import orders, utcnow

ANONYMOUS = "anon:"
BOX_OFFICE = "boxoffice:"
# The owners of orders no account has claimed yet.
_UNCLAIMED = f"^({ANONYMOUS}|{BOX_OFFICE})"


def _attach(query: dict, to_owner: str) -> int:
    """Move the matching orders of no account to ``to_owner``; how many.

    One update, guarded on the order still being anonymous and no longer
    in checkout (a checkout finds its order by the cart's owner until it is
    paid), so an account never takes another account's order and a run
    twice changes nothing more.
    """
    if not isinstance(to_owner, str) or not to_owner.startswith("user:"):
        return 0
    guard = {
        **query,
        "owner": {**query.get("owner", {}), "$regex": _UNCLAIMED},
        "state": {"$ne": PENDING_PAYMENT},
    }
    return orders().update_many(guard, {"$set": {"owner": to_owner}}).modified_count


def orders_attach(
    *, from_owner: str, to_owner: str, now: datetime | None = None
) -> int:
    """The recent orders of an anonymous shopper (``anon:<token>``, this
    browser) are the account's from now on: those placed in the last
    ``ORDERS_FOLLOW_LOGIN_MINUTES``. A browser keeps its anonymous shopper
    for weeks, and on a shared computer the next person to log in is not
    the one who bought; older orders wait for their email's claim
    (``orders_attach_by_email``). Returns how many moved."""
    if not isinstance(from_owner, str) or not from_owner.startswith(ANONYMOUS):
        return 0
    since = utcnow(now) - timedelta(minutes=settings.ORDERS_FOLLOW_LOGIN_MINUTES)
    return _attach(
        {"owner": {"$eq": from_owner}, "created_at": {"$gte": since}}, to_owner
    )


def orders_attach_by_email(*, email: str, to_owner: str) -> int:
    """Orders of no account placed with ``email`` (as typed, or in lower
    case: orders keep it in lower case, older ones perhaps as typed),
    anonymous or bought at the box office, are the account's. The
    caller has proven the account owns the address. Returns how many
    moved."""
    if not isinstance(email, str) or "@" not in email:
        return 0
    return _attach({"email": {"$in": sorted({email, email.lower()})}}, to_owner)
