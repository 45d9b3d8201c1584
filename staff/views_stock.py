"""Stock pages (role Shop manager): stock per SKU, low stock, and one SKU's
page with its ledger and the actions (receive, adjust, threshold, a store's
count). Thin: a form, one selector or service, a render or a redirect."""

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from catalog.errors import AlreadyRecorded
from catalog.selectors.stock import stock_ledger, stock_low
from catalog.selectors.stock_report import sku_store_counts, stock_report, stock_row
from catalog.selectors.stores import stores_list
from config.http import answers_refusals, not_found, valid
from staff.access import staff_permission
from staff.forms import (
    AdjustForm,
    ReceiveForm,
    StockSearchForm,
    StoreStockForm,
    ThresholdForm,
)
from staff.selectors.orders import timeline
from staff.services.stock import (
    staff_adjust_stock,
    staff_receive_stock,
    staff_set_store_stock,
    staff_set_threshold,
)
from staff.views import _context, _page_params

STOCK = "manage_stock"


@require_GET
@staff_permission(STOCK)
def stock(request):
    stores = stores_list()
    form = StockSearchForm(request.GET or None, stores=stores)
    page, status = None, 200
    if not form.is_bound or form.is_valid():
        data = form.cleaned_data if form.is_bound else {}
        page = stock_report(
            q=data.get("q") or "",
            store_id=data.get("store") or "",
            after=data.get("after") or "",
        )
    else:
        status = 400
    store = form.cleaned_data.get("store") if form.is_bound and form.is_valid() else ""
    return render(
        request,
        "staff/stock.html",
        _context(
            request,
            form=form,
            page=page,
            params=_page_params(request),
            store=store,
            section="stock",
        ),
        status=status,
    )


# The low-stock page lists the fewest-free first, this many at most.
LOW_SHOWN = 200


def _lowest() -> dict:
    rows = stock_low(limit=LOW_SHOWN + 1)
    return {"rows": rows[:LOW_SHOWN], "more_low": len(rows) > LOW_SHOWN}


@require_GET
@staff_permission(STOCK)
def low_stock(request):
    return render(
        request,
        "staff/low_stock.html",
        _context(
            request,
            **_lowest(),
            default_threshold=settings.LOW_STOCK_THRESHOLD,
            section="stock",
        ),
    )


def _row_or_404(sku: str):
    row = stock_row(sku=sku)
    if row is None:
        raise Http404("No such SKU.")
    return row


@require_GET
@staff_permission(STOCK)
def stock_sku(request, sku):
    stores = stores_list()
    counts = sku_store_counts(sku=sku)
    return render(
        request,
        "staff/stock_sku.html",
        _context(
            request,
            row=_row_or_404(sku),
            ledger=stock_ledger(sku=sku),
            events=timeline(kind="sku", object_id=sku),
            stores=[(s, counts.get(s.store_id)) for s in stores],
            receive=ReceiveForm(),
            adjust=AdjustForm(),
            threshold=ThresholdForm(),
            store_form=StoreStockForm(stores=stores),
            section="stock",
        ),
    )


def _back_to_sku(request, exc, sku):
    if exc.status == 404:
        raise not_found(exc)  # no such SKU: no page to go back to
    if stock_row(sku=sku) is None:
        # A bad form for a SKU that does not exist: its page would be a 404
        # that never shows the message.
        raise Http404("No such SKU.")
    if isinstance(exc, AlreadyRecorded) and exc.same and not exc.refused:
        messages.info(request, exc.message)  # a repeat: the first one counted
    else:
        messages.error(request, exc.message)
    return redirect("staff:stock_sku", sku=sku)


@require_POST
@staff_permission(STOCK)
@answers_refusals(_back_to_sku)
def stock_receive(request, sku):
    data = valid(ReceiveForm(request.POST)).cleaned_data
    staff_receive_stock(
        user=request.user,
        sku=sku,
        quantity=data["quantity"],
        note=data["note"],
        key=data["key"],
    )
    messages.success(request, f"Received {data['quantity']} units of {sku}.")
    return redirect("staff:stock_sku", sku=sku)


@require_POST
@staff_permission(STOCK)
@answers_refusals(_back_to_sku)
def stock_adjust(request, sku):
    data = valid(AdjustForm(request.POST)).cleaned_data
    staff_adjust_stock(
        user=request.user,
        sku=sku,
        delta=data["delta"],
        kind=data["kind"],
        note=data["note"],
        key=data["key"],
    )
    messages.success(request, f"Adjusted {sku} by {data['delta']:+d} units.")
    return redirect("staff:stock_sku", sku=sku)


@require_POST
@staff_permission(STOCK)
@answers_refusals(_back_to_sku)
def stock_threshold(request, sku):
    threshold = valid(ThresholdForm(request.POST)).cleaned_data["threshold"]
    staff_set_threshold(user=request.user, sku=sku, threshold=threshold)
    words = "the default" if threshold is None else str(threshold)
    messages.success(request, f"Low-stock threshold of {sku}: {words}.")
    return redirect("staff:stock_sku", sku=sku)


@require_POST
@staff_permission(STOCK)
@answers_refusals(_back_to_sku)
def stock_store(request, sku):
    data = valid(StoreStockForm(request.POST, stores=stores_list())).cleaned_data
    staff_set_store_stock(
        user=request.user, sku=sku, store_id=data["store"], quantity=data["quantity"]
    )
    messages.success(request, f"Store count of {sku} set to {data['quantity']}.")
    return redirect("staff:stock_sku", sku=sku)
