"""An order's tickets as a person keeps them: a QR code of each ticket's
code (segno), a PDF with one page per ticket (fpdf2) and a calendar file
per performance (icalendar). Pure: an Order in, bytes or markup out.

The QR code holds exactly the ticket code (``XXXX-XXXX-XXXX``), the string
the staff check-in page accepts.
"""

import io
from datetime import timedelta

import segno
from django.utils import timezone
from fpdf import FPDF
from icalendar import Calendar, Event

from shop.links import order_page
from shop.selectors.orders import order_tickets

# A performance with no end known to the order: what a calendar shows.
ASSUMED_LENGTH = timedelta(hours=3)


def qr_code(code: str) -> segno.QRCode:
    """The ticket's QR code: its code and nothing else, error level M."""
    return segno.make(code, error="m", micro=False)


def qr_svg(code: str, *, title: str = "") -> str:
    """Inline SVG markup of the ticket's QR code (no request goes out)."""
    return qr_code(code).svg_inline(
        scale=4, border=4, title=title or f"QR code of ticket {code}", omitsize=True
    )


def _latin1(text: str) -> str:
    # The PDF's built-in fonts are Latin-1; anything else shows as "?".
    return str(text).encode("latin-1", "replace").decode("latin-1")


def _when(start) -> str:
    return timezone.localtime(start).strftime("%A %-d %B %Y, %H:%M")


def _ticket_page(pdf: FPDF, order, line) -> None:
    ticket = line.ticket
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 24)
    pdf.multi_cell(0, 12, _latin1(ticket.show), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 14)
    rows = [
        ("Date", _when(ticket.start)),
        ("Theater", ticket.theater),
        ("Seat", ticket.label),
        ("Zone", ticket.zone_name),
        ("Price", f"£{line.unit_price}"),
        ("Order", order.number),
    ]
    for label, value in rows:
        pdf.set_font("Helvetica", "B", 12)
        pdf.cell(30, 9, label)
        pdf.set_font("Helvetica", "", 12)
        pdf.cell(0, 9, _latin1(value), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(6)
    png = io.BytesIO()
    qr_code(line.code).save(png, kind="png", scale=10, border=4)
    png.seek(0)
    pdf.image(png, x=pdf.l_margin, w=70, h=70)
    pdf.set_font("Courier", "B", 20)
    pdf.cell(0, 12, line.code, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    pdf.multi_cell(0, 5, "Show this page (printed or on a phone) at the door.")


def tickets_pdf(order) -> bytes:
    """One A4 page per valid ticket of the order (a refunded ticket has no
    page: its code no longer opens the door)."""
    pdf = FPDF(format="A4")
    pdf.set_title(f"Marquee tickets, order {order.number}")
    pdf.set_author("Marquee")
    for group in order_tickets(order):
        for line in group.lines:
            if line.returned_at is None:
                _ticket_page(pdf, order, line)
    if not pdf.pages:
        pdf.add_page()
        pdf.set_font("Helvetica", "", 14)
        pdf.cell(0, 10, f"Order {order.number} has no valid tickets.")
    return bytes(pdf.output())


def performance_ics(order, session_id: str) -> bytes | None:
    """A calendar event for one performance of the order (None: the order
    has no tickets for it)."""
    group = next(
        (g for g in order_tickets(order) if g.lines[0].key == session_id), None
    )
    if group is None:
        return None
    seats = ", ".join(line.ticket.label for line in group.lines)
    calendar = Calendar()
    calendar.add("prodid", "-//Marquee//Tickets//EN")
    calendar.add("version", "2.0")
    event = Event()
    event.add("uid", f"{order.number}-{session_id}@marquee")
    event.add("summary", group.show)
    event.add("dtstart", group.start)
    event.add("dtend", group.start + ASSUMED_LENGTH)
    event.add("dtstamp", order.paid_at or order.created_at)
    event.add("location", group.theater)
    event.add(
        "description",
        # Not the order's secret link: a calendar is often shared, and the
        # link opens (and cancels) the order. Its owner has it in the email.
        f"Marquee order {order.number}: {seats}. Tickets: in the order's "
        f"confirmation email, or at {order_page(order)} when logged in.",
    )
    calendar.add_component(event)
    return calendar.to_ical()
