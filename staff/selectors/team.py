"""The Staff page's lists: the members of the three roles, the former
members (deactivated accounts: only deactivating a member makes an account
inactive), and the team's recent changes on the audit trail."""

from dataclasses import dataclass

from django.contrib.auth import get_user_model

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
    former = [_member(u) for u in users.filter(is_active=False)]
    return Team(members=members, former=former)


def account(user_id: int):
    """The account ``user_id`` (a member or a former one), or None."""
    return get_user_model().objects.filter(pk=user_id).first()
