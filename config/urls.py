from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from config import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico whatever the page says.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"))),
    # Log in and out, password change and reset (Django's views), then
    # sign-up, the account page and claiming orders by email.
    path("accounts/", include("accounts.auth_urls")),
    path("accounts/", include("accounts.urls")),
    path("staff/", include("staff.urls")),
    path("", include("booking.urls")),
    path("", include("shop.urls")),
    path("", include("catalog.urls")),
]
