"""Marquee's settings for the HTTP level's web workers: a command counter more.

``DJANGO_SETTINGS_MODULE=bench.web.settings`` (set by bench/levels/http.py
for ``manage.py serve`` and so for its gunicorn workers and qcluster).
"""

from bench.web import counter
from config.settings import *  # noqa: F403
from config.settings import MIDDLEWARE

counter.install()

# Outermost, so that every command of the request counts, whichever layer
# (middleware, view, template context processor) issues it.
MIDDLEWARE = ["bench.web.counter.CountCommands", *MIDDLEWARE]

# Every simulated shopper comes from 127.0.0.1: the per-address throttle
# would stop the load, not measure it. The per-session one still counts.
THROTTLE_PER_ADDRESS = 10**9
