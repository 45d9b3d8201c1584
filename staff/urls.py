from django.urls import path

from staff import views

app_name = "staff"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("orders/", views.orders, name="orders"),
    path("orders/<str:number>/", views.order, name="order"),
    path("orders/<str:number>/refund", views.order_refund, name="order_refund"),
    path("carts/", views.carts, name="carts"),
    path("carts/<str:cart_id>/release", views.cart_release, name="cart_release"),
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/<int:schedule_id>/run", views.job_run, name="job_run"),
]
