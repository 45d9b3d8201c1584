"""The activity log's pieces on other apps' pages.

The catalog and the shop sit below the log and cannot call it; their
templates load these tags, as the item page includes the shop's add form.
Each tag reads one selector and renders a partial of ``templates/activity/``.
"""

from django import template

from activity import kinds
from activity.selectors import bought_together, recently_viewed
from shop.identity import owner_of, owns_nothing_yet

register = template.Library()


@register.inclusion_tag("activity/_recently_viewed.html", takes_context=True)
def recently_viewed_items(context, exclude: str = ""):
    """The current shopper's recently viewed items (not ``exclude``); none
    for a shopper this page has just given a token (no query)."""
    request = context["request"]
    if owns_nothing_yet(request):
        return {"offers": [], "request": request}
    user = kinds.shopper(owner_of(request))
    found = recently_viewed(user=user, exclude={exclude} if exclude else set())
    return {"offers": found, "request": context["request"]}


@register.inclusion_tag("activity/_bought_together.html", takes_context=True)
def often_bought_with(context, item_id: str):
    """Items often bought with this one, each with a one-click add."""
    found = bought_together(item_ids=[item_id])
    return {
        "offers": found,
        "title": "Often bought together",
        "csrf_token": context.get("csrf_token"),
        "request": context["request"],
    }


@register.inclusion_tag("activity/_bought_together.html", takes_context=True)
def cart_suggestions(context, view):
    """Partners of the cart's product lines that the cart does not hold."""
    lines = view.product_lines if view is not None and not view.empty else []
    item_ids = [line.line.item_id for line in lines]
    found = [o for o in bought_together(item_ids=item_ids) if o.item_id not in item_ids]
    return {
        "offers": found,
        "title": "You might also like",
        "csrf_token": context.get("csrf_token"),
        "request": context["request"],
    }
