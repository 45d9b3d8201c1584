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


def owner_of(request, *, create: bool = False) -> str | None:
    """The request's owner key; a new session token only when ``create``."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    owner = anonymous_owner(request)
    if owner is None and create:
        request.session[SESSION_KEY] = secrets.token_urlsafe(18)
        owner = anonymous_owner(request)
    return owner


def forget_anonymous_owner(request) -> None:
    request.session.pop(SESSION_KEY, None)
