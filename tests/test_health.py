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
def test_healthz_fails_with_a_clear_message_when_mongo_is_down(client, settings):
    from config.embedded import free_port

    settings.MONGODB_SERVER_SELECTION_MS = 300
    mongo.connect(f"mongodb://127.0.0.1:{free_port()}/?directConnection=true")

    response = client.get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["django_db"] == "ok"
    assert body["checks"]["mongodb"].startswith("unreachable:")
