import re

import pytest


@pytest.mark.django_db
def test_base_page_loads_vendored_htmx_and_wires_the_csrf_header(client):
    response = client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert '<script src="/static/vendor/htmx-2.0.11.min.js"' in html
    header = re.search(r"<body hx-headers='\{\"X-CSRFToken\": \"([^\"]+)\"\}'>", html)
    assert header, "the body must carry the CSRF token for htmx requests"
    assert "csrftoken" in response.cookies


@pytest.mark.django_db
def test_vendored_htmx_is_served(client):
    response = client.get("/static/vendor/htmx-2.0.11.min.js")

    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert b'version:"2.0.11"' in body
