"""Who may open a staff page or send a staff POST.

Anonymous -> the login page (with ``next``); logged in but not staff -> 403;
staff without the permission -> 403. One decorator on every staff view, so
a GET and a POST of the same URL are checked alike.
"""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied


def staff_permission(*codenames: str):
    perms = [f"staff.{c}" for c in codenames]

    def decorate(view):
        @wraps(view)
        def checked(request, *args, **kwargs):
            user = request.user
            if not user.is_authenticated:
                return redirect_to_login(request.get_full_path())
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
