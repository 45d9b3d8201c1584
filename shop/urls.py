from django.urls import path, re_path

from shop import views

app_name = "shop"
urlpatterns = [
    path("cart/", views.cart_page, name="cart"),
    path("cart/add/", views.add, name="add"),
    path("cart/update/", views.update, name="update"),
    path("cart/remove/", views.remove, name="remove"),
    path("cart/clear/", views.clear, name="clear"),
    path("cart/extend/", views.extend, name="extend"),
    path("cart/expired/", views.expired, name="expired"),
    path("cart/tickets/remove/", views.remove_tickets, name="remove_tickets"),
    re_path(
        r"^cart/tickets/(?P<session_id>[0-9a-f]{24})/hold/$",
        views.hold_seats,
        name="hold_seats",
    ),
    re_path(
        r"^cart/tickets/(?P<session_id>[0-9a-f]{24})/release/$",
        views.release_seats,
        name="release_seats",
    ),
    re_path(
        r"^cart/tickets/(?P<session_id>[0-9a-f]{24})/best/$",
        views.best_seats,
        name="best_seats",
    ),
    path("checkout/", views.checkout, name="checkout"),
    path("orders/", views.my_orders, name="orders"),
    re_path(r"^orders/(?P<number>MQ-\d{1,12})/$", views.my_order, name="order"),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/cancel/$",
        views.my_order_cancel,
        name="order_cancel",
    ),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/(?P<token>[A-Za-z0-9_-]{20,64})/$",
        views.order_link,
        name="order_link",
    ),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/(?P<token>[A-Za-z0-9_-]{20,64})/cancel/$",
        views.order_link_cancel,
        name="order_link_cancel",
    ),
]
