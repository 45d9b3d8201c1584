from django.urls import path, register_converter

from booking import views


class ObjectIdConverter:
    """24 hex digits: anything else is no session at all (404 by routing)."""

    regex = "[0-9a-f]{24}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)


register_converter(ObjectIdConverter, "oid")

app_name = "booking"
urlpatterns = [
    path("shows/", views.shows, name="shows"),
    path("sessions/<oid:session_id>/", views.session_detail, name="session"),
    path("sessions/<oid:session_id>/map/", views.seat_map, name="seat_map"),
]
