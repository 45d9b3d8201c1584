"""An order's tickets to keep: the PDF (one page per ticket) and a calendar
file per performance, for the order's owner or its secret link's holder."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.views.decorators.http import require_GET

from config.http import HtmxHttpRequest, answers_refusals
from shop import errors as say
from shop.identity import owner_of
from shop.printing import performance_ics, tickets_pdf
from shop.selectors.orders import order_by_link, order_of_owner


def _no_order(request, exc, **kwargs):
    raise Http404(say.NO_SUCH_ORDER) from None


def _pdf(order) -> HttpResponse:
    response = HttpResponse(tickets_pdf(order), content_type="application/pdf")
    name = f"marquee-{order.number}-tickets.pdf"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _ics(order, session_id: str) -> HttpResponse:
    body = performance_ics(order, session_id)
    if body is None:
        raise Http404(say.NO_SUCH_PERFORMANCE)
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    name = f"marquee-{order.number}-{session_id}.ics"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_GET
@answers_refusals(_no_order)
def my_order_pdf(request: HtmxHttpRequest, number: str):
    return _pdf(order_of_owner(owner=owner_of(request), number=number))


@require_GET
@answers_refusals(_no_order)
def order_link_pdf(request: HtmxHttpRequest, number: str, token: str):
    return _pdf(order_by_link(number=number, token=token))


@login_required
@require_GET
@answers_refusals(_no_order)
def my_order_ics(request: HtmxHttpRequest, number: str, session_id: str):
    return _ics(order_of_owner(owner=owner_of(request), number=number), session_id)


@require_GET
@answers_refusals(_no_order)
def order_link_ics(request: HtmxHttpRequest, number: str, token: str, session_id: str):
    return _ics(order_by_link(number=number, token=token), session_id)
