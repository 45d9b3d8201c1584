"""The shop's emails and the tickets to keep: the order confirmation lands
in the file backend with the PDF attached, whose QR codes decode to the
ticket codes; the refund confirmation; retries, and the log line of an
email that could not be sent; the order page's QR codes, PDF and calendar
files."""

import io
import logging
import socket
import threading
from datetime import timedelta

import pytest
import zxingcpp
from bson import ObjectId
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from django_q.models import Schedule
from icalendar import Calendar
from pypdf import PdfReader

from accounts.documents import SentEmail
from accounts.tasks import CLAIM_STALE, send_order_email, send_order_emails
from shop.printing import qr_code, qr_svg
from tests.accounts.conftest import PASSWORD, sent
from tests.shop.factories import make_show
from tests.shop.test_views import checkout_data


@pytest.fixture
def show():
    return make_show(show="Hamlet", hall="The Globe")


def buy_seats(client, mongo_db, show, seats=("0-0", "2-3"), email="ada@example.com"):
    for seat in seats:
        assert (
            client.post(f"/cart/tickets/{show}/hold/", {"seat": seat}).status_code
            == 302
        )
    cart = mongo_db.carts.find_one({"state": "active"}, sort=[("modified_at", -1)])
    response = client.post("/checkout/", checkout_data(cart["_id"], email=email))
    assert response.status_code == 302
    return mongo_db.orders.find_one({"cart_id": cart["_id"]}), response["Location"]


def codes_of(order) -> list[str]:
    return [line["code"] for line in order["lines"] if line.get("code")]


def decoded_qr_codes(pdf_bytes: bytes) -> list[list[str]]:
    """Per page, the text of every QR code found in its images."""
    pages = []
    for page in PdfReader(io.BytesIO(pdf_bytes)).pages:
        found = []
        for image in page.images:
            found += [r.text for r in zxingcpp.read_barcodes(image.image)]
        pages.append(found)
    return pages


def test_the_confirmation_lands_with_the_pdf_whose_qr_decodes_to_each_code(
    client, mongo_db, show, mail_dir
):
    order, link = buy_seats(client, mongo_db, show)

    (message,) = sent(mail_dir)
    assert message["To"] == "ada@example.com"
    assert order["number"] in message["Subject"]
    body = message.get_body(("plain",)).get_content()
    codes = codes_of(order)
    assert all(code in body for code in codes)
    assert f"http://testserver{link}" in body
    assert "Total paid: £55.50" in body
    assert "Row A, seat 1" in body and "Row C, seat 4" in body
    (pdf,) = [
        p
        for p in message.iter_attachments()
        if p.get_content_type() == "application/pdf"
    ]
    content = pdf.get_content()
    assert decoded_qr_codes(content) == [[code] for code in codes]
    text = "\n".join(
        page.extract_text() for page in PdfReader(io.BytesIO(content)).pages
    )
    for words in ("Hamlet", "The Globe", "Row A, seat 1", "Stalls", "£35.00", *codes):
        assert words in text


def test_an_order_without_tickets_gets_its_email_without_a_pdf(
    client, mongo_db, mail_dir
):
    from tests.accounts.test_accounts import buy
    from tests.shop.factories import make_product

    make_product(sku="SNKR-42", title="JC Sneaker", price="25.00")
    buy(client, mongo_db)

    (message,) = sent(mail_dir)
    assert "1 x JC Sneaker" in message.get_content()
    assert list(message.iter_attachments()) == []


def test_a_refund_sends_its_confirmation(client, mongo_db, show, mail_dir):
    order, link = buy_seats(client, mongo_db, show, seats=("0-0",))

    client.post(link + "cancel/")

    first, refund = sent(mail_dir)
    assert "refunded" in refund["Subject"]
    assert "£35.00" in refund.get_content()
    assert mongo_db.orders.find_one({"_id": order["_id"]})["state"] == "refunded"


def test_an_email_is_sent_once_however_often_its_task_runs(
    client, mongo_db, show, mail_dir
):
    order, _ = buy_seats(client, mongo_db, show, seats=("0-0",))

    again = send_order_email(str(order["_id"]), "paid")

    assert again == "already sent"
    assert len(sent(mail_dir)) == 1
    assert SentEmail.objects(key=f"{order['number']}|paid").count() == 1


