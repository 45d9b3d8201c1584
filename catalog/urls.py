from django.urls import path

from catalog import views

app_name = "catalog"
urlpatterns = [
    path("", views.browse_page, name="home"),
    path("c/<path:path>/", views.browse_page, name="browse"),
    path("p/<str:item_id>/", views.item_detail, name="item"),
    path("stores/", views.store_list, name="stores"),
    path("store/", views.store_choose, name="store-choose"),
    path("location/", views.location_set, name="location"),
]
