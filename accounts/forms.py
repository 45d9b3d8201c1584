"""Account forms: sign-up by email, log in by email, password reset sent
through the mail queue, and the order claim's request."""

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm

from accounts.mail import account_email_allowed, queue


def normal_email(value: str) -> str:
    """One spelling per address: accounts are keyed by it (as username)."""
    return value.strip().lower()


class SignUpForm(forms.Form):
    email = forms.EmailField(
        max_length=150, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    password1 = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )
    password2 = forms.CharField(
        label="Password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    EXISTS = "An account with this email exists already. Log in, or reset its password."

    def clean_email(self) -> str:
        email = normal_email(self.cleaned_data["email"])
        if get_user_model().objects.filter(username=email).exists():
            raise forms.ValidationError(self.EXISTS)
        return email

    def clean(self):
        data = super().clean()
        first, second = data.get("password1"), data.get("password2")
        if first and second and first != second:
            self.add_error("password2", "The two passwords differ.")
        elif first and data.get("email"):
            user = get_user_model()(username=data["email"], email=data["email"])
            try:
                password_validation.validate_password(first, user)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data

    def save(self):
        email = self.cleaned_data["email"]
        return get_user_model().objects.create_user(
            username=email, email=email, password=self.cleaned_data["password1"]
        )


class EmailLoginForm(AuthenticationForm):
    """Django's login form, asking for the email (the account's username)."""

    username = forms.CharField(
        label="Email",
        max_length=150,
        widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}),
    )

    error_messages = {
        **AuthenticationForm.error_messages,
        # Django's says "username", and that both fields may be
        # case-sensitive; the email is not.
        "invalid_login": (
            "That email and password do not match an account. The password "
            "is case-sensitive."
        ),
    }

    def clean_username(self) -> str:
        return normal_email(self.cleaned_data["username"])


class QueuedPasswordResetForm(PasswordResetForm):
    """Django's reset form (which accounts get a link: active, with a usable
    password); the email goes through the mail queue, and the task makes
    its link (accounts.mail.account_email): the queue never holds one, and
    the link starts with SITE_URL, not with the request's Host header."""

    def send_mail(
        self,
        subject_template_name,
        email_template_name,
        context,
        from_email,
        to_email,
        html_email_template_name=None,
    ):
        user_id = context["user"].pk
        if not account_email_allowed("reset", user_id):
            return  # the page says the same: a link was sent if the account exists
        queue("send_account_email", "reset", user_id)
