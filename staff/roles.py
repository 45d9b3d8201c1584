"""The three staff roles, as Django groups with exactly their permissions.

``ensure_roles`` is idempotent: it runs after every migrate, and again from
``createstaff``; a permission taken out of a role here leaves the group too.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Q

BOX_OFFICE = "Box office"
SHOP_MANAGER = "Shop manager"
ADMINISTRATOR = "Administrator"

_COMMON = ["view_dashboard", "view_orders", "view_carts", "release_carts"]

# Staff permission codenames (app "staff") per role; the Administrator also
# gets auth's user and group permissions.
ROLES: dict[str, list[str]] = {
    BOX_OFFICE: [*_COMMON, "refund_ticket_orders", "manage_sessions"],
    SHOP_MANAGER: [*_COMMON, "refund_goods_orders", "manage_stock"],
    ADMINISTRATOR: [
        *_COMMON,
        "refund_ticket_orders",
        "refund_goods_orders",
        "manage_sessions",
        "manage_stock",
        "view_jobs",
        "run_jobs",
        "manage_staff",
    ],
}
# What each role may do, in words (the README and `createstaff --help`).
ROLE_SUMMARIES = {
    BOX_OFFICE: "dashboard, orders (cancel and refund orders of tickets), live carts, "
    "performances (schedule, seat map, release holds, block and sell house seats), "
    "check-in",
    SHOP_MANAGER: "dashboard, orders (cancel and refund orders of goods), live carts, "
    "stock (receive, adjust, low-stock thresholds, store counts)",
    ADMINISTRATOR: "everything: both kinds of refunds, scheduled jobs, staff accounts",
}
ROLE_SLUGS = {
    "box-office": BOX_OFFICE,
    "shop-manager": SHOP_MANAGER,
    "administrator": ADMINISTRATOR,
}
_AUTH_FOR_ADMIN = ["add_user", "change_user", "view_user", "change_group"]


def ensure_roles(using: str = "default") -> dict[str, Group]:
    """Create or update the three groups; return them by name."""
    from django.apps import apps as global_apps
    from django.contrib.auth.management import create_permissions

    # The permissions normally appear on post_migrate; make sure they exist
    # whoever calls first (createstaff on a database migrated long ago).
    for label in ("auth", "staff"):
        create_permissions(global_apps.get_app_config(label), verbosity=0, using=using)
    groups = {}
    with transaction.atomic(using=using):
        for name, codenames in ROLES.items():
            group, _ = Group.objects.using(using).get_or_create(name=name)
            perms = list(
                Permission.objects.using(using).filter(
                    content_type__app_label="staff", codename__in=codenames
                )
            )
            if name == ADMINISTRATOR:
                perms += list(
                    Permission.objects.using(using).filter(
                        content_type__app_label="auth", codename__in=_AUTH_FOR_ADMIN
                    )
                )
            group.permissions.set(perms)
            groups[name] = group
    return groups


def role_named(value: str) -> str:
    """A role's name from its name or slug, any case; ValueError if none."""
    wanted = value.strip().lower()
    for slug, name in ROLE_SLUGS.items():
        if wanted in (slug, name.lower()):
            return name
    raise ValueError(f"unknown role {value!r}; choose one of: " + ", ".join(ROLE_SLUGS))


def create_staff(*, email: str, role: str, password: str | None = None):
    """A staff user (is_staff, active) in one role; the username is the email.

    An existing user with that email is made staff (again, if it was
    deactivated) and moved to the role; its password is changed only when
    ``password`` is given (moving someone to another role must not lock
    them out); a new account without one has an unusable password.

    No rule is checked here and nothing is audited: the back office's
    changes go through ``staff.services.team``, which does both.
    """
    name = role_named(role)
    groups = ensure_roles()
    users = get_user_model()
    email = email.strip().lower()
    user, created = users.objects.get_or_create(
        username=email, defaults={"email": email}
    )
    user.email = email
    user.is_staff = True
    user.is_active = True
    # The role is all the account may do: a superuser (createsuperuser's,
    # which has every permission) given a role has that role's, or the
    # Staff page would show a Box office who can do everything.
    user.is_superuser = False
    if password is not None:
        user.set_password(password)
    elif created:
        # No password until its owner chooses one (the emailed link): never
        # the empty one, which only fails to match by chance of the hasher.
        user.set_unusable_password()
    user.save()
    user.groups.set([groups[name]])
    return user


def deactivate_staff(*, email: str):
    """The staff account ``email`` (staff or superuser) can no longer log
    in, nor is it staff, superuser or in a role (a browser still logged in
    as it is logged out at its next page;
    ``staff.services.team.team_deactivate`` also ends its sessions);
    ``create_staff`` makes it staff again, in a role and no more.
    LookupError when there is no such staff account."""
    users = get_user_model()
    email = email.strip().lower()
    user = (
        users.objects.filter(username=email)
        .filter(Q(is_staff=True) | Q(is_superuser=True))
        .first()
    )
    if user is None:
        raise LookupError(f"there is no staff account {email!r}")
    user.is_active = False
    user.is_staff = False
    user.is_superuser = False
    user.save()
    user.groups.clear()
    return user


def roles_of(user) -> list[str]:
    return sorted(g.name for g in user.groups.all() if g.name in ROLES)


def role_of(user) -> str | None:
    """The account's role (each staff account the Staff page made has one;
    one made otherwise, by ``createsuperuser`` say, may have none), or
    None."""
    found = roles_of(user)
    return found[0] if found else None
