"""Links to a shop page that leave the site: in emails and calendar files."""

from django.conf import settings
from django.urls import reverse


def order_url(order) -> str:
    """The order's secret link: it works without logging in."""
    return reverse("shop:order_link", args=[order.number, order.token])


def order_link(order) -> str:
    """``order_url`` with the site's address (``SITE_URL``), for an email
    or a calendar file."""
    return settings.SITE_URL + order_url(order)


def order_page(order) -> str:
    """The account's page of the order (it asks to log in), with the site's
    address: for where the secret link must not go (a calendar file)."""
    return settings.SITE_URL + reverse("shop:order", args=[order.number])
