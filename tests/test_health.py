import time

import pytest

from config import mongo


@pytest.mark.django_db
def test_healthz_reports_both_databases_reachable(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"mongodb": "ok", "django_db": "ok"},
    }


@pytest.mark.django_db
def test_healthz_names_the_database_that_is_down_and_logs_why(client, settings, caplog):
    from config.embedded import free_port

    settings.MONGODB_SERVER_SELECTION_MS = 300
    port = free_port()
    mongo.connect(f"mongodb://127.0.0.1:{port}/?directConnection=true")

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"mongodb": "unreachable", "django_db": "ok"},
    }
    # The reason (the server's address here) is for the log, not the public.
    assert str(port) not in response.content.decode()
    assert f"health check: mongodb unreachable: 127.0.0.1:{port}" in caplog.text


def _unreachable_embedded_uri() -> str:
    from config.embedded import URI_OPTIONS, free_port

    return f"mongodb://127.0.0.1:{free_port()}/?{URI_OPTIONS}"


# A page during an outage: the web worker's 0.5 s server selection and a
# render, with room for a loaded machine, against the driver's default 30 s.
ANSWERS_WITHIN = 2.5


@pytest.fixture
def web_worker_timeout(settings):
    """The server-selection budget of a web worker (config/gunicorn.py)."""
    settings.MONGODB_SERVER_SELECTION_MS = 500


@pytest.mark.django_db
def test_a_page_answers_503_at_once_while_mongo_is_down(client, web_worker_timeout):
    mongo.connect(_unreachable_embedded_uri())

    started = time.monotonic()
    response = client.get("/")
    took = time.monotonic() - started

    assert response.status_code == 503
    assert took < ANSWERS_WITHIN, took
    assert response["Retry-After"] == "5"
    assert response["Cache-Control"] == "no-store"
    assert b"Back in a moment" in response.content
    assert b"marquee.css" in response.content  # the site's styles, not a bare page


@pytest.mark.django_db
def test_during_an_outage_later_requests_do_not_wait_for_the_database(
    client, web_worker_timeout
):
    mongo.connect(_unreachable_embedded_uri())
    assert client.get("/").status_code == 503

    started = time.monotonic()
    statuses = [client.get("/shows/").status_code for _ in range(5)]

    # The driver knows the server is down: five pages answered without a
    # server selection each (which takes half a second on this URI: five
    # would take 2.5 s, three 1.5 s).
    assert statuses == [503] * 5
    assert time.monotonic() - started < 1.25


@pytest.mark.django_db
def test_healthz_answers_at_once_while_the_embedded_server_is_down(
    client, web_worker_timeout
):
    mongo.connect(_unreachable_embedded_uri())

    started = time.monotonic()
    response = client.get("/healthz")

    assert response.status_code == 503
    assert time.monotonic() - started < ANSWERS_WITHIN


@pytest.mark.django_db
def test_pages_recover_as_soon_as_mongo_answers_again(
    client, mongo_uri, mongo_db, web_worker_timeout
):
    mongo.connect(_unreachable_embedded_uri())
    assert client.get("/shows/").status_code == 503

    mongo.connect(mongo_uri, db=mongo_db.name)

    assert client.get("/shows/").status_code == 200
