"""Thin views of the shop app: parse with a form, call a service, render.

A refusal (a DomainError) becomes a toast for htmx requests and a message
plus a redirect for full page loads; either way nothing changed.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from booking.errors import SessionNotFound
from booking.forms import BestAvailableForm, ReleaseSeatsForm, SeatsForm
from booking.views import render_seat_map
from config.errors import DomainError
from shop.errors import CartExpired, CartNotFound, OrderNotFound, PaymentFailed
from shop.forms import (
    AddToCartForm,
    CheckoutForm,
    SetQuantityForm,
    SkuForm,
    TicketRemoveForm,
)
from shop.identity import owner_of
from shop.selectors.carts import cart_view, expired_cart, offer, units_in
from shop.selectors.orders import (
    order_by_link,
    order_of_owner,
    order_tickets,
    orders_of_owner,
    owner_may_cancel,
)
from shop.services.carts import (
    cart_add_item,
    cart_clear,
    cart_extend_hold,
    cart_remove_item,
    cart_set_quantity,
)
from shop.services.checkout import cart_checkout
from shop.services.orders import order_cancel
from shop.services.tickets import (
    cart_hold_best_available,
    cart_hold_seats,
    cart_release_seats,
)


def _first_error(form) -> str:
    for errors in form.errors.values():
        return errors[0]
    return "Please check what you entered."


def order_url(order) -> str:
    """The order's secret link: it works without logging in."""
    return reverse("shop:order_link", args=[order.number, order.token])


# --- the cart page and its changes ------------------------------------------


@require_GET
def cart_page(request):
    owner = owner_of(request)
    view = cart_view(owner=owner)
    if view is None and expired_cart(owner=owner) is not None:
        return redirect("shop:expired")
    return render(request, "shop/cart.html", _with_units({"view": view}))


def _with_units(context: dict) -> dict:
    """The badge's count from the cart view at hand (spares its query)."""
    view = context["view"]
    return {**context, "cart_units": view.units if view is not None else 0}


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
        return render(request, "shop/cart.html#cart-update", _with_units(context))
    if error:
        messages.error(request, error)
    elif message:
        messages.success(request, message)
    return redirect("shop:expired" if expired else "shop:cart", permanent=False)


def _change(request, form, action, message: str):
    if not form.is_valid():
        return _after_change(request, error=_first_error(form))
    try:
        action(owner=owner_of(request), **form.cleaned_data)
    except CartExpired as exc:
        return _after_change(request, error=exc.message, expired=True)
    except DomainError as exc:
        return _after_change(request, error=exc.message)
    return _after_change(request, message=message)


@require_POST
def update(request):
    return _change(
        request, SetQuantityForm(request.POST), cart_set_quantity, "Cart updated."
    )


@require_POST
def remove(request):
    return _change(
        request, SkuForm(request.POST), cart_remove_item, "Removed from your cart."
    )


@require_POST
def clear(request):
    return _change(request, _Empty(), cart_clear, "Your cart is empty now.")


@require_POST
def extend(request):
    return _change(
        request, _Empty(), cart_extend_hold, "Your items are held for longer."
    )


@require_POST
def remove_tickets(request):
    """The cart page's "Remove" for one seat, or for a performance's seats."""

    def release(*, owner, session, seat):
        return cart_release_seats(owner=owner, session_id=session, seats=seat or None)

    return _change(
        request, TicketRemoveForm(request.POST), release, "Removed from your cart."
    )


class _Empty:
    """The form of an action that takes no input."""

    cleaned_data: dict = {}

    def is_valid(self) -> bool:
        return True


# --- adding --------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def add(request):
    """GET: a small page offering one SKU (works without JS); POST: add it."""
    if request.method == "GET":
        form = SkuForm(request.GET)
        if not form.is_valid():
            raise Http404("No such product.")
        try:
            found = offer(sku=form.cleaned_data["sku"])
        except DomainError:
            raise Http404("No such product.") from None
        return render(request, "shop/add.html", {"offer": found})

    form = AddToCartForm(request.POST)
    back = reverse("shop:cart")
    units = {}  # the badge counts the cart itself unless the add returned it
    if form.is_valid():
        back = f"{reverse('shop:add')}?sku={form.cleaned_data['sku']}"
        try:
            cart = cart_add_item(
                owner=owner_of(request, create=True), **form.cleaned_data
            )
        except DomainError as exc:
            error = exc.message
            if exc.status == 404:  # no such product: its page would not exist
                back = reverse("shop:cart")
        else:
            error = ""
            units = {"cart_units": units_in(cart)}
    else:
        error = _first_error(form)
    if request.htmx:
        context = {
            "toast": error or "Added to your cart.",
            "level": "error" if error else "success",
            **units,
        }
        return render(request, "shop/_added.html", context)
    if error:
        messages.error(request, error)
        return redirect(back)
    messages.success(request, "Added to your cart.")
    return redirect("shop:cart")


@require_GET
def expired(request):
    cart = expired_cart(owner=owner_of(request))
    if cart is None:
        return redirect("shop:cart")
    return render(request, "shop/cart_expired.html", {"cart": cart})


# --- seats on the seat map ---------------------------------------------------------


