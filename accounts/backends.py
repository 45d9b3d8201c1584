"""Logging in through a request is locked out by django-axes."""

from axes.backends import AxesStandaloneBackend


class LockoutBackend(AxesStandaloneBackend):
    """django-axes' lockout for every login through a request (the log-in
    page, password change). ``authenticate()`` called without a request (a
    management command, the test client's ``login``) has no client to lock
    out, and is left to the next backend."""

    def authenticate(self, request=None, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)
