"""Staff pages: thin. Reads come from staff.selectors, writes go through
staff.services; every view is wrapped by ``staff_permission``."""

from datetime import datetime, time, timedelta

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from config.errors import DomainError
from staff.access import refund_permissions, staff_permission
from staff.forms import OrderFilterForm, ReasonForm
from staff.roles import roles_of
from staff.selectors import carts as cart_selectors
from staff.selectors import jobs as job_selectors
from staff.selectors.dashboard import dashboard as dashboard_data
from staff.selectors.orders import (
    latest,
    order_detail,
    order_kinds,
    order_search,
    order_timeline,
)
from staff.services.actions import (
    refundable,
    staff_refund_order,
    staff_release_cart,
    staff_run_job,
)


def _page_params(request) -> str:
    """A list page's query without its position (``after``): the next
    page's link adds the position it starts after."""
    params = request.GET.copy()
    params.pop("after", None)
    return params.urlencode()


def _context(request, **extra):
    user = request.user
    return {
        "roles": roles_of(user),
        "can": {
            name: user.has_perm(f"staff.{name}")
            for name in (
                "view_dashboard",
                "view_orders",
                "view_carts",
                "release_carts",
                "view_jobs",
                "run_jobs",
                "manage_sessions",
                "manage_stock",
                "manage_staff",
            )
        },
        **extra,
    }


@require_GET
@staff_permission("view_dashboard")
def dashboard(request):
    return render(
        request,
        "staff/dashboard.html",
        _context(request, d=dashboard_data(), section="dashboard"),
    )


def _local_midnight(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


@require_GET
@staff_permission("view_orders")
def orders(request):
    form = OrderFilterForm(request.GET or None)
    page = None
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        page = order_search(
            q=data["q"],
            state=data["state"],
            kind=data["kind"],
            since=_local_midnight(data["since"]) if data["since"] else None,
            until=_local_midnight(data["until"] + timedelta(days=1))
            if data["until"]
            else None,
            after=data["after"] or None,
        )
    elif not form.is_bound:
        page = order_search()
    return render(
        request,
        "staff/orders.html",
        _context(
            request,
            form=form,
            page=page,
            params=_page_params(request),
            section="orders",
        ),
        status=200 if page is not None else 400,
    )


def _order_page(request, order, form, status=200):
    kinds = order_kinds(order)
    return render(
        request,
        "staff/order.html",
        _context(
            request,
            order=order,
            form=form,
            events=order_timeline(order),
            can_refund=request.user.has_perms(refund_permissions(kinds)),
            refundable=refundable(order.state),
            section="orders",
        ),
        status=status,
    )


@require_GET
@staff_permission("view_orders")
def order(request, number):
    found = order_detail(number=number)
    if found is None:
        raise Http404("No such order.")
    return _order_page(request, found, ReasonForm())


@require_POST
@staff_permission("view_orders")
def order_refund(request, number):
    found = order_detail(number=number)
    if found is None:
        raise Http404("No such order.")
    if not request.user.has_perms(refund_permissions(order_kinds(found))):
        raise PermissionDenied("Your role may not refund this kind of order.")
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return _order_page(request, found, form, status=400)
    try:
        staff_refund_order(
            user=request.user, number=number, reason=form.cleaned_data["reason"]
        )
    except DomainError as exc:
        form.add_error(None, exc.message)
        return _order_page(request, order_detail(number=number), form, status=409)
    messages.success(request, f"Order {number} canceled and refunded.")
    return redirect("staff:order", number=number)


@require_GET
@staff_permission("view_carts")
def carts(request):
    return render(
        request,
        "staff/carts.html",
        _context(
            request,
            carts=cart_selectors.live_carts(now=timezone.now()),
            form=ReasonForm(),
            section="carts",
        ),
    )


@require_POST
@staff_permission("view_carts", "release_carts")
def cart_release(request, cart_id):
    form = ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.errors["reason"][0])
        return redirect("staff:carts")
    try:
        staff_release_cart(
            user=request.user, cart_id=cart_id, reason=form.cleaned_data["reason"]
        )
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("staff:carts")
    messages.success(
        request,
        "Cart released: its units are back on sale, "
        "its seats back as they were (on sale, or blocked).",
    )
    return redirect("staff:carts")


@require_GET
@staff_permission("view_jobs")
def jobs(request):
    return render(
        request,
        "staff/jobs.html",
        _context(
            request,
            jobs=job_selectors.jobs(),
            entries=latest(kind="job", limit=20),
            section="jobs",
        ),
    )


@require_POST
@staff_permission("view_jobs", "run_jobs")
def job_run(request, schedule_id):
    try:
        staff_run_job(user=request.user, schedule_id=schedule_id)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("staff:jobs")
    messages.success(request, "Job queued: the cluster runs it within seconds.")
    return redirect("staff:jobs")
