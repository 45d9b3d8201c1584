"""The shop's emails: what each says (templates under accounts/email/) and
how it is sent (a django-q2 task, so a slow mail server never slows a page).

Kinds: "paid" (the order confirmation, with the tickets' PDF attached) and
"refunded" (the refund confirmation). An account's emails, "reset" (a
password reset link), "claim" (a link that attaches earlier orders) and
"staff" (an account put on the staff: a link to choose its password, or,
for one that has a password, word that it now has staff access),
are made by the task that sends them (``account_email``): their links are
credentials, so neither the queue, the log nor a retry's schedule ever
holds one; a link made later is as good as one made at the request.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import EmailMessage, EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django_q.tasks import async_task

from accounts.throttle import hit
from accounts.tokens import claim_tokens
from shop.links import order_link
from shop.printing import tickets_pdf
from shop.selectors.orders import order_tickets
from staff.roles import role_of

SUBJECTS = {
    "paid": "Your Marquee order {number}",
    "refunded": "Your Marquee order {number} is refunded",
}


def account_email_allowed(kind: str, user_id: int) -> bool:
    """Whether the account may be sent another ``kind`` email this hour
    (``ACCOUNT_EMAILS_PER_HOUR``, counted as the throttle counts)."""
    return hit(
        f"mail:{kind}:{user_id}",
        limit=settings.ACCOUNT_EMAILS_PER_HOUR,
        window=3600,
    )


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
        "link": order_link(order),
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


def account_email(kind: str, user_id: int) -> EmailMessage | None:
    """The account's ``kind`` email ("reset", "claim" or "staff") with a
    link made now; None when the account is gone or may not have one
    (inactive, no usable password for a reset, as Django's reset form
    decides, or no longer staff).

    Both links start with ``SITE_URL``, never with the address the request
    came to: a Host header is the sender's to choose, and a reset link
    pointing at another site would hand that site the account's token."""
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        return None
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    if kind == "reset":
        if not user.has_usable_password():
            return None
        token = default_token_generator.make_token(user)
        path = reverse("password_reset_confirm", args=[uid, token])
        context = {"email": user.email, "link": settings.SITE_URL + path}
        subject = render_to_string("registration/password_reset_subject.txt", context)
        body = render_to_string("registration/password_reset_email.html", context)
        return EmailMessage(" ".join(subject.splitlines()), body, to=[user.email])
    if kind == "staff":
        return _staff_email(user, uid)
    path = reverse("accounts:claim", args=[uid, claim_tokens.make_token(user)])
    body = render_to_string(
        "accounts/email/claim.txt", {"link": settings.SITE_URL + path, "user": user}
    )
    return EmailMessage("Attach your earlier Marquee orders", body, to=[user.email])


def _staff_email(user, uid: str) -> EmailMessage | None:
    """To a member of the staff: an account without a password yet gets a
    link to choose one (Django's reset token and confirm page, so it works
    once, for PASSWORD_RESET_TIMEOUT); one with a password (a shopper made
    staff, a former member back) is told it may open the back office."""
    role = role_of(user)
    if not user.is_staff or role is None:
        return None
    context = {
        "email": user.email,
        "role": role,
        "staff_link": settings.SITE_URL + reverse("staff:dashboard"),
    }
    if user.has_usable_password():
        body = render_to_string("accounts/email/staff_access.txt", context)
        return EmailMessage(
            "You now have staff access to Marquee", body, to=[user.email]
        )
    token = default_token_generator.make_token(user)
    path = reverse("password_reset_confirm", args=[uid, token])
    context["link"] = settings.SITE_URL + path
    body = render_to_string("accounts/email/staff_invite.txt", context)
    return EmailMessage("Your Marquee staff account", body, to=[user.email])
