"""The shop's emails: what each says (templates under accounts/email/) and
how it is sent (a django-q2 task, so a slow mail server never slows a page).

Kinds: "paid" (the order confirmation, with the tickets' PDF attached) and
"refunded" (the refund confirmation). Password-reset and order-claim emails
are rendered by their forms and sent by ``send_rendered``.
"""

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django_q.tasks import async_task

from shop.printing import tickets_pdf
from shop.selectors.orders import order_tickets
from shop.views.common import order_url

SUBJECTS = {
    "paid": "Your Marquee order {number}",
    "refunded": "Your Marquee order {number} is refunded",
}


def queue(task: str, *args) -> None:
    """Run ``task`` (a dotted path in accounts.tasks) on the queue, or right
    here when ``MAIL_SYNC`` (tests, a one-process demo)."""
    async_task(f"accounts.tasks.{task}", *args, sync=settings.MAIL_SYNC)


def order_email(order, kind: str) -> EmailMultiAlternatives:
    """The email for ``order`` of ``kind`` ("paid" or "refunded")."""
    context = {
        "order": order,
        "kind": kind,
        "tickets": order_tickets(order),
        "goods": [line for line in order.lines if line.ticket is None],
        "link": settings.SITE_URL + order_url(order),
        "site": settings.SITE_URL,
    }
    message = EmailMultiAlternatives(
        subject=SUBJECTS[kind].format(number=order.number),
        body=render_to_string(f"accounts/email/order_{kind}.txt", context),
        to=[order.email],
    )
    if kind == "paid" and context["tickets"]:
        message.attach(
            f"marquee-{order.number}-tickets.pdf", tickets_pdf(order), "application/pdf"
        )
    return message
