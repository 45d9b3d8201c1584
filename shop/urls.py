from django.urls import path, re_path

from shop.views import cart, orders, seats, tickets

SESSION = r"^sessions/(?P<session_id>[0-9a-f]{24})/"

app_name = "shop"
urlpatterns = [
    path("cart/", cart.cart_page, name="cart"),
    path("cart/add/", cart.add, name="add"),
    path("cart/update/", cart.update, name="update"),
    path("cart/remove/", cart.remove, name="remove"),
    path("cart/clear/", cart.clear, name="clear"),
    path("cart/extend/", cart.extend, name="extend"),
    path("cart/expired/", cart.expired, name="expired"),
    path("cart/tickets/remove/", cart.remove_tickets, name="remove_tickets"),
    # A performance's seat map (24 hex digits: anything else is no session
    # at all, 404 by routing).
    re_path(SESSION + "$", seats.session_page, name="session"),
    re_path(SESSION + "map/$", seats.seat_map_partial, name="seat_map"),
    re_path(
        r"^cart/tickets/(?P<session_id>[0-9a-f]{24})/hold/$",
        seats.hold_seats,
        name="hold_seats",
    ),
    re_path(
        r"^cart/tickets/(?P<session_id>[0-9a-f]{24})/release/$",
        seats.release_seats,
        name="release_seats",
    ),
    re_path(
        r"^cart/tickets/(?P<session_id>[0-9a-f]{24})/best/$",
        seats.best_seats,
        name="best_seats",
    ),
    path("checkout/", orders.checkout, name="checkout"),
    path("orders/", orders.my_orders, name="orders"),
    re_path(r"^orders/(?P<number>MQ-\d{1,12})/$", orders.my_order, name="order"),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/cancel/$",
        orders.my_order_cancel,
        name="order_cancel",
    ),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/(?P<token>[A-Za-z0-9_-]{20,64})/$",
        orders.order_link,
        name="order_link",
    ),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/(?P<token>[A-Za-z0-9_-]{20,64})/cancel/$",
        orders.order_link_cancel,
        name="order_link_cancel",
    ),
    # The tickets to keep: the PDF and a calendar file per performance.
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/tickets\.pdf$",
        tickets.my_order_pdf,
        name="order_pdf",
    ),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/(?P<session_id>[0-9a-f]{24})\.ics$",
        tickets.my_order_ics,
        name="order_ics",
    ),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/(?P<token>[A-Za-z0-9_-]{20,64})/tickets\.pdf$",
        tickets.order_link_pdf,
        name="order_link_pdf",
    ),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/(?P<token>[A-Za-z0-9_-]{20,64})/"
        r"(?P<session_id>[0-9a-f]{24})\.ics$",
        tickets.order_link_ics,
        name="order_link_ics",
    ),
]
