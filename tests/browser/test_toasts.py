"""The page's messages (static/js/toasts.js): a confirmation fades, a
refusal stays until it is dismissed, by mouse or keyboard. The browser's
clock is Playwright's, moved on at once rather than waited for."""

from playwright.sync_api import expect

from shop.services.carts import cart_add_item
from tests.shop.factories import make_product


def open_product(page, sku: str, *, stock: int, clock: bool = True) -> None:
    """A product's page, the browser's clock Playwright's when ``clock``."""
    make_product(sku=sku, title=f"Mug {sku}", price="5.00", stock=stock)
    if clock:
        page.clock.install()
    page.goto(f"/p/item-{sku}/?sku={sku}")


def add(page, quantity: int):
    form = page.locator("form.add-to-cart")
    form.locator("input[name=quantity]").fill(str(quantity))
    form.get_by_role("button", name="Add to cart").click()


def test_a_confirmation_fades_and_a_refusal_stays_until_dismissed(page):
    open_product(page, "MUG-T", stock=3)
    add(page, 1)
    added = page.locator("#toasts .toast", has_text="Added to your cart.")
    expect(added).to_be_visible()

    page.clock.fast_forward(10_000)
    expect(added).to_have_count(0)

    # Another shopper takes the other two while this page is open.
    cart_add_item(owner="anon:quicker", sku="MUG-T", quantity=2)
    add(page, 1)
    refused = page.locator("#toasts .toast-error")
    expect(refused).to_contain_text("sold out")

    page.clock.fast_forward(60_000)
    expect(refused).to_be_visible()
    dismiss = refused.get_by_role("button", name="Dismiss this message")
    dismiss.focus()
    page.keyboard.press("Enter")
    expect(refused).to_have_count(0)


def test_a_new_message_replaces_the_last(page):
    open_product(page, "MUG-R", stock=5, clock=False)
    add(page, 1)
    expect(page.locator("#toasts .toast-success")).to_have_count(1)
    cart_add_item(owner="anon:quicker", sku="MUG-R", quantity=4)
    add(page, 1)
    expect(page.locator("#toasts .toast-error")).to_contain_text("sold out")
    expect(page.locator("#toasts .toast")).to_have_count(1)  # the refusal only


def test_a_confirmation_under_the_pointer_waits(page):
    open_product(page, "MUG-P", stock=5)
    add(page, 1)
    added = page.locator("#toasts .toast", has_text="Added to your cart.")
    added.hover()

    page.clock.fast_forward(10_000)
    expect(added).to_be_visible()

    # The keyboard comes to it, then the pointer leaves: it still waits.
    add_button = page.locator("form.add-to-cart").get_by_role("button")
    add_button.focus()
    added.get_by_role("button", name="Dismiss this message").focus()
    page.mouse.move(0, 0)
    page.clock.fast_forward(10_000)
    expect(added).to_be_visible()

    # Focus leaves too: it fades, and focus is where it was, not lost.
    add_button.focus()
    page.clock.fast_forward(10_000)
    expect(added).to_have_count(0)
    expect(add_button).to_be_focused()


def test_dismissing_a_message_gives_focus_back(page):
    open_product(page, "MUG-F", stock=1, clock=False)
    cart_add_item(owner="anon:quicker", sku="MUG-F", quantity=1)
    add(page, 1)
    refused = page.locator("#toasts .toast-error")
    expect(refused).to_contain_text("sold out")
    add_button = page.locator("form.add-to-cart").get_by_role("button")
    add_button.focus()

    refused.get_by_role("button", name="Dismiss this message").focus()
    page.keyboard.press("Enter")

    expect(refused).to_have_count(0)
    expect(add_button).to_be_focused()


def test_a_message_is_announced_without_its_dismiss_button(page):
    """A screen reader reads the message from a region of its own (a refusal
    from the assertive one); the toast and its Dismiss button sit in no live
    region (the button would be read with every message). The same message
    twice is read twice; a message dismissed leaves nothing behind."""
    open_product(page, "MUG-A", stock=1, clock=False)
    cart_add_item(owner="anon:quicker", sku="MUG-A", quantity=1)
    alarm = page.locator("#toast-alarm[aria-live=assertive]")

    add(page, 1)
    refused = page.locator("#toasts .toast-error")
    expect(refused).to_contain_text("sold out")
    expect(alarm).to_have_text(refused.inner_text().replace("\u00d7", "").strip())
    expect(page.locator("#toast-announcer")).to_have_text("")
    said = alarm.locator("p").element_handle()
    live_around_button = refused.get_by_role("button").evaluate(
        "b => b.closest('[aria-live], [role=status], [role=alert]') !== null"
    )
    assert live_around_button is False

    first = refused.element_handle()
    add(page, 1)  # refused again, with the same words
    page.wait_for_function("toast => !toast.isConnected", arg=first)  # replaced
    # Read again: the words are a new element, the first one's are gone.
    page.wait_for_function("p => !p.isConnected", arg=said)
    expect(alarm.locator("p")).to_have_count(1)
    expect(alarm).to_contain_text("sold out")

    refused.get_by_role("button", name="Dismiss this message").click()
    expect(alarm).to_have_text("")


