"""The account's one-time links besides Django's password reset."""

from django.contrib.auth.tokens import PasswordResetTokenGenerator


class ClaimTokenGenerator(PasswordResetTokenGenerator):
    """A reset-style token proving the account holder reads its email: it
    binds the user, their password hash and email, and expires with
    PASSWORD_RESET_TIMEOUT."""

    key_salt = "marquee.accounts.ClaimTokenGenerator"


claim_tokens = ClaimTokenGenerator()
