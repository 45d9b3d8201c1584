from django.apps import AppConfig


class BookingConfig(AppConfig):
    """Theaters, sessions, seat maps and seat reservations."""

    name = "booking"
