"""The cart page and the shopper's changes to it.

A refusal becomes a toast for htmx requests and a message plus a redirect
for full page loads (``_refused``); either way nothing changed.
"""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from catalog.documents import location_parts
from config.errors import DomainError
from config.http import HtmxHttpRequest, answers_refusals, valid
from shop import errors as say
from shop import events
from shop.errors import CartExpired
from shop.forms import (
    AddToCartForm,
    LineForm,
    SetQuantityForm,
    SkuForm,
    TicketRemoveForm,
)
from shop.identity import owner_of
from shop.selectors.carts import cart_view, expired_cart, live_cart, offer
from shop.services.carts import (
    cart_add,
    cart_clear,
    cart_extend_hold,
    cart_remove_item,
    cart_set_quantity,
)
from shop.services.tickets import cart_release_seats
from shop.views.common import with_units


@require_GET
def cart_page(request: HtmxHttpRequest):
    owner = owner_of(request)
    view = cart_view(owner=owner)
    if view is None and expired_cart(owner=owner) is not None:
        return redirect("shop:expired")
    return render(request, "shop/cart.html", with_units({"view": view}))


def _after_change(request, *, message: str = "", error: str = "", expired=False):
    """The cart as it now is: the summary partial for htmx, else a redirect."""
    if request.htmx:
        if expired:
            response = render(request, "shop/_toast.html", {"toast": error})
            response["HX-Redirect"] = reverse("shop:expired")
            return response
        context = {
            "view": cart_view(owner=owner_of(request)),
            "toast": error or message,
            "level": "error" if error else "success",
        }
        return render(request, "shop/cart.html#cart-update", with_units(context))
    if error:
        messages.error(request, error)
    elif message:
        messages.success(request, message)
    return redirect("shop:expired" if expired else "shop:cart", permanent=False)


def _refused(request, exc: DomainError):
    return _after_change(
        request, error=exc.message, expired=isinstance(exc, CartExpired)
    )


@require_POST
@answers_refusals(_refused)
def update(request: HtmxHttpRequest):
    form = valid(SetQuantityForm(request.POST))
    owner, sku = owner_of(request), form.cleaned_data["sku"]
    before = _line_before(owner, sku)
    cart_set_quantity(owner=owner, **form.cleaned_data)
    _announce(request, owner, before, form.cleaned_data["quantity"])
    return _after_change(request, message=say.CART_UPDATED)


@require_POST
@answers_refusals(_refused)
def remove(request: HtmxHttpRequest):
    form = valid(LineForm(request.POST))
    owner = owner_of(request)
    before = _line_before(owner, form.cleaned_data["sku"])
    cart_remove_item(owner=owner, **form.cleaned_data)
    _announce(request, owner, before, 0)
    return _after_change(request, message=say.REMOVED)


def _line_before(owner, sku: str):
    """The cart's line of ``sku`` before a change (what the change's
    announcement compares with); None when there is none."""
    cart = live_cart(owner=owner)
    return next((x for x in cart.items if x.sku == sku), None) if cart else None


def _announce(request, owner, before, quantity: int) -> None:
    if before is not None and quantity != before.quantity:
        events.cart_line_changed.send(
            sender=None,
            request=request,
            owner=owner,
            sku=location_parts(before.sku)[0],
            item_id=before.item_id,
            delta=quantity - before.quantity,
        )


@require_POST
@answers_refusals(_refused)
def clear(request: HtmxHttpRequest):
    cart_clear(owner=owner_of(request))
    return _after_change(request, message=say.CART_EMPTIED)


@require_POST
@answers_refusals(_refused)
def extend(request: HtmxHttpRequest):
    cart = cart_extend_hold(owner=owner_of(request))
    return _after_change(request, message=say.hold_extended(cart))


@require_POST
@answers_refusals(_refused)
def remove_tickets(request: HtmxHttpRequest):
    """The cart page's "Remove" for one seat, or for a performance's seats."""
    data = valid(TicketRemoveForm(request.POST)).cleaned_data
    owner = owner_of(request)
    freed = cart_release_seats(
        owner=owner, session_id=data["session"], seats=data["seat"] or None
    )
    if freed.seats:
        events.seats_changed.send(
            sender=None, request=request, owner=owner, hold=freed, held=False
        )
    return _after_change(request, message=say.REMOVED)


# --- adding --------------------------------------------------------------------


def _add_answer(request, *, error: str = "", back: str = "", units=None):
    if request.htmx:
        context = {
            "toast": error or say.ADDED,
            "level": "error" if error else "success",
            **(units or {}),
        }
        return render(request, "shop/_added.html", context)
    if error:
        messages.error(request, error)
        return redirect(back)
    messages.success(request, say.ADDED)
    return redirect("shop:cart")


def _add_refused(request, exc: DomainError):
    """Back to the product's add page, or to the cart when the form did not
    validate or there is no such product (its page would not exist)."""
    form = AddToCartForm(request.POST)
    back = reverse("shop:cart")
    if exc.status != 404 and form.is_valid():
        back = f"{reverse('shop:add')}?sku={form.cleaned_data['sku']}"
    return _add_answer(request, error=exc.message, back=back)


@require_http_methods(["GET", "POST"])
@answers_refusals(_add_refused)
def add(request: HtmxHttpRequest):
    """GET: a small page offering one SKU (works without JS); POST: add it."""
    if request.method == "GET":
        return _offer_page(request)
    form = valid(AddToCartForm(request.POST))
    owner, sku = owner_of(request, create=True), form.cleaned_data["sku"]
    added = cart_add(owner=owner, **form.cleaned_data)
    events.cart_line_changed.send(
        sender=None,
        request=request,
        owner=owner,
        sku=sku,
        item_id=added.item_id,
        delta=form.cleaned_data["quantity"],
    )
    return _add_answer(request, units={"cart_units": added.units})


def _offer_page(request):
    form = SkuForm(request.GET)
    if not form.is_valid():
        raise Http404(say.NO_SUCH_PRODUCT)
    try:
        found = offer(sku=form.cleaned_data["sku"])
    except DomainError:
        raise Http404(say.NO_SUCH_PRODUCT) from None
    return render(request, "shop/add.html", {"offer": found})


@require_GET
def expired(request: HtmxHttpRequest):
    cart = expired_cart(owner=owner_of(request))
    if cart is None:
        return redirect("shop:cart")
    return render(request, "shop/cart_expired.html", {"cart": cart})
