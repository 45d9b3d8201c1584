"""Who owns a cart: the request's user, or a token in the signed session.

Owner keys are ``user:<id>`` for a logged-in shopper and ``anon:<token>``
for anyone else; the token lives in ``request.session`` (a signed cookie,
so it cannot be forged or guessed) and is made on the first cart change.
"""

import secrets

SESSION_KEY = "shop_owner"


def anonymous_owner(request) -> str | None:
    # A request without a session (no middleware ran) has no shopper yet.
    session = getattr(request, "session", None)
    token = session.get(SESSION_KEY) if session is not None else None
    return f"anon:{token}" if isinstance(token, str) and token else None


# Set on a request whose own handling made the shopper's token.
_MINTED = "_shop_owner_minted"


def owner_of(request, *, create: bool = False) -> str | None:
    """The request's owner key; a new session token only when ``create``."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    owner = anonymous_owner(request)
    if owner is None and create:
        request.session[SESSION_KEY] = secrets.token_urlsafe(18)
        setattr(request, _MINTED, True)
        owner = anonymous_owner(request)
    return owner


def owns_nothing_yet(request) -> bool:
    """Whether the request's owner can own nothing to look up: a token this
    very request made, on a GET or HEAD. No cart names the token before it
    was made, and no view that writes a cart answers a safe method (they
    are ``require_POST``), so the page's cart badge and "Recently viewed"
    need no query. A new visitor's first product page is the common case
    (its view is logged, which makes the token)."""
    return request.method in ("GET", "HEAD") and getattr(request, _MINTED, False)


def forget_anonymous_owner(request) -> None:
    request.session.pop(SESSION_KEY, None)
