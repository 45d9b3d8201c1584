"""Checkout and the shopper's orders."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from config.errors import DomainError
from config.http import HtmxHttpRequest, answers_refusals
from shop import errors as say
from shop import events
from shop.errors import (
    CardDeclined,
    CartEmpty,
    CartExpired,
    CartNotFound,
    OrderNotFound,
    PaymentFailed,
)
from shop.forms import ADDRESS_FIELDS, CheckoutForm
from shop.identity import owner_of
from shop.links import order_url
from shop.selectors.carts import cart_view
from shop.selectors.orders import (
    order_by_link,
    order_collect_points,
    order_of_owner,
    order_tickets,
    orders_of_owner,
    owner_may_cancel,
)
from shop.services.checkout import cart_pay
from shop.services.orders import order_cancel
from shop.views.common import with_units

# A refused checkout's form (without the card) and its reason, carried to
# the page the shopper is redirected to (POST, redirect, GET: Back never
# shows a stale form that answered a POST).
REFUSED = "shop_checkout_refused"


def _checkout_page(request, form: CheckoutForm | None, *, status: int = 200):
    refused = request.session.pop(REFUSED, None) if form is None else None
    view = cart_view(owner=owner_of(request))
    if view is None or view.empty:
        messages.info(request, say.CART_EMPTY_AT_CHECKOUT)
        return redirect("shop:cart")
    if form is None:
        email = request.user.email if request.user.is_authenticated else ""
        initial = {"email": email, **(refused or {}).get("data", {})}
        form = CheckoutForm(
            initial={**initial, "cart": view.cart_id},
            needs_address=view.needs_address,
        )
    if refused and refused["field"]:
        # The refusal (a declined card) is no form error, so the widget is
        # told by hand that it is invalid and which message describes it.
        form.fields[refused["field"]].widget.attrs.update(
            {
                "aria-invalid": "true",
                "aria-describedby": f"id_{refused['field']}_error",
            }
        )
    context = {
        "form": form,
        "view": view,
        "refused": refused,
        "needs_address": view.needs_address,
    }
    return render(request, "shop/checkout.html", with_units(context), status=status)


def _checkout_refused(request, exc: DomainError):
    """An expired cart goes to its page; any other refusal goes back to the
    form with the reason (a declined card under the card number)."""
    if isinstance(exc, CartNotFound):
        raise Http404(say.NO_SUCH_CART) from None
    if isinstance(exc, CartExpired):
        messages.error(request, exc.message)
        return redirect("shop:expired")
    if isinstance(exc, CartEmpty):
        messages.info(request, say.CART_EMPTY_AT_CHECKOUT)
        return redirect("shop:cart")
    if isinstance(exc, CardDeclined):
        events.card_declined.send(sender=None, request=request)
    kept = ("email", *ADDRESS_FIELDS)
    request.session[REFUSED] = {
        "data": {name: request.POST.get(name, "")[:254] for name in kept},
        "field": "card_number" if isinstance(exc, PaymentFailed) else "",
        "message": exc.message,
    }
    return redirect("shop:checkout", permanent=False)


@never_cache
@require_http_methods(["GET", "POST"])
@answers_refusals(_checkout_refused)
def checkout(request: HtmxHttpRequest):
    if request.method != "POST":
        return _checkout_page(request, None)
    # The address as given: the checkout refuses goods without one.
    form = CheckoutForm(request.POST, needs_address=None)
    if not form.is_valid():
        return _checkout_page(request, form, status=400)
    data = form.cleaned_data
    paid = cart_pay(
        owner=owner_of(request),
        cart_id=data["cart"],
        email=data["email"],
        shipping=form.shipping(),
        card=form.card(),
    )
    messages.success(request, say.order_paid(paid))
    return redirect(order_url(paid))


def _order_page(request, order, *, cancel_url: str, status: int = 200):
    context = {
        "order": order,
        "link": order_url(order),
        "tickets": order_tickets(order),
        "collect_points": order_collect_points(order),
        "has_goods": any(line.ticket is None for line in order.lines),
        "can_cancel": owner_may_cancel(order),
        "cancel_url": cancel_url,
    }
    return render(request, "shop/order.html", context, status=status)


def _no_order(request, exc: DomainError, **kwargs):
    raise Http404(say.NO_SUCH_ORDER) from None


@require_GET
@answers_refusals(_no_order)
def order_link(request: HtmxHttpRequest, number: str, token: str):
    order = order_by_link(number=number, token=token)
    cancel_url = reverse("shop:order_link_cancel", args=[number, token])
    return _order_page(request, order, cancel_url=cancel_url)


@login_required
@require_GET
def my_orders(request: HtmxHttpRequest):
    orders = orders_of_owner(owner=owner_of(request))
    return render(request, "shop/orders.html", {"orders": orders})


@login_required
@require_GET
@answers_refusals(_no_order)
def my_order(request: HtmxHttpRequest, number: str):
    order = order_of_owner(owner=owner_of(request), number=number)
    cancel_url = reverse("shop:order_cancel", args=[number])
    return _order_page(request, order, cancel_url=cancel_url)


def _cancel_refused(request, exc: DomainError, *, back: str, **kwargs):
    if isinstance(exc, OrderNotFound):
        raise Http404(say.NO_SUCH_ORDER) from None
    messages.error(request, exc.message)
    return redirect(back)


@answers_refusals(_cancel_refused)
def _cancel(request, *, number: str, back: str, **proof):
    order = order_cancel(number=number, **proof)
    messages.success(request, say.order_canceled(order))
    return redirect(back)


@login_required
@require_POST
def my_order_cancel(request: HtmxHttpRequest, number: str):
    """Cancel one of the logged-in shopper's orders (someone else's: 404)."""
    back = reverse("shop:order", args=[number])
    return _cancel(request, number=number, back=back, owner=owner_of(request))


@require_POST
def order_link_cancel(request: HtmxHttpRequest, number: str, token: str):
    """Cancel the order behind a secret link (a wrong token: 404)."""
    back = reverse("shop:order_link", args=[number, token])
    return _cancel(request, number=number, back=back, token=token)
