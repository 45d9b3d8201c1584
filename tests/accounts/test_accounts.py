"""Sign-up, log in and out, password change and reset, My orders, and the
anonymous cart and orders that become the account's."""

import html
import re
from datetime import timedelta

from django.contrib.auth.models import User
from django.test import Client

from tests.accounts.conftest import PASSWORD, sent
from tests.shop.factories import make_product
from tests.shop.test_views import checkout_data

NEW_PASSWORD = "another-long-secret-42"


def the_cart(mongo_db, owner_prefix=""):
    return mongo_db.carts.find_one({"live_owner": {"$regex": f"^{owner_prefix}"}})


def buy(client, mongo_db, email="ada@example.com"):
    """Add a product and pay for it; the order document."""
    client.post("/cart/add/", {"sku": "SNKR-42", "quantity": "1"})
    cart = mongo_db.carts.find_one({"state": "active"}, sort=[("modified_at", -1)])
    response = client.post("/checkout/", checkout_data(cart["_id"], email=email))
    assert response.status_code == 302, response.content
    return mongo_db.orders.find_one({"cart_id": cart["_id"]})


def test_logging_out_goes_home_with_a_message_never_a_500(client, ada):
    client.force_login(ada)

    response = client.post("/accounts/logout/", follow=True)

    assert response.status_code == 200
    assert response.redirect_chain == [("/", 302)]
    assert "You are logged out" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_logging_in_lands_on_my_orders_not_a_404(client, ada):
    response = client.post(
        "/accounts/login/", {"username": "Ada@Example.com", "password": PASSWORD}
    )

    assert response.status_code == 302
    assert response["Location"] == "/orders/"
    assert client.get("/orders/").status_code == 200


def test_logging_in_says_what_of_the_cart_could_not_come_along(client, ada):
    from shop.services.carts import cart_add_item

    make_product(sku="SNKR-42", title="Canvas sneaker")
    cart_add_item(owner=f"user:{ada.pk}", sku="SNKR-42", quantity=98)
    client.post("/cart/add/", {"sku": "SNKR-42", "quantity": "2"})  # 100 > 99

    client.post(
        "/accounts/login/", {"username": "ada@example.com", "password": PASSWORD}
    )

    page = html.unescape(client.get("/cart/").content.decode())
    assert "Not all of what you chose before logging in could join your cart" in page
    assert "Canvas sneaker" in page


def test_a_wrong_password_is_refused_with_the_form_again(client, ada):
    response = client.post(
        "/accounts/login/", {"username": "ada@example.com", "password": "nope"}
    )

    assert response.status_code == 200
    assert "That email and password do not match an account." in (
        response.content.decode()
    )
    assert "_auth_user_id" not in client.session


def test_signing_up_creates_the_account_and_logs_in(client):
    response = client.post(
        "/accounts/signup/",
        {"email": "Grace@Example.com", "password1": PASSWORD, "password2": PASSWORD},
    )

    assert response.status_code == 302
    user = User.objects.get()
    assert (user.username, user.email) == ("grace@example.com", "grace@example.com")
    assert user.check_password(PASSWORD)
    assert client.session["_auth_user_id"] == str(user.pk)


def test_sign_up_applies_djangos_password_validators_and_loses_nothing(client):
    short = client.post(
        "/accounts/signup/",
        {"email": "g@example.com", "password1": "abc", "password2": "abc"},
    )
    numeric = client.post(
        "/accounts/signup/",
        {
            "email": "g@example.com",
            "password1": "12345678901",
            "password2": "12345678901",
        },
    )
    differ = client.post(
        "/accounts/signup/",
        {"email": "g@example.com", "password1": PASSWORD, "password2": PASSWORD + "x"},
    )

    assert [short.status_code, numeric.status_code, differ.status_code] == [400] * 3
    assert "too short" in short.content.decode()
    assert "entirely numeric" in numeric.content.decode()
    assert "The two passwords differ" in differ.content.decode()
    assert 'value="g@example.com"' in differ.content.decode()
    assert not User.objects.exists()


