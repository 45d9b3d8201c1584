from django.urls import path

from staff import views, views_boxoffice, views_stock, views_team

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
    # Box office
    path("box-office/", views_boxoffice.performances, name="performances"),
    path("box-office/schedule", views_boxoffice.schedule, name="schedule"),
    path("box-office/<str:session_id>/", views_boxoffice.seat_map, name="seat_map"),
    path(
        "box-office/<str:session_id>/release/<str:cart_id>",
        views_boxoffice.seat_map_release,
        name="seat_map_release",
    ),
    path(
        "box-office/<str:session_id>/block",
        views_boxoffice.seat_map_block,
        name="seat_map_block",
    ),
    path(
        "box-office/<str:session_id>/unblock",
        views_boxoffice.seat_map_unblock,
        name="seat_map_unblock",
    ),
    path(
        "box-office/<str:session_id>/sell",
        views_boxoffice.seat_map_sell,
        name="seat_map_sell",
    ),
    path(
        "box-office/<str:session_id>/check-in",
        views_boxoffice.check_in,
        name="check_in",
    ),
    path(
        "box-office/<str:session_id>/check-in/counter",
        views_boxoffice.check_in_counter,
        name="check_in_counter",
    ),
    path(
        "box-office/<str:session_id>/check-in/undo",
        views_boxoffice.check_in_undo,
        name="check_in_undo",
    ),
    # Stock
    path("stock/", views_stock.stock, name="stock"),
    path("stock/low", views_stock.low_stock, name="low_stock"),
    path("stock/<str:sku>/", views_stock.stock_sku, name="stock_sku"),
    path("stock/<str:sku>/receive", views_stock.stock_receive, name="stock_receive"),
    path("stock/<str:sku>/adjust", views_stock.stock_adjust, name="stock_adjust"),
    path(
        "stock/<str:sku>/threshold", views_stock.stock_threshold, name="stock_threshold"
    ),
    path("stock/<str:sku>/store", views_stock.stock_store, name="stock_store"),
    # Staff (the team)
    path("team/", views_team.team, name="team"),
    path("team/add", views_team.team_add, name="team_add"),
    path("team/<int:user_id>/role", views_team.team_role, name="team_role"),
    path(
        "team/<int:user_id>/deactivate",
        views_team.team_deactivate,
        name="team_deactivate",
    ),
    path(
        "team/<int:user_id>/reactivate",
        views_team.team_reactivate,
        name="team_reactivate",
    ),
    path("team/<int:user_id>/invite", views_team.team_invite, name="team_invite"),
]
