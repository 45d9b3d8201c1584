"""The answer to a login locked out by django-axes (``AXES_LOCKOUT_CALLABLE``):
the page says for how long, and ``Retry-After`` says it to a client."""

import math

from axes.helpers import get_cool_off
from django.conf import settings
from django.shortcuts import render


def lockout_response(request, original_response=None, credentials=None):
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) if cool_off else 0
    response = render(
        request,
        "registration/locked.html",
        {"minutes": math.ceil(seconds / 60)},
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )
    if seconds:
        # At most: the lock counts from the last wrong password.
        response["Retry-After"] = str(seconds)
    return response