def test_a_message_that_stays_never_covers_the_pages_last_line_on_a_phone(page):
    page.set_viewport_size({"width": 375, "height": 667})
    open_product(page, "MUG-B", stock=1, clock=False)
    cart_add_item(owner="anon:quicker", sku="MUG-B", quantity=1)
    add(page, 1)
    refused = page.locator("#toasts .toast-error")
    expect(refused).to_contain_text("sold out")

    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    footer = page.locator(".site-footer").bounding_box()
    toast = refused.bounding_box()
    assert footer["y"] + footer["height"] <= toast["y"], (footer, toast)
    # The room is the message's own (measured), not the stylesheet's guess.
    room = page.evaluate("getComputedStyle(document.body).paddingBottom")
    assert abs(float(room.removesuffix("px")) - (667 - toast["y"])) <= 1, room

    # Dismissed, the room goes too.
    refused.get_by_role("button", name="Dismiss this message").click()
    expect(page.locator("body")).to_have_css("padding-bottom", "0px")


def test_a_message_the_page_came_with_is_read_once_it_has_loaded(page):
    """A form posted without htmx (signing up), then its redirect: the page
    arrives with the message, whose words go into the live region that was
    on the page, empty, from the start (what is there at load is not read)."""
    served = page.request.get("/").text()
    assert (
        '<div id="toast-announcer" class="visually-hidden" aria-live="polite"></div>'
        in served
    )
    assert (
        '<div id="toast-alarm" class="visually-hidden" aria-live="assertive"></div>'
        in served
    )

    page.goto("/accounts/signup/")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label("Password", exact=True).fill("correct-horse-battery-9")
    page.get_by_label("Password again").fill("correct-horse-battery-9")
    page.get_by_role("button", name="Create my account").click()

    welcome = "Welcome to Marquee: your account is ready."
    expect(page.locator("#toasts .toast-success")).to_contain_text(welcome)
    expect(page.locator("#toast-announcer")).to_have_text(welcome)
    expect(page.locator("#toast-alarm")).to_have_text("")
    expect(page.locator("#toast-announcer")).to_have_count(1)


# Whether the focused control is hidden by the message on screen, anywhere:
# points across it that lie in the window, and what each one hits (the
# message's own Dismiss button is in it, not under it).
UNDER_THE_MESSAGE = """() => {
  const focused = document.activeElement;
  const message = document.querySelector('#toasts .toast');
  const box = focused.getBoundingClientRect();
  let points = 0, covered = 0;
  for (let i = 1; i < 6; i++) for (let j = 1; j < 6; j++) {
    const x = box.left + box.width * i / 6, y = box.top + box.height * j / 6;
    if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) continue;
    points++;
    const hit = document.elementFromPoint(x, y);
    if (message && message.contains(hit) && !focused.contains(hit)) covered++;
  }
  return {id: focused.id || focused.textContent.trim().slice(0, 30), points, covered};
}"""


def test_a_message_that_stays_never_hides_the_control_in_focus_on_a_phone(page):
    """WCAG 2.4.11: a refusal stays at the bottom of the screen until it is
    dismissed; moving through a long page meanwhile, by the seat map's
    arrow keys or by Tab, the control that takes focus is never under it."""
    from booking import services
    from tests.booking.factories import make_session, make_theater, wide_layout

    session_id = make_session(make_theater("Wide Hall", layout=wide_layout(rows=20)))
    page.set_viewport_size({"width": 375, "height": 667})
    page.goto(f"/sessions/{session_id}/")
    services.seats_hold(session_id=session_id, cart_id="quicker", seats=[(19, 6)])
    page.locator("#seat-19-6").click()
    refused = page.locator("#toasts .toast-error")
    expect(refused).to_contain_text("just taken")
    # The room kept is the message's own (measured) and a little more.
    padding = page.evaluate(
        "getComputedStyle(document.documentElement).scrollPaddingBottom"
    )
    room = 667 - refused.bounding_box()["y"]
    assert abs(float(padding.removesuffix("px")) - (room + 8)) <= 1, (padding, room)

    seen = []
    page.locator("#seat-0-0").focus()
    page.evaluate("window.scrollTo(0, 0)")
    for key in ["ArrowDown"] * 19 + ["ArrowRight"] * 8 + ["ArrowUp"] * 19:
        page.keyboard.press(key)
        seen.append(page.evaluate(UNDER_THE_MESSAGE))
    page.locator(".skip-link").focus()
    page.evaluate("window.scrollTo(0, 0)")
    for _ in range(20):
        page.keyboard.press("Tab")
        seen.append(page.evaluate(UNDER_THE_MESSAGE))

    assert all(stop["points"] for stop in seen)  # each one in the window
    assert [stop for stop in seen if stop["covered"]] == []
