from django.urls import path

from booking import views

app_name = "booking"
urlpatterns = [
    path("shows/", views.shows, name="shows"),
]
