"""The Staff page (permission ``manage_staff``): the members with their
roles, the accounts with staff access but no role, the former members, the
team's recent changes, and the actions (add, change or give a role,
deactivate, make staff again, send an invitation again).
Thin: a form, one service of ``staff.services.team`` (which keeps every
rule), then a redirect; a refusal redraws the page with what was typed."""

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from staff.access import staff_permission
from staff.forms import AddMemberForm, ReasonForm, RoleForm
from staff.roles import ROLE_SLUGS
from staff.selectors import team as team_selectors
from staff.selectors.orders import latest
from staff.services import team as team_services
from staff.services.team import FORMER, NEW_ACCOUNT, ROLELESS, TeamRefused
from staff.views import _context

TEAM = "manage_staff"


def _team_page(request, *, add=None, failed=None, status=200):
    """The page; ``failed``: the row whose action was refused (its
    ``pk``, ``action``, the bound ``form`` and the ``message``)."""
    return render(
        request,
        "staff/team.html",
        _context(
            request,
            team=team_selectors.team(),
            entries=latest(kind="staff", limit=30),
            add=add if add is not None else AddMemberForm(),
            role_choices=list(ROLE_SLUGS.items()),
            failed=failed,
            invites_per_member=settings.STAFF_INVITES_PER_MEMBER,
            section="team",
        ),
        status=status,
    )


def _account_or_404(user_id: int):
    user = team_selectors.account(user_id)
    if user is None:
        raise Http404("No such account.")
    return user


def _refused(request, user, action, form, exc_or_message, status=400):
    message = getattr(exc_or_message, "message", exc_or_message)
    status = getattr(exc_or_message, "status", status)
    failed = {"pk": user.pk, "action": action, "form": form, "message": message}
    response = _team_page(request, failed=failed, status=status)
    retry_after = getattr(exc_or_message, "retry_after", None)
    if retry_after is not None:
        # A limit's refusal (429), as the form limits answer one.
        response["Retry-After"] = str(retry_after)
    return response


def _first_error(form) -> str:
    return next(iter(form.errors.values()))[0]


@require_GET
@staff_permission(TEAM)
def team(request):
    return _team_page(request)


@require_POST
@staff_permission(TEAM)
def team_add(request):
    form = AddMemberForm(request.POST)
    if not form.is_valid():
        return _team_page(request, add=form, status=400)
    data = form.cleaned_data
    try:
        user, before = team_services.team_add(
            email=data["email"],
            role=data["role"],
            by=request.user,
            reason=data["reason"],
        )
    except TeamRefused as exc:
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return _team_page(request, add=form, status=exc.status)
    role = ROLE_SLUGS[data["role"]]
    if before == NEW_ACCOUNT:
        said = f"{user.email} added as {role}: they were emailed a link to choose "
        said += "their password."
    elif before == ROLELESS:
        said = f"{user.email} had staff access without a role: it is now {role}, "
        said += "with that role's permissions only, and keeps its password."
    elif before == FORMER:
        said = f"{user.email} is staff again ({role}), with their former password; "
        said += "they were emailed that they have staff access."
    else:
        said = f"{user.email} already had a shopper account: it is now staff "
        said += f"({role}) and keeps its password. They were emailed that they "
        said += "have staff access."
    messages.success(request, said)
    return redirect("staff:team")


def _member_change(request, user_id, action, form_class, change, said):
    """A change of one member's row: its form checked, the service
    (``change(user, data)``) run, the outcome said; a refusal redraws the
    page with the row's form as typed."""
    user = _account_or_404(user_id)
    form = form_class(request.POST) if form_class else None
    if form is not None and not form.is_valid():
        return _refused(request, user, action, form, _first_error(form))
    data = form.cleaned_data if form is not None else {}
    try:
        change(user, data)
    except TeamRefused as exc:
        return _refused(request, user, action, form, exc)
    messages.success(request, said(user, data))
    return redirect("staff:team")


@require_POST
@staff_permission(TEAM)
def team_role(request, user_id):
    return _member_change(
        request,
        user_id,
        "role",
        RoleForm,
        lambda user, data: team_services.team_set_role(
            email=user.username,
            role=data["role"],
            by=request.user,
            reason=data["reason"],
        ),
        lambda user, data: f"{user.username} is now {ROLE_SLUGS[data['role']]}.",
    )


@require_POST
@staff_permission(TEAM)
def team_deactivate(request, user_id):
    return _member_change(
        request,
        user_id,
        "deactivate",
        ReasonForm,
        lambda user, data: team_services.team_deactivate(
            email=user.username, by=request.user, reason=data["reason"]
        ),
        lambda user, data: (
            f"{user.username} is deactivated: they can no longer log in, and a "
            "browser still logged in as them is logged out at its next page."
        ),
    )


@require_POST
@staff_permission(TEAM)
def team_reactivate(request, user_id):
    return _member_change(
        request,
        user_id,
        "reactivate",
        RoleForm,
        lambda user, data: team_services.team_reactivate(
            email=user.username,
            role=data["role"],
            by=request.user,
            reason=data["reason"],
        ),
        lambda user, data: (
            f"{user.username} is staff again ({ROLE_SLUGS[data['role']]}), with their "
            "former password; they were emailed that they have staff access."
        ),
    )


@require_POST
@staff_permission(TEAM)
def team_invite(request, user_id):
    return _member_change(
        request,
        user_id,
        "invite",
        None,
        lambda user, data: team_services.team_invite_again(
            email=user.username, by=request.user
        ),
        lambda user, data: (
            f"A new link to choose a password was emailed to {user.username}."
        ),
    )
