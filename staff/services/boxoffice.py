"""What the box office does: schedule performances, sell blocked seats to a
named customer, admit tickets at the door (and undo a mistaken scan). Each
action goes through the owner's service (booking's scheduling, the shop's
box-office sale and admissions) and is recorded in the audit trail with who
did it; permissions are the views' (staff.access).
"""

from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from booking.errors import InvalidRequest
from booking.selectors import cart_holds
from booking.services.blocks import seats_block, seats_unblock
from booking.services.layouts import session_schedule
from booking.values import Seat, SeatBlock
from shop.documents import Order
from shop.services.admissions import Admission, ticket_admission_undo, ticket_admit
from shop.services.box_office import box_office_sell
from staff.services.actions import StaffActionRefused, actor_of, staff_release_cart
from staff.services.audit import acting_as, audit_record

SESSION = "session"


def staff_release_seat_hold(*, user, session_id: str, cart_id: str, reason: str):
    """``staff_release_cart`` from a performance's seat map, for a cart that
    holds seats of this performance: a page gone stale (its hold ended, or
    the id was changed by hand) must not release some other cart. The
    whole cart is released, as when its hold time runs out (one hold time
    per cart, for its seats and its goods alike)."""
    try:
        holds = cart_holds(cart_id=cart_id)
    except InvalidRequest:  # not even a cart id (the URL was edited)
        holds = []
    if not any(hold.session_id == session_id for hold in holds):
        raise StaffActionRefused("That cart holds no seat of this performance now.")
    return staff_release_cart(user=user, cart_id=cart_id, reason=reason)


def staff_schedule_performance(
    *,
    user,
    theater_id: str,
    show: str,
    start: datetime,
    end: datetime,
    prices: dict[str, Decimal],
    key: str | None = None,
) -> str:
    """Put a performance on sale (booking's ``session_schedule``: no overlap
    in the theater, no start in the past, the form ``key`` sent twice
    schedules once); returns the session id. Audited once per session."""
    session_id = session_schedule(
        theater_id=theater_id,
        show=show,
        start=start,
        end=end,
        prices=prices,
        key=key,
    )
    audit_record(
        once_id=f"performance scheduled|{session_id}",
        action="performance scheduled",
        object_kind=SESSION,
        object_id=session_id,
        after="on sale",
        actor=actor_of(user),
        reason="",
        details={
            "show": show.strip(),
            "start": start.isoformat(),
            "end": end.isoformat(),
            "prices": {zone: str(price) for zone, price in prices.items()},
        },
    )
    return session_id


def _details(admission: Admission) -> dict:
    return {
        "code": admission.code,
        "order": admission.number,
        "seat": admission.seat,
        "name": admission.name,
    }


def staff_admit(*, user, session_id: str, code: str, now=None) -> Admission:
    """Admit a ticket at the door (the shop's ``ticket_admit``: one guarded
    update, so of two scanners exactly one admits); recorded on the session."""
    now = now or timezone.now()
    admission = ticket_admit(
        code=code, session_id=session_id, by=user.get_username(), now=now
    )
    audit_record(
        action="ticket admitted",
        object_kind=SESSION,
        object_id=session_id,
        before="not admitted",
        after="admitted",
        at=admission.admitted_at,
        actor=actor_of(user),
        reason="",
        details=_details(admission),
    )
    return admission


def staff_undo_admission(
    *, user, session_id: str, code: str, reason: str = ""
) -> Admission:
    """Take back a mistaken scan: the ticket admits again."""
    admission = ticket_admission_undo(code=code, session_id=session_id)
    audit_record(
        action="admission undone",
        object_kind=SESSION,
        object_id=session_id,
        before="admitted",
        after="not admitted",
        actor=actor_of(user),
        reason=(reason or "").strip()[:500] or "mistaken scan",
        details=_details(admission),
    )
    return admission


def _audit_block(action: str, user, block: SeatBlock, reason: str) -> None:
    audit_record(
        action=action,
        object_kind=SESSION,
        object_id=block.session_id,
        after=", ".join(block.labels),
        actor=actor_of(user),
        reason=reason,
        details={"seats": [f"{r}-{c}" for r, c in block.seats]},
    )


def staff_block_seats(
    *, user, session_id: str, seats: list[Seat], reason: str
) -> SeatBlock:
    """Hold seats back for the house (booking's ``seats_block``: all free, all
    blocked in one conditional update, or none) and audit it with the reason.
    Raises what seats_block raises."""
    block = seats_block(
        session_id=session_id, seats=seats, reason=reason, by=actor_of(user)
    )
    _audit_block("seats blocked", user, block, reason)
    return block


def staff_unblock_seats(*, user, session_id: str, seats: list[Seat]) -> SeatBlock:
    """Put blocked seats back on sale (booking's ``seats_unblock``, all or
    none) and audit it. Raises what seats_unblock raises."""
    block = seats_unblock(session_id=session_id, seats=seats, by=actor_of(user))
    _audit_block("seats unblocked", user, block, "")
    return block


def staff_sell_seats(
    *, user, session_id: str, seats: list[Seat], name: str, email: str, phone: str
) -> Order:
    """Sell blocked seats to a named customer at the counter (the shop's
    ``box_office_sell``: a staff cart holds them from BLOCKED, the shop's
    checkout pays it "box office"); the order's state changes are audited
    as this user's, and the sale on the performance. Raises what
    box_office_sell raises (nothing sold)."""
    actor = actor_of(user)
    with acting_as(actor, "box office sale"):
        order = box_office_sell(
            session_id=session_id,
            seats=seats,
            name=name,
            email=email,
            phone=phone,
            by=actor,
        )
    audit_record(
        action="seats sold at the box office",
        object_kind=SESSION,
        object_id=session_id,
        before="blocked",
        after=f"order {order.number}",
        actor=actor,
        reason="",
        details={
            "order": order.number,
            "customer": order.customer_name,
            "seats": [line.ticket.label for line in order.lines if line.ticket],
        },
    )
    return order
