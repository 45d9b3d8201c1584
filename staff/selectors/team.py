"""The Staff page's lists: the members of the three roles, the accounts
with staff access but no role (a ``createsuperuser`` account, or one made
staff by hand: listed so an Administrator can see them and give them a role
or deactivate them), the former members (deactivated accounts: only
deactivating a member makes an account inactive), and the team's recent
changes on the audit trail."""

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Q

from staff.roles import ROLE_SLUGS, ROLES, role_of

SLUG_OF = {name: slug for slug, name in ROLE_SLUGS.items()}


@dataclass(frozen=True)
class Member:
    user: object
    role: str | None
    slug: str
    has_password: bool

    @property
    def pk(self) -> int:
        return self.user.pk


@dataclass(frozen=True)
class Team:
    members: list[Member]
    roleless: list[Member]
    former: list[Member]


def _member(user) -> Member:
    role = role_of(user)
    return Member(
        user=user,
        role=role,
        slug=SLUG_OF.get(role, ""),
        has_password=user.has_usable_password(),
    )


def team() -> Team:
    users = get_user_model().objects.prefetch_related("groups").order_by("username")
    members = [
        _member(u)
        for u in users.filter(
            is_active=True, is_staff=True, groups__name__in=ROLES
        ).distinct()
    ]
    roleless = [
        _member(u)
        for u in users.filter(Q(is_staff=True) | Q(is_superuser=True), is_active=True)
        .exclude(groups__name__in=ROLES)
        .distinct()
    ]
    former = [_member(u) for u in users.filter(is_active=False)]
    return Team(members=members, roleless=roleless, former=former)


def account(user_id: int):
    """The account ``user_id`` (a member, one without a role or a former
    one), or None."""
    return get_user_model().objects.filter(pk=user_id).first()
