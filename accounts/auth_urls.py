"""Django's own account views, under their usual names (Django's views
reverse ``password_reset_done`` and the like without a namespace)."""

from django.contrib.auth import views as auth
from django.urls import path, reverse_lazy

from accounts.forms import EmailLoginForm, QueuedPasswordResetForm

urlpatterns = [
    path(
        "login/",
        auth.LoginView.as_view(authentication_form=EmailLoginForm),
        name="login",
    ),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    path(
        "password/change/",
        auth.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "password/change/done/",
        auth.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path(
        "password/reset/",
        auth.PasswordResetView.as_view(
            form_class=QueuedPasswordResetForm,
            success_url=reverse_lazy("password_reset_done"),
        ),
        name="password_reset",
    ),
    path(
        "password/reset/sent/",
        auth.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        auth.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/done/",
        auth.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
]
