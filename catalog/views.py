"""Catalog pages: parse with a form, call one selector or service, render.

Every page is a full page without JavaScript; with htmx, a request renders
only the partial named after the element it replaces.
"""

from functools import wraps

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST, require_safe

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


def domain_errors(view):
    """A domain error becomes its status: 404 for unknown things, else a page."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except DomainError as exc:
            if exc.status == 404:
                raise Http404(exc.message) from None
            return render(
                request,
                "catalog/problem.html",
                {"message": exc.message},
                status=exc.status,
            )

    return wrapper


def _partial(request, template: str, name: str) -> str:
    """The partial for an htmx swap; the whole page otherwise.

    A history restore (back button with a cold cache) wants the whole page.
    """
    if request.htmx and not request.htmx.history_restore_request:
        return f"{template}#{name}"
    return template


def _render(request, template, partial, context, status=200):
    response = render(
        request, _partial(request, template, partial), context, status=status
    )
    # The same URL answers with a page or a fragment: caches must tell them apart.
    patch_vary_headers(response, ["HX-Request"])
    return response


@require_safe
def browse_page(request, path: str = ""):
    form = BrowseForm(request.GET, path=path)
    if not form.path_ok:
        raise Http404("No such department.")
    valid = form.is_valid()
    page = browse(form.browse_query())
    if not page.exists:
        raise Http404("No such department or category.")
    context = {"form": form, "page": page, "sorts": SORTS, "chips": form.chips()}
    return _render(
        request, "catalog/browse.html", "browse", context, status=200 if valid else 400
    )


def _location(request) -> Location | None:
    saved = request.session.get("location")
    if not saved:
        return None
    return Location(lng=saved["lng"], lat=saved["lat"], label=saved["label"])


@require_safe
@domain_errors
def item_detail(request, item_id: str):
    form = ItemForm(request.GET)
    if not form.is_valid():
        raise Http404("No such product variant.")
    store_id = request.session.get("store_id")
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
        messages.info(
            request, "Your store is no longer available; showing online prices."
        )
        page = item_page(
            item_id=item_id, sku=form.cleaned_data["sku"], location=_location(request)
        )
    return _render(request, "catalog/item.html", "variant-panel", {"page": page})


@require_POST
@domain_errors
def store_choose(request):
    form = StoreChoiceForm(request.POST)
    if not form.is_valid():
        return render(
            request,
            "catalog/problem.html",
            {"message": "Not a valid store."},
            status=400,
        )
    store_id = form.cleaned_data["store_id"]
    if store_id:
        store = store_get(store_id=store_id)  # UnknownStore: 404
        request.session["store_id"] = store.store_id
        messages.success(request, f"Prices and stock for {store.name}.")
    else:
        request.session.pop("store_id", None)
        messages.success(request, "Showing online prices.")
    return redirect(safe_next(request, form.cleaned_data["next"]))


@require_POST
def location_set(request):
    form = LocationForm(request.POST)
    if not form.is_valid():
        message = " ".join(e for errors in form.errors.values() for e in errors)
        return render(request, "catalog/problem.html", {"message": message}, status=400)
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
            messages.error(
                request,
                f"We have no store near “{data['place']}”. Try a town or postcode.",
            )
        else:
            request.session["location"] = {
                "lng": found.lng,
                "lat": found.lat,
                "label": found.label,
            }
    return redirect(safe_next(request, data["next"]))


@require_safe
def store_list(request):
    return render(
        request,
        "catalog/stores.html",
        {"stores": stores_list(), "current": request.session.get("store_id")},
    )
