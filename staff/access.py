"""Who may open a staff page or send a staff POST.

Anonymous -> the login page (with ``next``); logged in but not staff -> 403;
staff without the permission -> 403. One decorator on every staff view, so
a GET and a POST of the same URL are checked alike.
"""

from functools import wraps
from urllib.parse import urlsplit

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme


def _come_back_to(request) -> str:
    """Where to go after logging in: the page asked for; for a form sent
    after the session ended (a POST, which nothing changed), the page the
    form was on, since its action answers no GET."""
    if request.method in ("GET", "HEAD"):
        return request.get_full_path()
    came_from = request.headers.get("referer", "")
    if url_has_allowed_host_and_scheme(
        came_from, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        parts = urlsplit(came_from)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        if path.startswith("/") and not path.startswith(("//", "/\\")):
            return path  # a path of this site, never one read as another host
    return reverse("staff:dashboard")


def staff_permission(*codenames: str):
    perms = [f"staff.{c}" for c in codenames]

    def decorate(view):
        @wraps(view)
        def checked(request, *args, **kwargs):
            user = request.user
            if not user.is_authenticated:
                return redirect_to_login(_come_back_to(request))
            if not user.is_active or not user.is_staff:
                raise PermissionDenied("Staff only.")
            if not user.has_perms(perms):
                raise PermissionDenied("Your role does not allow this.")
            return view(request, *args, **kwargs)

        checked.staff_permissions = tuple(perms)
        return checked

    return decorate


def refund_permissions(kinds: set[str]) -> list[str]:
    """A refund touches each kind the order holds: the role needs each."""
    needed = []
    if "ticket" in kinds:
        needed.append("staff.refund_ticket_orders")
    if kinds - {"ticket"}:
        needed.append("staff.refund_goods_orders")
    return needed
