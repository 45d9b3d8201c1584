"""Catalog pages: parse with a form, call one selector or service, render.

Every page is a full page without JavaScript; with htmx, a request renders
only the partial named after the element it replaces.
"""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from catalog import errors as say
from catalog import events
from catalog.errors import UnknownStore
from catalog.forms import (
    BrowseForm,
    ItemForm,
    LocationForm,
    StoreChoiceForm,
    safe_next,
)
from catalog.selectors.browse import SORTS, browse
from catalog.selectors.products import item_page
from catalog.selectors.stores import Location, location_lookup, store_get, stores_list
from config.errors import DomainError
from config.http import (
    HtmxHttpRequest,
    answers_refusals,
    not_found,
    render_page_or_partial,
)


def _refused(request, exc: DomainError, *args, **kwargs):
    """A refusal becomes its status: 404 for unknown things, else a page."""
    if exc.status == 404:
        raise not_found(exc) from None
    return _problem(request, exc.message, status=exc.status)


def _problem(request, message: str, *, status: int):
    return render(request, "catalog/problem.html", {"message": message}, status=status)


def _render(request, template, partial, context, status=200):
    """The partial named after the element an htmx request replaces, else
    the page; the same URL answers both, so the response varies on htmx."""
    return render_page_or_partial(
        request, template, partial, context, status=status, vary=True
    )


@require_safe
def browse_page(request: HtmxHttpRequest, path: str = ""):
    form = BrowseForm(request.GET, path=path)
    if not form.path_ok:
        raise Http404(say.NO_SUCH_DEPARTMENT)
    valid = form.is_valid()
    page = browse(form.browse_query())
    if not page.exists:
        raise Http404(say.NO_SUCH_CATEGORY)
    if page.query.text and page.query.after is None:
        events.searched.send(
            sender=None, request=request, text=page.query.text, results=page.total
        )
    context = {"form": form, "page": page, "sorts": SORTS, "chips": form.chips()}
    # A filter not understood is a 400 to a browser, but htmx swaps no 4xx:
    # its request gets the redrawn results, with what was not understood, as
    # every htmx refusal does (a 200).
    status = 200 if valid or request.htmx else 400
    return _render(request, "catalog/browse.html", "browse", context, status=status)


def _location(request) -> Location | None:
    """The shopper's saved location; anything malformed counts as none (and
    is forgotten): what a session holds is never trusted blindly."""
    saved = request.session.get("location")
    if not saved:
        return None
    try:
        lng, lat, label = float(saved["lng"]), float(saved["lat"]), str(saved["label"])
    except (TypeError, KeyError, ValueError):
        lng = lat = float("nan")
    if not (-180 <= lng <= 180 and -90 <= lat <= 90):
        request.session.pop("location", None)
        return None
    return Location(lng=lng, lat=lat, label=label[:80])


def _store_id(request) -> str | None:
    store_id = request.session.get("store_id")
    return store_id if isinstance(store_id, str) and store_id else None


@require_safe
@answers_refusals(_refused)
def item_detail(request: HtmxHttpRequest, item_id: str):
    form = ItemForm(request.GET)
    if not form.is_valid():
        raise Http404(say.NO_SUCH_VARIANT)
    store_id = _store_id(request)
    try:
        page = item_page(
            item_id=item_id,
            sku=form.cleaned_data["sku"],
            store_id=store_id,
            location=_location(request),
        )
    except UnknownStore:
        # The store was closed since the shopper chose it: shop online.
        request.session.pop("store_id", None)
        messages.info(request, say.STORE_GONE)
        page = item_page(
            item_id=item_id, sku=form.cleaned_data["sku"], location=_location(request)
        )
    events.item_viewed.send(
        sender=None,
        request=request,
        item_id=page.item_id,
        sku=page.chosen.sku if page.chosen else None,
    )
    return _render(request, "catalog/item.html", "variant-panel", {"page": page})


@require_POST
@answers_refusals(_refused)
def store_choose(request: HtmxHttpRequest):
    form = StoreChoiceForm(request.POST)
    if not form.is_valid():
        return _problem(request, say.NOT_A_STORE, status=400)
    store_id = form.cleaned_data["store_id"]
    if store_id:
        store = store_get(store_id=store_id)  # UnknownStore: 404
        request.session["store_id"] = store.store_id
        messages.success(request, say.store_chosen(store))
    else:
        request.session.pop("store_id", None)
        messages.success(request, say.ONLINE_PRICES)
    return redirect(safe_next(request, form.cleaned_data["next"]))


@require_POST
def location_set(request: HtmxHttpRequest):
    form = LocationForm(request.POST)
    if not form.is_valid():
        message = " ".join(e for errors in form.errors.values() for e in errors)
        return _problem(request, message, status=400)
    data = form.cleaned_data
    if data["clear"]:
        request.session.pop("location", None)
    elif data["lat"] is not None:
        request.session["location"] = {
            "lng": data["lng"],
            "lat": data["lat"],
            "label": "your location",
        }
    else:
        found = location_lookup(text=data["place"])
        if found is None:
            messages.error(request, say.no_store_near(data["place"]))
        else:
            request.session["location"] = {
                "lng": found.lng,
                "lat": found.lat,
                "label": found.label,
            }
    return redirect(safe_next(request, data["next"]))


@require_safe
def store_list(request: HtmxHttpRequest):
    return render(
        request,
        "catalog/stores.html",
        {"stores": stores_list(), "current": request.session.get("store_id")},
    )