def send_paid(order_id):
    return send_order_email(order_id, "paid")


def test_runs_of_one_email_at_once_send_it_once(client, mongo_db, show, mail_dir, race):
    """A double submit announces a paid order twice: its email's tasks
    meet (processes released together), and only the claim's winner sends."""
    order, _ = buy_seats(client, mongo_db, show, seats=("0-0",))
    mongo_db.sent_emails.delete_many({})  # as if the checkout's had not run

    outcomes = race(send_paid, [(str(order["_id"]),)] * 6)

    # The others found it sent, or being sent (and look again later).
    assert outcomes.count("sent") == 1, outcomes
    assert set(outcomes) - {"sent"} <= {"already sent", "being sent"}, outcomes
    assert len(sent(mail_dir)) == 2  # the checkout's, and the winner's
    record = mongo_db.sent_emails.find_one()
    assert "sending" not in record


def test_a_claim_left_by_a_dead_sender_is_taken_over_later_not_at_once(
    client, mongo_db, show, mail_dir
):
    order, _ = buy_seats(client, mongo_db, show, seats=("0-0",))
    key = f"{order['number']}|paid"
    claim = {"_id": key, "to": "ada@example.com", "sending": True}
    mongo_db.sent_emails.replace_one({"_id": key}, {**claim, "at": timezone.now()})

    assert send_order_email(str(order["_id"]), "paid") == "being sent"
    assert len(sent(mail_dir)) == 1  # another run is sending it...
    # ... and should it die, this task looks again once its claim is stale.
    (again,) = Schedule.objects.filter(func="accounts.tasks.send_order_email")
    assert again.next_run >= timezone.now() + CLAIM_STALE - timedelta(minutes=1)

    long_ago = timezone.now() - CLAIM_STALE - timedelta(minutes=1)
    mongo_db.sent_emails.replace_one({"_id": key}, {**claim, "at": long_ago})
    assert send_order_email(str(order["_id"]), "paid") == "sent"
    assert len(sent(mail_dir)) == 2
    assert "sending" not in mongo_db.sent_emails.find_one({"_id": key})


def test_one_orders_failure_in_a_batch_leaves_the_others_sent(
    client, mongo_db, show, mail_dir
):
    first, _ = buy_seats(client, mongo_db, show, seats=("0-0",))
    second, _ = buy_seats(
        Client(), mongo_db, show, seats=("0-1",), email="b@example.com"
    )
    mongo_db.sent_emails.delete_many({})  # as if the batch's task had not run
    missing = str(ObjectId())  # an order whose read fails

    outcome = send_order_emails(
        [str(first["_id"]), missing, str(second["_id"])], "paid"
    )

    assert outcome == "sent, retrying, sent"
    assert len(sent(mail_dir)) == 4  # two at checkout, two again here
    (retry,) = Schedule.objects.all()
    assert retry.func == "accounts.tasks.send_order_email"
    assert missing in retry.args and "2" in retry.args


