def test_home_page_loads_with_htmx_in_chromium(page, screenshot):
    page.goto("/")

    assert page.locator("a.brand").inner_text() == "Marquee"
    assert page.evaluate("() => window.htmx && window.htmx.version") == "2.0.11"
    token = page.evaluate(
        "() => JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken']"
    )
    assert token
    screenshot(page, "home")