def _join(labels) -> str:
    labels = list(labels)
    if len(labels) == 1:
        return labels[0]
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def _seat_answer(request, session_id: str, *, message="", error="", status=400):
    """The seat map as it now is. htmx: the map partial with a toast, 200
    even for a refusal (htmx swaps no 4xx, and the redrawn map IS the
    answer). Without JS: a refusal redraws the page with its status, a
    success redirects back to it."""
    if request.htmx:
        return render_seat_map(
            request,
            session_id=session_id,
            message=error or message,
            message_level="error" if error else "success",
        )
    if error:
        messages.error(request, error)
        return render_seat_map(
            request, session_id=session_id, status=status, partial=False
        )
    messages.success(request, message)
    return redirect("booking:session", session_id=session_id)


def _seat_change(request, session_id: str, form, action, success):
    if not form.is_valid():
        return _seat_answer(request, session_id, error=_first_error(form))
    try:
        changed = action(**form.cleaned_data)
    except SessionNotFound:
        raise Http404("No such performance.") from None
    except DomainError as exc:
        return _seat_answer(request, session_id, error=exc.message, status=exc.status)
    return _seat_answer(request, session_id, message=success(changed))


@require_POST
def hold_seats(request, session_id: str):
    """A click on a free seat (or the list view's "Hold"): hold it."""

    def hold(*, seat):
        return cart_hold_seats(
            owner=owner_of(request, create=True), session_id=session_id, seats=seat
        )

    return _seat_change(
        request,
        session_id,
        SeatsForm(request.POST),
        hold,
        lambda held: f"{_join(held.labels)}: held for you.",
    )


@require_POST
def release_seats(request, session_id: str):
    """A click on one of the shopper's seats: release it (none given: all)."""

    def release(*, seat):
        return cart_release_seats(
            owner=owner_of(request), session_id=session_id, seats=seat or None
        )

    return _seat_change(
        request,
        session_id,
        ReleaseSeatsForm(request.POST),
        release,
        lambda freed: (
            f"{_join(freed.labels)}: released." if freed.seats else "Seats removed."
        ),
    )


@require_POST
def best_seats(request, session_id: str):
    """The "Best available: n seats in zone Z" button."""

    def best(*, count, zone):
        return cart_hold_best_available(
            owner=owner_of(request, create=True),
            session_id=session_id,
            count=count,
            zone=zone,
        )

    return _seat_change(
        request,
        session_id,
        BestAvailableForm(request.POST),
        best,
        lambda held: f"We found {_join(held.labels)} for you.",
    )


# --- checkout and orders --------------------------------------------------------


@require_http_methods(["GET", "POST"])
def checkout(request):
    owner = owner_of(request)
    status = 200
    if request.method == "POST":
        form = CheckoutForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                order = cart_checkout(
                    owner=owner,
                    cart_id=data["cart"],
                    email=data["email"],
                    shipping=form.shipping(),
                    card=form.card(),
                )
            except CartNotFound:
                raise Http404("No such cart.") from None
            except CartExpired as exc:
                messages.error(request, exc.message)
                return redirect("shop:expired")
            except PaymentFailed as exc:
                form.add_error("card_number", exc.message)
                status = exc.status
            except DomainError as exc:
                form.add_error(None, exc.message)
                status = exc.status
            else:
                messages.success(request, f"Thank you! Order {order.number} is paid.")
                return redirect(order_url(order))
        else:
            status = 400
    else:
        form = None
    view = cart_view(owner=owner)
    if view is None or view.empty:
        messages.info(request, "Your cart is empty.")
        return redirect("shop:cart")
    if form is None:
        email = request.user.email if request.user.is_authenticated else ""
        form = CheckoutForm(initial={"cart": view.cart_id, "email": email})
    return render(
        request,
        "shop/checkout.html",
        _with_units({"form": form, "view": view}),
        status=status,
    )


def _order_page(request, order, *, cancel_url: str, status: int = 200):
    context = {
        "order": order,
        "link": order_url(order),
        "tickets": order_tickets(order),
        "has_goods": any(line.ticket is None for line in order.lines),
        "can_cancel": owner_may_cancel(order),
        "cancel_url": cancel_url,
    }
    return render(request, "shop/order.html", context, status=status)


@require_GET
def order_link(request, number: str, token: str):
    try:
        order = order_by_link(number=number, token=token)
    except OrderNotFound:
        raise Http404("No such order.") from None
    cancel_url = reverse("shop:order_link_cancel", args=[number, token])
    return _order_page(request, order, cancel_url=cancel_url)


@login_required
@require_GET
def my_orders(request):
    orders = orders_of_owner(owner=owner_of(request))
    return render(request, "shop/orders.html", {"orders": orders})


@login_required
@require_GET
def my_order(request, number: str):
    try:
        order = order_of_owner(owner=owner_of(request), number=number)
    except OrderNotFound:
        raise Http404("No such order.") from None
    cancel_url = reverse("shop:order_cancel", args=[number])
    return _order_page(request, order, cancel_url=cancel_url)


def _cancel(request, *, number: str, back: str, **proof):
    try:
        order = order_cancel(number=number, **proof)
    except OrderNotFound:
        raise Http404("No such order.") from None
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Order {order.number} is canceled and refunded; its seats are back"
            " on sale.",
        )
    return redirect(back)


@login_required
@require_POST
def my_order_cancel(request, number: str):
    """Cancel one of the logged-in shopper's orders (someone else's: 404)."""
    back = reverse("shop:order", args=[number])
    return _cancel(request, number=number, back=back, owner=owner_of(request))


@require_POST
def order_link_cancel(request, number: str, token: str):
    """Cancel the order behind a secret link (a wrong token: 404)."""
    back = reverse("shop:order_link", args=[number, token])
    return _cancel(request, number=number, back=back, token=token)
