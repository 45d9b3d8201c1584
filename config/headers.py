"""Response headers for privacy: pages with personal data are never cached,
and every page says which browser features it may use."""

from django.conf import settings
from django.utils.cache import add_never_cache_headers

# Pages that show an email, an address, ticket codes or a cart: by the url
# name's namespace or full name. (Staff pages say so in their own views.)
PRIVATE_NAMESPACES = {"accounts", "staff"}
PRIVATE_NAMES = {
    "login",
    "logout",
    "password_change",
    "password_change_done",
    "password_reset",
    "password_reset_done",
    "password_reset_confirm",
    "password_reset_complete",
    "shop:cart",
    "shop:checkout",
    "shop:expired",
    "shop:orders",
    "shop:order",
    "shop:order_link",
    "shop:order_pdf",
    "shop:order_link_pdf",
    "shop:order_ics",
    "shop:order_link_ics",
}


def is_private(request) -> bool:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return False
    return match.namespace in PRIVATE_NAMESPACES or match.view_name in PRIVATE_NAMES


class PrivatePagesMiddleware:
    """``Cache-Control: no-store`` on private pages; a Permissions-Policy."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if is_private(request):
            add_never_cache_headers(response)
            response["Cache-Control"] = "no-store, private, max-age=0"
        response.setdefault("Permissions-Policy", settings.PERMISSIONS_POLICY)
        return response
