"""Box office pages (role Box office): performances, scheduling, the staff
seat map, check-in. Thin: a form, one selector or service, a render; a
refusal (a DomainError) goes to the view's answer (config.http)."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from booking.selectors import theaters_list
from config.http import answers_refusals, render_page_or_partial, valid
from staff.access import staff_permission
from staff.forms import (
    PerformanceFilterForm,
    ReasonForm,
    SaleForm,
    ScheduleForm,
    SeatsForm,
    TicketCodeForm,
    UndoAdmissionForm,
)
from staff.selectors.performances import (
    performance,
    performance_list,
    recent_scans,
    staff_seat_map,
)
from staff.services.boxoffice import (
    staff_admit,
    staff_block_seats,
    staff_release_seat_hold,
    staff_schedule_performance,
    staff_sell_seats,
    staff_unblock_seats,
    staff_undo_admission,
)
from staff.views import _context

SESSIONS = "manage_sessions"


def _performance_or_404(session_id):
    found = performance(session_id=session_id)
    if found is None:
        raise Http404("No such performance.")
    return found


@require_GET
@staff_permission(SESSIONS)
def performances(request):
    theaters = theaters_list()
    form = PerformanceFilterForm(request.GET or None, theaters=theaters)
    rows, status = [], 200
    if not form.is_bound or form.is_valid():
        data = form.cleaned_data if form.is_bound else {}
        rows = performance_list(
            when=data.get("when") or "upcoming",
            show=data.get("show") or "",
            theater_id=data.get("theater") or "",
            day=data.get("day"),
        )
    else:
        status = 400
    when = (form.cleaned_data.get("when") if form.is_bound else "") or "upcoming"
    return render(
        request,
        "staff/performances.html",
        _context(request, form=form, rows=rows, when=when, section="boxoffice"),
        status=status,
    )


def _schedule_form(request, data=None, *, wanted=None, typed=None):
    """The form for the theater ``wanted`` (or the one ``data`` names);
    ``typed``: what was typed before choosing another theater, kept."""
    theaters = theaters_list()
    wanted = wanted or (data or request.GET).get("theater")
    chosen = next((t for t in theaters if t.theater_id == wanted), None)
    chosen = chosen or (theaters[0] if theaters else None)
    initial = {"theater": chosen.theater_id} if chosen else {}
    initial.update(typed or {})
    return ScheduleForm(data, theaters=theaters, chosen=chosen, initial=initial)


def _schedule_page(request, form, status=200):
    return render(
        request,
        "staff/schedule.html",
        _context(request, form=form, section="boxoffice"),
        status=status,
    )


def _schedule_refused(request, exc):
    form = _schedule_form(request, request.POST)
    form.is_valid()
    form.add_error(None, exc.message)
    return _schedule_page(request, form, status=exc.status)


@staff_permission(SESSIONS)
@answers_refusals(_schedule_refused)
def schedule(request):
    if request.method != "POST" or "choose" in request.POST:
        # Choosing a theater (no JavaScript needed) redraws its price fields.
        chosen = request.POST.get("theater")
        typed = {
            name: request.POST[name]
            for name in ("show", "start", "end", "key")
            if request.POST.get(name)
        }
        return _schedule_page(
            request, _schedule_form(request, wanted=chosen, typed=typed)
        )
    form = valid(_schedule_form(request, request.POST))
    data = form.cleaned_data
    session_id = staff_schedule_performance(
        user=request.user,
        theater_id=data["theater"],
        show=data["show"],
        start=data["start"],
        end=data["end"],
        prices=form.prices(),
        key=data["key"],
    )
    messages.success(request, f"{data['show']} is on sale.")
    return redirect("staff:seat_map", session_id=session_id)


def _not_found(request, exc, *args, **kwargs):
    raise Http404(exc.message)


@require_GET
@staff_permission(SESSIONS)
@answers_refusals(_not_found)
def seat_map(request, session_id):
    return _seat_map_page(request, session_id)


def _seat_map_page(request, session_id, *, posted=None, status=200):
    """The staff seat map; ``posted``: a refused form's values, drawn again
    (the seats ticked, the reason, the customer) so nothing typed is lost."""
    return render(
        request,
        "staff/seat_map.html",
        _context(
            request,
            m=staff_seat_map(session_id=session_id),
            perf=_performance_or_404(session_id),
            form=ReasonForm(),
            posted=posted or {},
            posted_seats=posted.getlist("seat") if posted else [],
            section="boxoffice",
        ),
        status=status,
    )


def _back_to_map(request, exc, session_id, **kwargs):
    _performance_or_404(session_id)  # no such performance: no map to go back to
    messages.error(request, exc.message)
    # The map's own form (its seats, reason, customer) is drawn as sent; a
    # cart release's form is one per cart, and starts empty again.
    posted = None if "cart_id" in kwargs else request.POST
    return _seat_map_page(request, session_id, posted=posted, status=exc.status)


@require_POST
@staff_permission(SESSIONS, "release_carts")
@answers_refusals(_back_to_map)
def seat_map_release(request, session_id, cart_id):
    form = valid(ReasonForm(request.POST))
    staff_release_seat_hold(
        user=request.user,
        session_id=session_id,
        cart_id=cart_id,
        reason=form.cleaned_data["reason"],
    )
    messages.success(
        request,
        "Hold released: the cart's seats are back as they were (on sale, or blocked).",
    )
    return redirect("staff:seat_map", session_id=session_id)


@require_POST
@staff_permission(SESSIONS)
@answers_refusals(_back_to_map)
def seat_map_block(request, session_id):
    form = valid(SeatsForm(request.POST, need_reason=True))
    block = staff_block_seats(
        user=request.user,
        session_id=session_id,
        seats=form.cleaned_data["seats"],
        reason=form.cleaned_data["reason"],
    )
    messages.success(request, f"Blocked: {'; '.join(block.labels)}.")
    return redirect("staff:seat_map", session_id=session_id)


@require_POST
@staff_permission(SESSIONS)
@answers_refusals(_back_to_map)
def seat_map_unblock(request, session_id):
    form = valid(SeatsForm(request.POST))
    block = staff_unblock_seats(
        user=request.user, session_id=session_id, seats=form.cleaned_data["seats"]
    )
    messages.success(request, f"Back on sale: {'; '.join(block.labels)}.")
    return redirect("staff:seat_map", session_id=session_id)


@require_POST
@staff_permission(SESSIONS)
@answers_refusals(_back_to_map)
def seat_map_sell(request, session_id):
    form = valid(SaleForm(request.POST))
    data = form.cleaned_data
    order = staff_sell_seats(
        user=request.user,
        session_id=session_id,
        seats=data["seats"],
        name=data["name"],
        email=data["email"],
        phone=data["phone"],
    )
    messages.success(
        request,
        f"Sold to {order.customer_name}: order {order.number}, tickets sent to "
        f"{order.email}.",
    )
    return redirect("staff:seat_map", session_id=session_id)


# --- Check-in ------------------------------------------------------------------


def _check_in_page(request, session_id, *, result=None, refusal=None, status=200):
    context = _context(
        request,
        perf=_performance_or_404(session_id),
        form=TicketCodeForm(),
        result=result,
        refusal=refusal,
        scans=recent_scans(session_id=session_id),
        now=timezone.now(),
        section="boxoffice",
    )
    return render_page_or_partial(
        request,
        "staff/check_in.html",
        "scan",
        context,
        # htmx swaps no 4xx: a refused scan is drawn with 200 there.
        status=200 if request.htmx else status,
    )


def _scan_refused(request, exc, session_id):
    return _check_in_page(request, session_id, refusal=exc, status=exc.status)


@staff_permission(SESSIONS)
@answers_refusals(_scan_refused)
def check_in(request, session_id):
    """GET: the scanner page; POST: admit the code typed or scanned."""
    if request.method != "POST":
        return _check_in_page(request, session_id)
    form = TicketCodeForm(request.POST)
    code = valid(form).cleaned_data["code"]
    _performance_or_404(session_id)
    admission = staff_admit(user=request.user, session_id=session_id, code=code)
    return _check_in_page(request, session_id, result=admission)


@require_GET
@staff_permission(SESSIONS)
def check_in_counter(request, session_id):
    return render(
        request,
        "staff/check_in.html#counter",
        {"perf": _performance_or_404(session_id)},
    )


def _undo_refused(request, exc, session_id):
    _performance_or_404(session_id)  # no such performance: no page to go back to
    messages.error(request, exc.message)
    return redirect("staff:check_in", session_id=session_id)


@require_POST
@staff_permission(SESSIONS)
@answers_refusals(_undo_refused)
def check_in_undo(request, session_id):
    form = valid(UndoAdmissionForm(request.POST))
    admission = staff_undo_admission(
        user=request.user,
        session_id=session_id,
        code=form.cleaned_data["code"],
        reason=form.cleaned_data["reason"],
    )
    messages.success(
        request, f"Admission undone: {admission.seat} ({admission.code}) admits again."
    )
    return redirect("staff:check_in", session_id=session_id)
