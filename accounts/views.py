"""Account pages: sign up, the account page, and claiming earlier orders by
email. Logging in and out, password change and reset are Django's own views
(``accounts/auth_urls.py``)."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.shortcuts import redirect, render
from django.utils.encoding import force_bytes
from django.utils.http import url_has_allowed_host_and_scheme, urlsafe_base64_encode
from django.views.decorators.http import require_http_methods, require_POST

from accounts.forms import SignUpForm
from accounts.mail import account_email_allowed, queue
from accounts.tokens import claim_tokens
from shop.identity import owner_of
from shop.services.order_owners import orders_attach_by_email


def next_page(request) -> str:
    """Where a sign-up goes once done: the form's ``next`` if it is this
    site's, else My orders."""
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return settings.LOGIN_REDIRECT_URL


@require_http_methods(["GET", "POST"])
def signup(request):
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                user = form.save()
        except IntegrityError:
            # The same email signed up between the form's check and this
            # insert (a double click): the unique username said no.
            form.add_error("email", SignUpForm.EXISTS)
        else:
            # Logging in attaches this browser's cart and orders (shop.signals).
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome to Marquee: your account is ready.")
            return redirect(next_page(request))
    return signup_page(request, form, status=400 if request.method == "POST" else 200)


def signup_page(request, form, *, status: int, limited: dict | None = None):
    """The sign-up form; ``limited``: what the sign-up limit's refusal says
    above it (``accounts/formlimits.py``)."""
    context = {"form": form, "next": next_page(request), "limited": limited}
    return render(request, "registration/signup.html", context, status=status)


@login_required
def account(request):
    # Whether orders were placed with this address is not said here: the
    # address is not proven until its owner opens the emailed link.
    return render(request, "accounts/account.html")


@login_required
@require_POST
def claim_request(request):
    """Email a link that attaches the anonymous orders placed with the
    account's address (whoever opens it proves they read that mailbox)."""
    user = request.user
    if not account_email_allowed("claim", user.pk):
        messages.error(
            request,
            f"We have sent {user.email} several links this hour: use the newest,"
            " or ask again later.",
        )
        return redirect("accounts:home")
    queue("send_account_email", "claim", user.pk)
    messages.success(
        request, f"We sent a link to {user.email}: open it to attach your orders."
    )
    return redirect("accounts:home")


@login_required
@require_http_methods(["GET", "POST"])
def claim(request, uidb64: str, token: str):
    """GET: what the link will do; POST: do it (a link is never a change)."""
    user = request.user
    expected = urlsafe_base64_encode(force_bytes(user.pk))
    valid = uidb64 == expected and claim_tokens.check_token(user, token)
    if request.method == "POST" and valid:
        moved = orders_attach_by_email(email=user.email, to_owner=owner_of(request))
        messages.success(request, f"{moved} order(s) attached to your account.")
        return redirect("shop:orders")
    status = 200 if valid else 400
    return render(request, "accounts/claim.html", {"valid": valid}, status=status)
