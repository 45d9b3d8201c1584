"""The Staff page (/staff/team/): the members and the former ones, adding a
member (a new account is emailed a link to choose its password; a shopper's
account becomes staff and keeps its password), changing a role,
deactivating, making staff again, and the guard rails; the commands go
through the same rules. Every POST is sent as a browser sends it, with the
CSRF token of a CSRF-enforcing client (test_access sends each without)."""

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from accounts.models import BrowserSession
from staff.roles import ADMINISTRATOR, BOX_OFFICE, SHOP_MANAGER, create_staff, role_of
from tests.staff.conftest import PASSWORD, ROLE_EMAILS

TEAM = reverse("staff:team")
NEW_PASSWORD = "a-new-members-password-7"


@pytest.fixture(autouse=True)
def mail_now(settings):
    """Account emails are sent in the request (django-q2's sync mode), to
    Django's locmem outbox; their links start with SITE_URL."""
    settings.MAIL_SYNC = True
    settings.SITE_URL = "https://shop.example.com"


def browser(email=None, password=PASSWORD) -> Client:
    client = Client(enforce_csrf_checks=True)
    if email:
        assert client.login(username=email, password=password)
    client.get("/accounts/login/")  # the CSRF cookie, as any page sets it
    return client


def post(client, url, data=None):
    token = client.cookies["csrftoken"].value
    return client.post(url, {**(data or {}), "csrfmiddlewaretoken": token})


@pytest.fixture
def admin(staff_users):
    return browser(ROLE_EMAILS[ADMINISTRATOR])


def account(email):
    return get_user_model().objects.get(username=email)


def staff_entries(mongo_db) -> list[dict]:
    return list(mongo_db.audit.find({"object_kind": "staff"}).sort("at", 1))


def url(name, user):
    return reverse(name, args=[user.pk])


def page_of(response) -> str:
    return response.content.decode()


def row_of(page: str, user) -> str:
    return re.search(rf'<tr id="member-{user.pk}">(.*?)</tr>', page, re.S)[1]


# --- The page ------------------------------------------------------------------


def test_the_page_lists_members_with_role_and_local_last_login_and_former_staff(
    admin, staff_users
):
    box = staff_users[BOX_OFFICE]
    # 12:00 UTC on a summer day is 13:00 in the shop's time zone (London).
    box.last_login = datetime(2030, 7, 1, 12, 0, tzinfo=UTC)
    box.save()
    create_staff(email="gone@example.com", role=SHOP_MANAGER, password=PASSWORD)
    call_command("deactivatestaff", email="gone@example.com")

    page = page_of(admin.get(TEAM))

    members, former = page.split('id="members"')[1].split('id="former"')
    row = row_of(members, box)
    assert "box@example.com" in row and "<td>Box office</td>" in row
    assert "1 Jul 2030 13:00" in row
    for email in ROLE_EMAILS.values():
        assert email in members
    assert "gone@example.com" not in members and "gone@example.com" in former
    assert f'href="{TEAM}" aria-current="page">Staff</a>' in page


def test_only_those_who_manage_staff_see_the_link(admin, staff_users):
    assert f'href="{TEAM}"' in page_of(admin.get(reverse("staff:dashboard")))
    for role in (BOX_OFFICE, SHOP_MANAGER):
        dashboard = browser(ROLE_EMAILS[role]).get(reverse("staff:dashboard"))
        assert dashboard.status_code == 200
        assert f'href="{TEAM}"' not in page_of(dashboard)


# --- Adding --------------------------------------------------------------------