def closed_port() -> int:
    """A local port nothing listens on: the SMTP backend's connection is
    refused, as by a mail server that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_failed_send_is_tried_again_later_and_checkout_is_not_hurt(
    client, mongo_db, show, settings, mail_dir
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", closed_port()
    settings.EMAIL_TIMEOUT = 2

    order, link = buy_seats(client, mongo_db, show, seats=("0-0",))

    assert order["state"] == "paid"
    (retry,) = Schedule.objects.all()
    assert retry.func == "accounts.tasks.send_order_email"
    assert retry.schedule_type == Schedule.ONCE
    assert "2" in retry.args  # the second attempt
    assert not SentEmail.objects(key=f"{order['number']}|paid").count()
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    assert send_order_email(str(order["_id"]), "paid", 2) == "sent"
    assert len(sent(mail_dir)) == 1


def test_the_order_page_shows_each_qr_and_offers_the_pdf_and_calendar(
    client, mongo_db, show
):
    order, link = buy_seats(client, mongo_db, show)

    html = client.get(link).content.decode()

    for code in codes_of(order):
        assert qr_svg(code) in html
        # The markup is segno's drawing of exactly the code.
        png = io.BytesIO()
        qr_code(code).save(png, kind="png", scale=6)
        from PIL import Image

        png.seek(0)
        assert [r.text for r in zxingcpp.read_barcodes(Image.open(png))] == [code]
    assert f'href="{link}tickets.pdf"' in html
    assert f'href="{link}{show}.ics"' in html
    pdf = client.get(f"{link}tickets.pdf")
    assert pdf["Content-Type"] == "application/pdf"
    assert decoded_qr_codes(pdf.content) == [[c] for c in codes_of(order)]
    ics = client.get(f"{link}{show}.ics")
    (event,) = Calendar.from_ical(ics.content).walk("VEVENT")
    assert str(event["summary"]) == "Hamlet"
    assert str(event["location"]) == "The Globe"
    # Not the secret link (a calendar is often shared): the account's page.
    description = str(event["description"])
    assert f"{settings.SITE_URL}/orders/{order['number']}/ " in description
    assert link not in description


def test_the_tickets_files_need_the_link_or_the_owner(client, mongo_db, show):
    order, link = buy_seats(client, mongo_db, show, seats=("0-0",))
    stranger = Client()
    number = order["number"]

    assert stranger.get(f"/orders/{number}/{'x' * 32}/tickets.pdf").status_code == 404
    assert stranger.get(f"/orders/{number}/tickets.pdf").status_code == 302  # log in
    assert stranger.get(f"{link}{'0' * 24}.ics").status_code == 404
    assert stranger.get(f"{link}tickets.pdf").status_code == 200


def test_an_accounts_ticket_files_are_its_own(client, mongo_db, show, ada):
    assert client.login(username=ada.email, password=PASSWORD)
    order, link = buy_seats(client, mongo_db, show, seats=("0-0",))
    number = order["number"]
    mine = [f"/orders/{number}/tickets.pdf", f"/orders/{number}/{show}.ics"]
    get_user_model().objects.create_user("eve@example.com", "eve@example.com", PASSWORD)
    eve = Client()
    assert eve.login(username="eve@example.com", password=PASSWORD)

    assert [client.get(url).status_code for url in mine] == [200, 200]
    # Another account, logged in, is told no such order.
    assert [eve.get(url).status_code for url in mine] == [404, 404]
    # And the link's token is the whole key: a wrong one finds nothing.
    assert eve.get(f"/orders/{number}/{'x' * 32}/{show}.ics").status_code == 404
    assert eve.get(f"{link}{show}.ics").status_code == 200


def test_a_checkout_finished_after_a_crash_sends_the_confirmation_once(
    mongo_uri, mongo_db, mail_dir
):
    """The process stopped right after the order was marked paid, before
    anything heard of it: the reconciler finishes the checkout, and the
    shopper still gets the confirmation, once."""
    from shop import faults
    from shop.services.checkout import checkouts_recover
    from tests.concurrency.cart_processes import run_until_crash
    from tests.concurrency.test_crash_recovery import SOON, crash_at, setup_cart
    from tests.concurrency.test_crash_recovery import _checkout as checkout
    from tests.shop.factories import make_product

    make_product(sku="SHOE", stock=10)
    make_product(sku="HAT", stock=10)
    cart_id = setup_cart()
    code = run_until_crash(
        crash_at,
        ("checkout.after_paid_write", checkout, cart_id),
        uri=mongo_uri,
        db_name=mongo_db.name,
    )
    assert code == faults.EXIT_CODE
    order = mongo_db.orders.find_one({"cart_id": cart_id})
    assert order["state"] == "paid" and sent(mail_dir) == []

    assert checkouts_recover(now=SOON) == 1
    assert checkouts_recover(now=SOON) == 0

    (message,) = sent(mail_dir)
    assert message["To"] == "crash@example.com"
    assert order["number"] in message["Subject"]
    assert mongo_db.carts.find_one({"_id": cart_id})["state"] == "complete"


# --- what an email that cannot be sent leaves in the log -----------------------------


def mail_failures(caplog) -> list[logging.LogRecord]:
    """The mail tasks' records of warning level and above."""
    return [
        record
        for record in caplog.records
        if record.name == "marquee.accounts.mail" and record.levelno >= logging.WARNING
    ]