def test_a_sign_up_beaten_by_its_double_click_says_the_account_exists(
    client, monkeypatch
):
    """Two sign-ups of one email at once: the second's check passed before
    the first's insert (forced here: the account appears right after the
    check), and the unique username refuses it: the form's message, no 500."""
    from accounts.forms import SignUpForm

    checked = SignUpForm.clean_email

    def beaten(form):
        email = checked(form)
        User.objects.create_user(username=email, email=email, password=PASSWORD)
        return email

    monkeypatch.setattr(SignUpForm, "clean_email", beaten)
    response = client.post(
        "/accounts/signup/",
        {"email": "twice@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )

    assert response.status_code == 400
    assert "exists already" in response.content.decode()
    assert User.objects.count() == 1
    assert "_auth_user_id" not in client.session


def test_an_email_has_one_account(client, ada):
    response = client.post(
        "/accounts/signup/",
        {"email": "ADA@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )

    assert response.status_code == 400
    assert "exists already" in response.content.decode()
    assert User.objects.count() == 1


def test_the_anonymous_cart_and_orders_of_this_browser_come_with_sign_up(
    client, mongo_db
):
    make_product(sku="SNKR-42")
    earlier = buy(client, mongo_db, email="someone@example.com")
    client.post("/cart/add/", {"sku": "SNKR-42", "quantity": "2"})

    client.post(
        "/accounts/signup/",
        {"email": "new@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )

    user = User.objects.get()
    owner = f"user:{user.pk}"
    assert mongo_db.orders.find_one({"_id": earlier["_id"]})["owner"] == owner
    assert the_cart(mongo_db)["owner"] == owner
    assert earlier["number"] in client.get("/orders/").content.decode()


def test_changing_the_password(client, ada):
    client.force_login(ada)

    response = client.post(
        "/accounts/password/change/",
        {
            "old_password": PASSWORD,
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
    )

    assert response.status_code == 302
    ada.refresh_from_db()
    assert ada.check_password(NEW_PASSWORD)
    # This browser stays logged in; the others' sessions no longer match.
    assert client.get("/accounts/").status_code == 200


def test_resetting_the_password_by_email(client, ada, mail_dir):
    response = client.post("/accounts/password/reset/", {"email": "ADA@example.com"})
    assert response.status_code == 302

    (message,) = sent(mail_dir)
    assert message["To"] == "ada@example.com"
    body = message.get_content()
    link = re.search(r"http://testserver(/accounts/password/reset/\S+/)", body)[1]
    form = client.get(link, follow=True)
    assert form.status_code == 200 and "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )

    assert done.status_code == 302
    ada.refresh_from_db()
    assert ada.check_password(NEW_PASSWORD)
    # The link worked once.
    again = client.get(link, follow=True)
    assert "no longer works" in again.content.decode()


def test_a_reset_link_is_never_in_the_queue_the_log_or_a_retry(
    client, ada, settings, caplog, mail_dir
):
    from django_q.models import Schedule

    from tests.accounts.test_emails import closed_port

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", closed_port()
    settings.EMAIL_TIMEOUT = 2

    client.post("/accounts/password/reset/", {"email": "ada@example.com"})
    client.force_login(ada)
    client.post("/accounts/claim/")

    retries = list(Schedule.objects.all())
    assert sorted(r.func for r in retries) == ["accounts.tasks.send_account_email"] * 2
    for retry in retries:
        assert "/accounts/" not in retry.args  # the task makes the link itself
    assert "/accounts/password/reset/" not in caplog.text
    assert "/accounts/claim/" not in caplog.text
    # The retry sends a link that works.
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    from accounts.tasks import send_account_email

    assert send_account_email("reset", ada.pk, 2) == "sent"
    # As an earlier version queued it (the request's site before the attempt).
    site = {"domain": "testserver", "site_name": "x", "protocol": "http"}
    assert send_account_email("claim", ada.pk, site, 2) == "sent"
    assert send_account_email("claim", ada.pk, site) == "sent"
    message, *legacy = sent(mail_dir)
    assert len(legacy) == 2
    link = re.search(
        r"http://testserver(/accounts/password/reset/\S+/)", message.get_content()
    )[1]
    client.logout()
    assert "Choose a new password" in client.get(link, follow=True).content.decode()


def test_a_reset_for_an_unknown_email_sends_nothing_and_says_the_same(client, mail_dir):
    response = client.post("/accounts/password/reset/", {"email": "who@example.com"})

    assert response.status_code == 302
    assert sent(mail_dir) == []


def test_a_reset_link_goes_to_the_site_whatever_host_the_request_named(
    client, ada, mail_dir, settings
):
    """A reset asked for through another Host (a permissive ALLOWED_HOSTS,
    a proxy passing the client's Host on) still mails a link to SITE_URL:
    a link to the sender's host would give them the account's token."""
    settings.ALLOWED_HOSTS = ["*"]
    settings.SITE_URL = "https://tickets.example.com"

    client.post(
        "/accounts/password/reset/",
        {"email": "ada@example.com"},
        HTTP_HOST="evil.example",
    )

    (message,) = sent(mail_dir)
    body = message.get_content()
    assert "evil.example" not in body
    assert re.search(
        r"https://tickets\.example\.com/accounts/password/reset/\S+/", body
    )


def test_my_orders_needs_an_account(client):
    response = client.get("/orders/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/orders/")


def test_orders_placed_with_my_email_elsewhere_attach_by_an_emailed_link(
    client, ada, mongo_db, mail_dir
):
    make_product(sku="SNKR-42")
    elsewhere = buy(Client(), mongo_db, email="ada@example.com")
    not_mine = buy(Client(), mongo_db, email="bob@example.com")
    client.force_login(ada)
    page = client.get("/accounts/").content.decode()
    # The offer is made whether or not orders exist: an address is not
    # proven until its owner opens the link, so no count is shown.
    assert "Email me the link" in page and "1 order" not in page

    client.post("/accounts/claim/")
    claim = [m for m in sent(mail_dir) if "earlier" in m["Subject"]][-1]
    link = re.search(r"http://testserver(/accounts/claim/\S+/)", claim.get_content())[1]
    assert client.get(link).status_code == 200  # a GET changes nothing
    assert mongo_db.orders.find_one({"_id": elsewhere["_id"]})["owner"].startswith(
        "anon:"
    )
    client.post(link)

    assert (
        mongo_db.orders.find_one({"_id": elsewhere["_id"]})["owner"] == f"user:{ada.pk}"
    )
    assert mongo_db.orders.find_one({"_id": not_mine["_id"]})["owner"].startswith(
        "anon:"
    )
    assert elsewhere["number"] in client.get("/orders/").content.decode()


def test_a_claim_link_works_only_for_its_account(client, ada, mongo_db, mail_dir):
    make_product(sku="SNKR-42")
    order = buy(Client(), mongo_db, email="ada@example.com")
    client.force_login(ada)
    client.post("/accounts/claim/")
    claim = [m for m in sent(mail_dir) if "earlier" in m["Subject"]][-1]
    link = re.search(r"http://testserver(/accounts/claim/\S+/)", claim.get_content())[1]
    mallory = User.objects.create_user("m@example.com", "ada@example.com", PASSWORD)
    other = Client()
    other.force_login(mallory)

    forged = other.post(link)
    tampered = client.post(link[:-3] + "xx/")

    assert forged.status_code == 400 and tampered.status_code == 400
    assert mongo_db.orders.find_one({"_id": order["_id"]})["owner"].startswith("anon:")


def test_logging_in_attaches_the_orders_this_browser_placed(
    client, ada, mongo_db, settings
):
    settings.ORDERS_FOLLOW_LOGIN_MINUTES = 60
    make_product(sku="SNKR-42")
    yesterday = buy(client, mongo_db, email="someone@example.com")
    mongo_db.orders.update_one(
        {"_id": yesterday["_id"]},
        {"$set": {"created_at": yesterday["created_at"] - timedelta(hours=20)}},
    )
    earlier = buy(client, mongo_db, email="typo@example.com")
    elsewhere = buy(Client(), mongo_db, email="typo@example.com")

    client.post("/accounts/login/", {"username": ada.email, "password": PASSWORD})

    owner = f"user:{ada.pk}"
    assert mongo_db.orders.find_one({"_id": earlier["_id"]})["owner"] == owner
    # Another browser's order, even with the same email, stays its own.
    assert mongo_db.orders.find_one({"_id": elsewhere["_id"]})["owner"] != owner
    # This browser's order of yesterday, perhaps another person's on a
    # shared computer, stays anonymous: its email may claim it.
    kept = mongo_db.orders.find_one({"_id": yesterday["_id"]})["owner"]
    assert kept.startswith("anon:")
    mine = client.get("/orders/").content.decode()
    assert f'href="/orders/{earlier["number"]}/"' in mine
    assert f'href="/orders/{yesterday["number"]}/"' not in mine


def test_an_order_placed_in_capitals_is_the_accounts_to_claim(
    client, ada, mongo_db, mail_dir
):
    make_product(sku="SNKR-42")
    shouted = buy(Client(), mongo_db, email="Ada@Example.COM")
    assert shouted["email"] == "ada@example.com"  # one spelling per address
    client.force_login(ada)

    client.post("/accounts/claim/")
    claim = [m for m in sent(mail_dir) if "earlier" in m["Subject"]][-1]
    link = re.search(r"http://testserver(/accounts/claim/\S+/)", claim.get_content())[1]
    client.post(link)

    assert (
        mongo_db.orders.find_one({"_id": shouted["_id"]})["owner"] == f"user:{ada.pk}"
    )


def test_reset_and_claim_emails_are_capped_per_account_per_hour(
    client, ada, settings, mail_dir
):
    settings.ACCOUNT_EMAILS_PER_HOUR = 2
    answers = [
        client.post("/accounts/password/reset/", {"email": "ada@example.com"})
        for _ in range(4)
    ]

    # The page says the same every time; only two links went out.
    assert [a.status_code for a in answers] == [302] * 4
    assert len(sent(mail_dir)) == 2

    client.force_login(ada)
    for _ in range(2):
        client.post("/accounts/claim/")
    refused = client.post("/accounts/claim/", follow=True).content.decode()
    assert "several links this hour" in refused
    assert len([m for m in sent(mail_dir) if "earlier" in m["Subject"]]) == 2
