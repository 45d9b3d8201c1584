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
    path("checkout/", views.checkout, name="checkout"),
    path("orders/", views.my_orders, name="orders"),
    re_path(r"^orders/(?P<number>MQ-\d{1,12})/$", views.my_order, name="order"),
    re_path(
        r"^orders/(?P<number>MQ-\d{1,12})/(?P<token>[A-Za-z0-9_-]{20,64})/$",
        views.order_link,
        name="order_link",
    ),
]