def test_a_new_member_is_emailed_a_link_to_choose_a_password_then_logs_in(
    admin, mongo_db, mailoutbox
):
    done = post(
        admin,
        reverse("staff:team_add"),
        {"email": " Grace@Example.com ", "role": "box-office", "reason": "new hire"},
    )

    assert done.status_code == 302 and done["Location"] == TEAM
    grace = account("grace@example.com")
    assert grace.is_staff and grace.is_active and role_of(grace) == BOX_OFFICE
    assert not grace.has_usable_password()
    (message,) = mailoutbox
    assert message.to == ["grace@example.com"]
    body = message.body
    assert "Box office" in body
    link = re.search(r"https://shop\.example\.com(/accounts/password/reset/\S+/)", body)
    # Following it as the new member does: choose a password, then log in.
    member = Client()
    form = member.get(link[1], follow=True)
    assert "Choose a new password" in page_of(form)
    chosen = member.post(
        form.redirect_chain[-1][0],
        {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert chosen.status_code == 302
    logged_in = member.post(
        "/accounts/login/", {"username": "grace@example.com", "password": NEW_PASSWORD}
    )
    assert logged_in.status_code == 302
    assert member.get(reverse("staff:performances")).status_code == 200
    assert member.get(TEAM).status_code == 403
    # The link worked once.
    assert "no longer works" in page_of(Client().get(link[1], follow=True))
    (entry,) = staff_entries(mongo_db)
    assert entry["action"] == "staff added"
    assert entry["actor"] == "staff:admin@example.com"
    assert (entry["object_id"], entry["reason"]) == ("grace@example.com", "new hire")
    assert (entry["before"], entry["after"]) == ("new account", BOX_OFFICE)
    flash = page_of(admin.get(TEAM))
    assert "grace@example.com added as Box office" in flash
    assert "staff added" in flash and "by staff:admin@example.com" in flash


def test_a_shoppers_email_makes_their_account_staff_keeping_its_password(
    admin, shopper, mongo_db, mailoutbox
):
    done = post(
        admin,
        reverse("staff:team_add"),
        {"email": "shopper@example.com", "role": "shop-manager"},
    )

    assert done.status_code == 302
    shopper.refresh_from_db()
    assert shopper.is_staff and role_of(shopper) == SHOP_MANAGER
    member = browser("shopper@example.com", PASSWORD)  # the same password
    assert member.get(reverse("staff:stock")).status_code == 200
    (message,) = mailoutbox
    assert message.subject == "You now have staff access to Marquee"
    assert "Shop manager" in message.body and "same password" in message.body
    assert "/accounts/password/reset/" not in message.body
    assert "https://shop.example.com/staff/" in message.body
    assert "already had a shopper account" in page_of(admin.get(TEAM))
    (entry,) = staff_entries(mongo_db)
    assert (entry["before"], entry["after"]) == ("shopper", SHOP_MANAGER)


@pytest.mark.parametrize(
    "email, role, says",
    [
        ("not-an-email", "box-office", "That is not an email address."),
        ("", "box-office", "Give the new member&#x27;s email"),
        ("ok@example.com", "janitor", "There is no such role"),
        ("ok@example.com", "", "Choose a role."),
        ("BOX@example.com", "shop-manager", "box@example.com is already on the staff"),
    ],
)
def test_adding_refuses_bad_input_keeping_what_was_typed(
    admin, staff_users, mongo_db, mailoutbox, email, role, says
):
    accounts = list(get_user_model().objects.values_list("username", "is_staff"))

    refused = post(admin, reverse("staff:team_add"), {"email": email, "role": role})

    assert refused.status_code == 400
    page = page_of(refused)
    assert says in page
    if email:
        assert f'value="{email}"' in page
    assert (
        list(get_user_model().objects.values_list("username", "is_staff")) == accounts
    )
    assert role_of(staff_users[BOX_OFFICE]) == BOX_OFFICE
    assert staff_entries(mongo_db) == [] and mailoutbox == []


# --- Changing, deactivating, making staff again --------------------------------


def test_changing_a_role(admin, staff_users, mongo_db):
    box = staff_users[BOX_OFFICE]
    clerk = browser(ROLE_EMAILS[BOX_OFFICE])

    done = post(
        admin, url("staff:team_role", box), {"role": "shop-manager", "reason": "moved"}
    )

    assert done.status_code == 302
    assert clerk.get(reverse("staff:stock")).status_code == 200
    assert clerk.get(reverse("staff:performances")).status_code == 403
    (entry,) = staff_entries(mongo_db)
    assert entry["action"] == "staff role changed"
    assert (entry["before"], entry["after"]) == (BOX_OFFICE, SHOP_MANAGER)
    assert (entry["actor"], entry["reason"]) == ("staff:admin@example.com", "moved")


@pytest.mark.parametrize("role", ["janitor", "", "box-office"])
def test_a_role_change_to_no_role_or_the_same_is_refused(
    admin, staff_users, mongo_db, role
):
    box = staff_users[BOX_OFFICE]

    refused = post(admin, url("staff:team_role", box), {"role": role})

    assert refused.status_code == 400
    assert 'role="alert"' in page_of(refused)
    assert role_of(box) == BOX_OFFICE and staff_entries(mongo_db) == []


def test_deactivating_logs_their_browser_out_at_its_next_page(
    admin, staff_users, mongo_db
):
    box = staff_users[BOX_OFFICE]
    clerk = browser(ROLE_EMAILS[BOX_OFFICE])
    assert clerk.get(reverse("staff:dashboard")).status_code == 200

    done = post(admin, url("staff:team_deactivate", box), {"reason": "left"})

    assert done.status_code == 302
    next_page = clerk.get(reverse("staff:dashboard"))
    assert next_page.status_code == 302
    assert next_page["Location"].startswith("/accounts/login/")
    assert not Client().login(username="box@example.com", password=PASSWORD)
    box.refresh_from_db()
    assert not box.is_active and not box.is_staff and role_of(box) is None
    former = page_of(admin.get(TEAM)).split('id="former"')[1]
    assert "box@example.com" in former
    (entry,) = staff_entries(mongo_db)
    assert entry["action"] == "staff deactivated"
    assert (entry["before"], entry["after"]) == (BOX_OFFICE, "former staff")
    assert entry["reason"] == "left"


def logged_in_by_the_page(email, password=PASSWORD) -> Client:
    """A browser logged in through the log-in page, as a person does."""
    client = Client()
    done = client.post("/accounts/login/", {"username": email, "password": password})
    assert done.status_code == 302
    return client


def is_logged_out(client) -> bool:
    page = client.get(reverse("staff:dashboard"))
    return page.status_code == 302 and page["Location"].startswith("/accounts/login/")


def test_deactivating_ends_their_sessions_for_good_so_reactivating_needs_a_log_in(
    admin, staff_users
):
    box = staff_users[BOX_OFFICE]
    clerk = browser(ROLE_EMAILS[BOX_OFFICE])
    till = logged_in_by_the_page(ROLE_EMAILS[BOX_OFFICE])
    assert clerk.get(reverse("staff:dashboard")).status_code == 200
    assert till.get(reverse("staff:dashboard")).status_code == 200

    post(admin, url("staff:team_deactivate", box), {"reason": "left"})
    done = post(admin, url("staff:team_reactivate", box), {"role": "box-office"})

    assert done.status_code == 302 and role_of(box) == BOX_OFFICE
    assert is_logged_out(clerk) and is_logged_out(till)
    assert not BrowserSession.objects.filter(account_id=box.pk).exists()
    again = browser(ROLE_EMAILS[BOX_OFFICE])  # their password, a fresh log-in
    assert again.get(reverse("staff:dashboard")).status_code == 200


def test_a_session_whose_key_a_password_change_rotated_is_ended_too(db, staff_users):
    """Django gives a session a new key when its account changes its
    password: that session is the account's as much as the first."""
    clerk = browser(ROLE_EMAILS[BOX_OFFICE])
    before = clerk.cookies["sessionid"].value
    changed = post(
        clerk,
        "/accounts/password/change/",
        {
            "old_password": PASSWORD,
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
    )
    assert changed.status_code == 302
    assert clerk.cookies["sessionid"].value != before
    assert clerk.get(reverse("staff:dashboard")).status_code == 200

    call_command("deactivatestaff", email=ROLE_EMAILS[BOX_OFFICE], reason="left")
    call_command("createstaff", email=ROLE_EMAILS[BOX_OFFICE], role="box-office")

    assert is_logged_out(clerk)
    again = browser(ROLE_EMAILS[BOX_OFFICE], password=NEW_PASSWORD)
    assert again.get(reverse("staff:dashboard")).status_code == 200


def test_deactivating_one_member_leaves_everyone_elses_sessions(
    admin, staff_users, shopper, product
):
    manager = browser(ROLE_EMAILS[SHOP_MANAGER])
    customer = logged_in_by_the_page("shopper@example.com")
    stranger = Client()
    stranger.post("/cart/add/", {"sku": product, "quantity": "1"})
    sessions = set(BrowserSession.objects.values_list("session_key", flat=True))
    clerk = browser(ROLE_EMAILS[BOX_OFFICE])

    post(admin, url("staff:team_deactivate", staff_users[BOX_OFFICE]), {"reason": "x"})

    assert is_logged_out(clerk)
    assert manager.get(reverse("staff:stock")).status_code == 200
    assert admin.get(TEAM).status_code == 200
    assert customer.get("/accounts/").status_code == 200
    assert "JC Sneaker" in page_of(stranger.get("/cart/"))
    left = set(BrowserSession.objects.values_list("session_key", flat=True))
    assert sessions <= left


def test_deactivating_needs_a_reason(admin, staff_users, mongo_db):
    box = staff_users[BOX_OFFICE]

    refused = post(admin, url("staff:team_deactivate", box), {"reason": "  "})

    assert refused.status_code == 400
    assert "Give a reason" in page_of(refused)
    box.refresh_from_db()
    assert box.is_active and role_of(box) == BOX_OFFICE
    assert staff_entries(mongo_db) == []


def test_a_former_member_is_made_staff_again_with_their_password(
    admin, staff_users, mongo_db, mailoutbox
):
    box = staff_users[BOX_OFFICE]
    post(admin, url("staff:team_deactivate", box), {"reason": "left"})

    done = post(admin, url("staff:team_reactivate", box), {"role": "shop-manager"})

    assert done.status_code == 302
    clerk = browser(ROLE_EMAILS[BOX_OFFICE])  # the password they had
    assert clerk.get(reverse("staff:stock")).status_code == 200
    (message,) = mailoutbox
    assert message.to == ["box@example.com"] and "Shop manager" in message.body
    entries = staff_entries(mongo_db)
    assert [e["action"] for e in entries] == ["staff deactivated", "staff reactivated"]
    assert (entries[1]["before"], entries[1]["after"]) == ("former staff", SHOP_MANAGER)
    # A member is not "made staff again".
    again = post(admin, url("staff:team_reactivate", box), {"role": "box-office"})
    assert again.status_code == 409 and role_of(box) == SHOP_MANAGER


def test_an_invitation_is_sent_again_only_to_who_has_no_password(
    admin, staff_users, mongo_db, mailoutbox
):
    invited = create_staff(email="invited@example.com", role=BOX_OFFICE)

    done = post(admin, url("staff:team_invite", invited))

    assert done.status_code == 302
    (message,) = mailoutbox
    assert "https://shop.example.com/accounts/password/reset/" in message.body
    refused = post(admin, url("staff:team_invite", staff_users[BOX_OFFICE]))
    assert refused.status_code == 409 and len(mailoutbox) == 1
    assert [e["action"] for e in staff_entries(mongo_db)] == ["staff invitation sent"]


def test_invitations_to_one_member_are_limited_per_hour_whoever_sends_them(
    admin, staff_users, mongo_db, mailoutbox, settings
):
    settings.STAFF_INVITES_PER_MEMBER = 2
    invited = create_staff(email="invited@example.com", role=BOX_OFFICE)
    create_staff(email="boss@example.com", role=ADMINISTRATOR, password=PASSWORD)
    boss = browser("boss@example.com")

    sent = [post(admin, url("staff:team_invite", invited)) for _ in range(2)]
    refused = post(admin, url("staff:team_invite", invited))
    # Another Administrator may not send them more either.
    also_refused = post(boss, url("staff:team_invite", invited))

    assert [r.status_code for r in sent] == [302, 302]
    for response in (refused, also_refused):
        assert response.status_code == 429
        assert 1 <= int(response["Retry-After"]) <= 3600
        page = page_of(response)
        assert "No email was sent: invited@example.com has been sent 2" in page
        assert re.search(r"Try again in \d+ minutes? \(at \d\d:\d\d\)", page)
        # The member's row is open again, the refusal said where it is read.
        assert 'role="alert" id="team-error"' in page
        assert '<details class="member-actions" open>' in row_of(page, invited)
    assert len(mailoutbox) == 2
    assert all(m.to == ["invited@example.com"] for m in mailoutbox)
    actions = [e["action"] for e in staff_entries(mongo_db)]
    assert actions == ["staff invitation sent"] * 2  # a refusal is not done


def test_invitations_one_manager_sends_are_limited_per_hour(
    admin, staff_users, mongo_db, mailoutbox, settings
):
    settings.STAFF_INVITES_PER_MANAGER = 2
    settings.STAFF_INVITES_PER_MEMBER = 10
    one = create_staff(email="one@example.com", role=BOX_OFFICE)
    two = create_staff(email="two@example.com", role=SHOP_MANAGER)
    create_staff(email="boss@example.com", role=ADMINISTRATOR, password=PASSWORD)

    assert post(admin, url("staff:team_invite", one)).status_code == 302
    assert post(admin, url("staff:team_invite", two)).status_code == 302
    refused = post(admin, url("staff:team_invite", one))

    assert refused.status_code == 429 and "Retry-After" in refused
    assert "No email was sent: you have sent 2 invitations this hour" in page_of(
        refused
    )
    assert len(mailoutbox) == 2
    # The limit is the sender's: another Administrator may still send one.
    other = post(browser("boss@example.com"), url("staff:team_invite", one))
    assert other.status_code == 302 and len(mailoutbox) == 3
    assert mailoutbox[-1].to == ["one@example.com"]


def test_the_invitation_limit_is_the_services_so_a_command_is_held_to_it(
    db, mongo_db, mailoutbox, settings
):
    """Whoever calls the service (a command, a shell): the same limit, and
    the next hour's window is a fresh one."""
    from staff.services.team import TeamRefused, team_invite_again

    settings.STAFF_INVITES_PER_MEMBER = 1
    create_staff(email="invited@example.com", role=BOX_OFFICE)
    now = datetime(2030, 7, 1, 12, 20, tzinfo=UTC)

    team_invite_again(email="invited@example.com", by="a-command", now=now)
    with pytest.raises(TeamRefused, match="No email was sent") as refused:
        team_invite_again(email="invited@example.com", by="a-command", now=now)

    assert refused.value.status == 429
    assert refused.value.retry_after == 40 * 60  # the rest of the hour
    assert "Try again in 40 minutes (at 14:00)" in refused.value.message  # London
    assert len(mailoutbox) == 1
    later = datetime(2030, 7, 1, 13, 0, tzinfo=UTC)
    team_invite_again(email="invited@example.com", by="a-command", now=later)
    assert len(mailoutbox) == 2
    assert [e["actor"] for e in staff_entries(mongo_db)] == ["command:a-command"] * 2


# --- Guard rails ---------------------------------------------------------------


@pytest.fixture
def second_admin(staff_users):
    return create_staff(email="boss@example.com", role=ADMINISTRATOR, password=PASSWORD)


@pytest.mark.parametrize(
    "action, data",
    [
        ("staff:team_deactivate", {"reason": "me"}),
        ("staff:team_role", {"role": "box-office"}),
    ],
)
def test_an_administrator_cannot_deactivate_or_demote_themselves(
    admin, staff_users, second_admin, mongo_db, action, data
):
    me = staff_users[ADMINISTRATOR]

    refused = post(admin, url(action, me), data)

    assert refused.status_code == 409
    assert "another Administrator can" in page_of(refused)
    me.refresh_from_db()
    assert me.is_active and role_of(me) == ADMINISTRATOR
    assert admin.get(TEAM).status_code == 200
    assert staff_entries(mongo_db) == []


def test_another_administrator_can_and_then_the_last_one_is_kept(
    admin, staff_users, second_admin, mongo_db
):
    me = staff_users[ADMINISTRATOR]
    boss = browser("boss@example.com")

    demoted = post(boss, url("staff:team_role", me), {"role": "box-office"})
    assert demoted.status_code == 302 and role_of(me) == BOX_OFFICE
    # Boss is the last active Administrator now: no one (no command either)
    # may deactivate or demote them.
    with pytest.raises(CommandError, match="last active Administrator"):
        call_command("deactivatestaff", email="boss@example.com")
    with pytest.raises(CommandError, match="last active Administrator"):
        call_command("createstaff", email="boss@example.com", role="box-office")
    from staff.services.team import TeamRefused, team_deactivate, team_set_role

    with pytest.raises(TeamRefused, match="last active Administrator"):
        team_deactivate(email="boss@example.com", by=staff_users[SHOP_MANAGER])
    with pytest.raises(TeamRefused, match="last active Administrator"):
        team_set_role(
            email="boss@example.com", role="shop-manager", by=staff_users[BOX_OFFICE]
        )
    second_admin.refresh_from_db()
    assert second_admin.is_active and role_of(second_admin) == ADMINISTRATOR
    assert [e["action"] for e in staff_entries(mongo_db)] == ["staff role changed"]


def test_ones_own_row_offers_no_change(admin, staff_users):
    """No form that would be refused: one's own row says "you"."""
    me = staff_users[ADMINISTRATOR]
    page = page_of(admin.get(TEAM))
    row = row_of(page, me)
    assert "(you)" in row and "<form" not in row


# --- Staff access without a role -----------------------------------------------


@pytest.fixture
def superuser(db):
    """An account as Django's ``createsuperuser`` makes it: staff and
    superuser, in no role group."""
    return get_user_model().objects.create_superuser(
        "root@example.com", "root@example.com", PASSWORD
    )


def section(page: str, table_id: str) -> str:
    return re.search(rf'<table [^>]*id="{table_id}".*?</table>', page, re.S)[0]


def test_staff_accounts_without_a_role_are_listed_in_their_own_group(
    admin, staff_users, superuser, shopper
):
    hand_made = get_user_model().objects.create_user(
        "flagged@example.com", "flagged@example.com", PASSWORD, is_staff=True
    )
    create_staff(email="gone@example.com", role=SHOP_MANAGER, password=PASSWORD)
    call_command("deactivatestaff", email="gone@example.com")

    page = page_of(admin.get(TEAM))

    assert '<h2 id="roleless-h">Staff access without a role</h2>' in page
    roleless = section(page, "roleless")
    assert 'aria-labelledby="roleless-h"' in roleless
    for account in (superuser, hand_made):
        assert account.username in roleless
        assert account.username not in section(page, "members")
        assert account.username not in section(page, "former")
    assert "Superuser: every permission" in row_of(roleless, superuser)
    assert "Staff: no page until given a role" in row_of(roleless, hand_made)
    for email in ["gone@example.com", "shopper@example.com", *ROLE_EMAILS.values()]:
        assert email not in roleless
    # Each row's actions, labelled, as a member's are.
    row = row_of(roleless, superuser)
    assert f'action="{url("staff:team_role", superuser)}"' in row
    assert f'<label for="role-{superuser.pk}">Role to give' in row
    assert f'<select id="role-{superuser.pk}" name="role">' in row
    assert f'action="{url("staff:team_deactivate", superuser)}"' in row
    assert f'<label for="why-{superuser.pk}">' in row
    assert row.count("csrfmiddlewaretoken") == 2


def test_the_group_is_not_shown_when_every_staff_account_has_a_role(admin):
    assert 'id="roleless"' not in page_of(admin.get(TEAM))


def test_giving_a_role_to_a_superuser_makes_that_role_all_it_may_do(
    admin, staff_users, superuser, mongo_db
):
    root = browser("root@example.com")
    assert root.get(reverse("staff:stock")).status_code == 200  # every page

    done = post(
        admin, url("staff:team_role", superuser), {"role": "box-office", "reason": "x"}
    )

    assert done.status_code == 302
    superuser.refresh_from_db()
    assert role_of(superuser) == BOX_OFFICE and not superuser.is_superuser
    assert root.get(reverse("staff:performances")).status_code == 200
    assert root.get(reverse("staff:stock")).status_code == 403
    assert root.get(TEAM).status_code == 403
    page = page_of(admin.get(TEAM))
    assert "root@example.com is now Box office." in page
    assert "root@example.com" in section(page, "members")
    assert 'id="roleless"' not in page
    (entry,) = staff_entries(mongo_db)
    assert entry["action"] == "staff role changed"
    assert (entry["before"], entry["after"]) == ("staff without a role", BOX_OFFICE)


def test_deactivating_an_account_without_a_role_and_making_it_staff_again(
    admin, staff_users, superuser, mongo_db
):
    root = browser("root@example.com")

    done = post(admin, url("staff:team_deactivate", superuser), {"reason": "unused"})

    assert done.status_code == 302
    assert is_logged_out(root)
    superuser.refresh_from_db()
    assert not (superuser.is_active or superuser.is_staff or superuser.is_superuser)
    assert "root@example.com" in section(page_of(admin.get(TEAM)), "former")
    # Made staff again, it has the role given and no more.
    post(admin, url("staff:team_reactivate", superuser), {"role": "shop-manager"})
    superuser.refresh_from_db()
    assert role_of(superuser) == SHOP_MANAGER and not superuser.is_superuser
    again = browser("root@example.com")
    assert again.get(reverse("staff:performances")).status_code == 403
    actions = [(e["action"], e["before"]) for e in staff_entries(mongo_db)]
    assert actions == [
        ("staff deactivated", "staff without a role"),
        ("staff reactivated", "former staff"),
    ]


@pytest.mark.parametrize(
    "action, data, says",
    [
        ("staff:team_deactivate", {"reason": "me"}, "You cannot deactivate yourself"),
        ("staff:team_role", {"role": "administrator"}, "change your own role"),
    ],
)
def test_a_superuser_without_a_role_cannot_change_themselves(
    staff_users, superuser, mongo_db, action, data, says
):
    root = browser("root@example.com")  # a superuser may manage staff
    own_row = row_of(page_of(root.get(TEAM)), superuser)
    assert "(you)" in own_row and "<form" not in own_row

    refused = post(root, url(action, superuser), data)

    assert refused.status_code == 409 and says in page_of(refused)
    superuser.refresh_from_db()
    assert superuser.is_active and superuser.is_superuser
    assert role_of(superuser) is None and staff_entries(mongo_db) == []


def test_a_superuser_without_a_role_cannot_remove_the_last_administrator(
    staff_users, superuser, mongo_db
):
    root = browser("root@example.com")
    last = staff_users[ADMINISTRATOR]

    for action, data in [
        ("staff:team_deactivate", {"reason": "x"}),
        ("staff:team_role", {"role": "box-office"}),
    ]:
        refused = post(root, url(action, last), data)
        assert refused.status_code == 409
        assert "last active Administrator" in page_of(refused)

    last.refresh_from_db()
    assert last.is_active and role_of(last) == ADMINISTRATOR
    assert staff_entries(mongo_db) == []


def test_adding_the_email_of_an_account_without_a_role_gives_it_the_role(
    admin, superuser, mongo_db
):
    done = post(
        admin,
        reverse("staff:team_add"),
        {"email": "root@example.com", "role": "administrator"},
    )

    assert done.status_code == 302
    superuser.refresh_from_db()
    assert role_of(superuser) == ADMINISTRATOR and not superuser.is_superuser
    assert "had staff access without a role" in page_of(admin.get(TEAM))
    (entry,) = staff_entries(mongo_db)
    assert (entry["before"], entry["after"]) == ("staff without a role", ADMINISTRATOR)


# --- The commands: the same rules, on the trail --------------------------------


def test_the_commands_go_on_the_trail_as_commands(db, mongo_db, staff_users):
    call_command("createstaff", email="ann@example.com", role="box-office")
    call_command("createstaff", email="ann@example.com", role="shop-manager")
    call_command("deactivatestaff", email="ann@example.com", reason="contract ended")

    entries = staff_entries(mongo_db)
    assert [(e["action"], e["actor"]) for e in entries] == [
        ("staff added", "command:createstaff"),
        ("staff role changed", "command:createstaff"),
        ("staff deactivated", "command:deactivatestaff"),
    ]
    assert entries[2]["reason"] == "contract ended"
    with pytest.raises(CommandError, match="no staff account"):
        call_command("deactivatestaff", email="ann@example.com")


def test_a_members_role_form_shows_their_role_or_what_a_refused_form_asked(
    admin, staff_users, superuser
):
    box = staff_users[BOX_OFFICE]
    selected = re.compile(r'<option value="([\w-]+)" selected>')

    page = page_of(admin.get(TEAM))
    assert selected.findall(row_of(page, box)) == ["box-office"]
    assert selected.findall(row_of(page, superuser)) == []

    refused = post(
        admin,
        url("staff:team_role", box),
        {"role": "shop-manager", "reason": "x" * 501},
    )

    assert refused.status_code == 400 and role_of(box) == BOX_OFFICE
    assert selected.findall(row_of(page_of(refused), box)) == ["shop-manager"]