@pytest.fixture
def refusing_mail_server(settings):
    """A mail server on a local port that takes the connection and refuses
    every recipient, quoting the address back as real servers do
    (``550 5.1.1 <ada@example.com>: ...``)."""
    listener = socket.create_server(("127.0.0.1", 0))
    address = listener.getsockname()
    stop = threading.Event()

    def serve():
        while True:
            conn, _ = listener.accept()
            if stop.is_set():
                conn.close()
                return
            with conn, conn.makefile("rb") as lines:
                conn.sendall(b"220 mail.test ESMTP\r\n")
                for line in lines:
                    verb = line[:4].upper()
                    if verb == b"RCPT":
                        to = line.split(b":", 1)[1].strip()
                        conn.sendall(b"550 5.1.1 " + to + b": no such mailbox\r\n")
                    elif verb == b"QUIT":
                        conn.sendall(b"221 bye\r\n")
                        break
                    else:
                        conn.sendall(b"250 ok\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = address
    settings.EMAIL_TIMEOUT = 5
    yield
    stop.set()
    socket.create_connection(address).close()  # wakes the accept
    thread.join(timeout=5)
    listener.close()


def test_an_order_email_that_cannot_be_sent_is_logged_once_with_why_and_whose(
    client, mongo_db, show, settings, caplog
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", closed_port()
    settings.EMAIL_TIMEOUT = 2

    order, _ = buy_seats(client, mongo_db, show, seats=("0-0",))

    (failure,) = mail_failures(caplog)
    line = failure.getMessage()
    assert failure.levelno == logging.WARNING  # a retry is scheduled
    assert f"the paid email to order {order['_id']} could not be sent" in line
    assert "ConnectionRefusedError: [Errno 111]" in line
    assert "attempt 1 of 5" in line
    assert "ada@example.com" not in line


def test_a_refused_recipient_is_logged_with_its_order_never_its_address(
    client, mongo_db, show, refusing_mail_server, caplog
):
    order, _ = buy_seats(client, mongo_db, show, seats=("0-0",))

    (failure,) = mail_failures(caplog)
    line = failure.getMessage()
    assert f"the paid email to order {order['_id']}" in line
    # The server's refusal, its code and words, without the address it quoted.
    assert "SMTPRecipientsRefused" in line
    assert "550" in line and "no such mailbox" in line
    assert "[address]" in line
    assert "ada@example.com" not in caplog.text
    (retry,) = Schedule.objects.all()
    assert retry.func == "accounts.tasks.send_order_email"


def test_an_account_email_given_up_is_an_error_naming_the_user_not_the_link(
    client, ada, settings, caplog
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", closed_port()
    settings.EMAIL_TIMEOUT = 2
    settings.MAIL_ATTEMPTS = 1

    client.post("/accounts/password/reset/", {"email": ada.email})

    (failure,) = mail_failures(caplog)
    line = failure.getMessage()
    assert failure.levelno == logging.ERROR
    assert f"the reset email to user {ada.pk} could not be sent" in line
    assert "giving up (attempt 1 of 1)" in line
    assert "ConnectionRefusedError" in line
    assert ada.email not in caplog.text
    assert "/accounts/password/reset/" not in caplog.text
    assert not Schedule.objects.exists()


def test_a_failures_reason_keeps_its_class_and_words_not_an_address_or_link():
    from smtplib import SMTPDataError

    from accounts.tasks import failure_reason

    refused = SMTPDataError(
        554,
        b"rejected: http://testserver/accounts/password/reset/MQ/abc-123/"
        b" for <bob@example.com>",
    )

    reason = failure_reason(refused)

    assert reason.startswith("SMTPDataError: (554, b'rejected: ")
    assert "bob@example.com" not in reason and "<[address]>" in reason
    assert "abc-123" not in reason and "[link]" in reason
    # One line, and one of a bearable length.
    assert failure_reason(RuntimeError("one\ntwo")) == "RuntimeError: one two"
    assert failure_reason(TimeoutError()) == "TimeoutError"
    assert len(failure_reason(ValueError("x" * 1000))) < 400
