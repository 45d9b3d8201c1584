"""Django settings for Marquee.

Everything that differs between a laptop, CI and production comes from the
environment; the defaults run the whole stack on one machine with the embedded
MongoDB-compatible server and SQLite, both under ``var/``.
"""

import logging
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dj_database_url
import dj_email_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from config.secret import secret_key


def _env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_number(name: str, default: int | float, *, minimum: int = 0):
    """The number the environment variable ``name`` gives (an int when
    ``default`` is one), else ``default``. A value that is no number, or is
    under ``minimum``, stops Marquee at start, naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    kind = type(default)
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not value >= minimum:
        what = "a whole number" if kind is int else "a number"
        raise ImproperlyConfigured(
            f"{name} must be {what} of at least {minimum}, not {raw!r}."
        )
    return value


def _email_settings(url: str) -> dict:
    """Django's email settings for ``EMAIL_URL`` (dj-email-url). A URL of
    no scheme it knows, or an SMTP one naming no server, would only fail
    each email later (in the queue, retried for hours): it stops the start.
    The message does not repeat the URL, which may hold a password."""
    parts = urlsplit(url)
    backend = dj_email_url.SCHEMES.get(parts.scheme)
    try:
        parsed = dj_email_url.parse(url)
    except ValueError:  # a port that is no number
        backend = None
    if backend is None or (
        backend.endswith(".smtp.EmailBackend") and not parts.hostname
    ):
        raise ImproperlyConfigured(
            "EMAIL_URL must be a mail server's address, such as "
            "smtp://user:password@mail.example.com:587/?tls=True."
        )
    return parsed


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("MARQUEE_VAR_DIR") or BASE_DIR / "var")

DEBUG = _env_bool("MARQUEE_DEBUG")
# DJANGO_SECRET_KEY, or this installation's own random key, made on first run
# under var/ (mode 0600): never a key that is public in the repository.
SECRET_KEY = secret_key(VAR_DIR)
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if h.strip()
]
if not ALLOWED_HOSTS and not DEBUG:
    raise ImproperlyConfigured(
        "DJANGO_ALLOWED_HOSTS names no host: every page would answer 400."
    )
CSRF_TRUSTED_ORIGINS = [
    o.strip()
    for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",")
    if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "django_q",
    "config",
    "catalog",
    "booking",
    "shop",
    "staff",
    "activity",
    "accounts",
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "config.headers.PrivatePagesMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "accounts.middleware.LimitsMiddleware",
    "axes.middleware.AxesMiddleware",
    # Last, so it sees every view's database failure first hand.
    "config.middleware.DatabaseOutageMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "shop.context_processors.cart",
            ],
        },
    },
]

# The Django ORM keeps framework tables only (auth, django-q2 schedules and
# results). Domain data lives in MongoDB; see config/mongo.py.
try:
    DATABASES = {
        "default": dj_database_url.config(
            default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}", conn_max_age=60
        )
    }
except ValueError:  # its message may not name the variable; ours never the URL
    raise ImproperlyConfigured(
        "DATABASE_URL must be a database's address, such as "
        "postgres://user:password@host:5432/marquee."
    ) from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web workers and the qcluster write concurrently: WAL lets readers go on
    # while one writes, IMMEDIATE takes the write lock up front instead of
    # failing half-way through a transaction.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Server-side sessions in DATABASE_URL's database: the web tier stays
# stateless (any worker reads any session), the cookie carries only a random
# key, and logging out deletes the session, so a copied cookie is worthless.
# Not cached_db: a per-process cache would keep a logged-out session alive
# in the other workers. Django's db engine with each row tagged by the
# account it is logged in as (accounts/sessions.py): deactivating a member
# of the staff ends all its sessions with one indexed delete.
SESSION_ENGINE = "accounts.sessions"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = _env_bool("MARQUEE_SECURE_COOKIES")
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# A shopper's session lasts Django's two weeks; a staff login a working day
# (staff/apps.py): a staff account refunds and sells, often at a shared till.
STAFF_SESSION_HOURS = _env_number("MARQUEE_STAFF_SESSION_HOURS", 12, minimum=1)
MESSAGE_STORAGE = "django.contrib.messages.storage.cookie.CookieStorage"

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/orders/"
LOGOUT_REDIRECT_URL = "/"

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation."
        "UserAttributeSimilarityValidator"
    },
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = os.environ.get("MARQUEE_TIME_ZONE", "Europe/London")
try:
    ZoneInfo(TIME_ZONE)
except (ValueError, ZoneInfoNotFoundError):
    raise ImproperlyConfigured(
        "MARQUEE_TIME_ZONE must be a time zone such as Europe/London, "
        f"not {TIME_ZONE!r}."
    ) from None
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns when it is absent
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the source folders when collectstatic has not run
# (runserver, tests); `serve` collects into STATIC_ROOT for gunicorn.
WHITENOISE_USE_FINDERS = True

# --- MongoDB -------------------------------------------------------------
# Unset: `serve` starts the embedded SecantusDB daemon (a separate process,
# data under var/mongo/) and hands its address to every child process.
MONGODB_URI = os.environ.get("MONGODB_URI") or None
# Used when the URI names no database.
MONGODB_DB = os.environ.get("MONGODB_DB", "marquee")
# How long an operation waits for a MongoDB server before it fails. Web
# workers wait 500 ms (config/gunicorn.py), so a page says "back in a
# moment" within a second while the database is down; jobs and commands
# wait longer.
MONGODB_SERVER_SELECTION_MS = _env_number("MONGODB_TIMEOUT_MS", 5000, minimum=1)
# Connections a process keeps to MongoDB at most (pymongo's maxPoolSize; a
# maxPoolSize in the URI wins). A thread past it waits in its process for a
# free connection instead of opening another: the server runs a thread per
# connection, and past a few per core they only contend (bench/RESULTS.md,
# "The connection pool"). A web worker's 4 threads never reach it.
MONGODB_POOL_SIZE = _env_number("MONGODB_POOL_SIZE", 8, minimum=1)
MONGO_EMBEDDED_DIR = VAR_DIR / "mongo"
MONGO_EMBEDDED_LOG = VAR_DIR / "log" / "mongo.log"
# Which embedded server runs when MONGODB_URI is unset: SecantusDB's Rust
# server (built once per machine by `make`), or its Python server. See
# config/engine.py.
MARQUEE_DB_ENGINE = os.environ.get("MARQUEE_DB_ENGINE", "rust").strip().lower()
if MARQUEE_DB_ENGINE not in ("rust", "python"):
    raise ImproperlyConfigured("MARQUEE_DB_ENGINE must be rust or python.")
# WiredTiger's cache for the embedded server (its own default is 1-4 GB).
MONGO_EMBEDDED_CACHE = os.environ.get("MARQUEE_DB_CACHE", "1G")

# --- Reservations --------------------------------------------------------
# How long a cart holds stock and seats after its last change.
CART_HOLD_MINUTES = _env_number("MARQUEE_HOLD_MINUTES", 30, minimum=1)
# A checkout's lease on its pending cart (renewed before the charge if a third
# of it has gone): once it has lapsed a resubmit (or the reconciler, every
# minute) takes the checkout over.
# Longer than a payment provider's call may take.
SHOP_CHECKOUT_LEASE_SECONDS = _env_number("MARQUEE_CHECKOUT_LEASE", 45, minimum=1)
# A cart add records a product's price as its process read it up to so
# many seconds before (0: read on every add); checkout re-prices every line
# and shows a changed price before paying (catalog/selectors/pricing.py).
CART_PRICE_SECONDS = _env_number("MARQUEE_CART_PRICE_SECONDS", 60.0)
# How long an ended cart (expired, canceled, complete) is kept before the
# purge_carts job deletes it; its order keeps everything the order needs.
CART_RETENTION_DAYS = _env_number("MARQUEE_CART_RETENTION_DAYS", 7.0)
# What follows a payment (audit entry, sales counters, email) is announced
# by each process's settler, in batches: every SHOP_SETTLE_SECONDS or as
# soon as SHOP_SETTLE_BATCH orders wait; the reconciler announces a payment
# whose paid order is still marked after SHOP_SETTLE_GRACE_SECONDS
# (shop.services.settle). A paid cart's owner claim is released, and its
# emptied stock holds deleted, in the same rhythm (shop.services.tidy).
# SYNC: all at once, in the checkout (tests).
SHOP_SETTLE_SYNC = _env_bool("MARQUEE_SETTLE_SYNC")
SHOP_SETTLE_SECONDS = _env_number("MARQUEE_SETTLE_SECONDS", 0.2)
SHOP_SETTLE_BATCH = _env_number("MARQUEE_SETTLE_BATCH", 100, minimum=1)
SHOP_SETTLE_GRACE_SECONDS = _env_number("MARQUEE_SETTLE_GRACE", 60)
# Order numbers are reserved this many at a time per process
# (shop.services.numbers): one write per block instead of one per order.
ORDER_NUMBER_BLOCK = _env_number("MARQUEE_ORDER_NUMBER_BLOCK", 20, minimum=1)

# --- Browse --------------------------------------------------------------
# The in-memory facet index of each department (catalog.selectors.
# browse_index): "background" builds a missing or stale one in a thread while
# the page aggregates, "sync" builds it within the request, "off" never.
BROWSE_INDEX = os.environ.get("MARQUEE_BROWSE_INDEX", "background")
if BROWSE_INDEX not in ("background", "sync", "off"):
    raise ImproperlyConfigured("MARQUEE_BROWSE_INDEX must be background, sync or off.")

# --- django-q2 -----------------------------------------------------------
Q_CLUSTER = {
    "name": "marquee",
    "workers": _env_number("MARQUEE_Q_WORKERS", 2, minimum=1),
    "timeout": 60,
    "retry": 120,
    "orm": "default",
    "catch_up": False,
    "max_attempts": 1,
    "save_limit": 500,
    "poll": 1,
    "label": "Scheduled jobs",
}

LOG_LEVEL = os.environ.get("MARQUEE_LOG_LEVEL", "INFO").strip().upper()
if LOG_LEVEL not in logging.getLevelNamesMapping():
    raise ImproperlyConfigured(
        "MARQUEE_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, "
        f"not {LOG_LEVEL!r}."
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "django.server": {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        },
    },
    # Django's request loggers name the path ("Not Found: /orders/...") and
    # runserver's the request line: a link's secret is hidden there as in
    # the access log (config/redact.py). Django's own handlers (its console
    # under DEBUG, runserver's) are replaced by these, which filter.
    "filters": {
        "redact_paths": {"()": "config.redact.RedactPaths"},
        "refusals_without_traceback": {
            "()": "config.logfilters.RefusalsWithoutTraceback"
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["redact_paths", "refusals_without_traceback"],
        },
        "django.server": {
            "class": "logging.StreamHandler",
            "formatter": "django.server",
            "filters": ["redact_paths"],
        },
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "marquee": {"level": LOG_LEVEL},
        "django_q": {"level": "WARNING"},
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.server": {
            "handlers": ["django.server"],
            "level": "INFO",
            "propagate": False,
        },
    },
}

# --- Staff ---------------------------------------------------------------
# A SKU with fewer free units than this is listed on the staff dashboard.
LOW_STOCK_THRESHOLD = _env_number("MARQUEE_LOW_STOCK", 5)

# --- Activity log --------------------------------------------------------
# What shoppers do (searches, views, cart changes, seat holds, paid orders),
# one small document each, in one collection per period. See activity/.
ACTIVITY_LOG = _env_bool("MARQUEE_ACTIVITY_LOG", True)
ACTIVITY_PERIOD = os.environ.get("MARQUEE_ACTIVITY_PERIOD", "week")
if ACTIVITY_PERIOD not in ("week", "month"):
    raise ImproperlyConfigured("MARQUEE_ACTIVITY_PERIOD must be week or month.")
ACTIVITY_RETENTION_DAYS = _env_number("MARQUEE_ACTIVITY_RETENTION_DAYS", 90)
# The writer: a queue of at most ACTIVITY_QUEUE events, flushed every
# ACTIVITY_FLUSH_SECONDS or as soon as ACTIVITY_BATCH wait; a request waits
# at most ACTIVITY_BUDGET_MS for room in a full queue, then the event is
# dropped (and counted).
ACTIVITY_QUEUE = _env_number("MARQUEE_ACTIVITY_QUEUE", 10000, minimum=1)
ACTIVITY_BATCH = _env_number("MARQUEE_ACTIVITY_BATCH", 500, minimum=1)
ACTIVITY_FLUSH_SECONDS = _env_number("MARQUEE_ACTIVITY_FLUSH_SECONDS", 1.0)
ACTIVITY_BUDGET_MS = _env_number("MARQUEE_ACTIVITY_BUDGET_MS", 0.0)
# "Often bought together": paid orders of the last N days, top K per item.
BOUGHT_TOGETHER_DAYS = _env_number("MARQUEE_BOUGHT_TOGETHER_DAYS", 30)
BOUGHT_TOGETHER_TOP = _env_number("MARQUEE_BOUGHT_TOGETHER_TOP", 5)
# --- Accounts, emails, abuse limits, headers ----------------------------
# (README "Accounts, emails and limits"; docs/architecture.md §10.)
# The site's address in emails (order links, password reset).
SITE_URL = os.environ.get("MARQUEE_SITE_URL", "http://127.0.0.1:8000").rstrip("/")
if (
    urlsplit(SITE_URL).scheme not in ("http", "https")
    or not urlsplit(SITE_URL).hostname
):
    # "shop.example.com" would put links in every email that lead nowhere.
    raise ImproperlyConfigured(
        "MARQUEE_SITE_URL must be the shop's address with its scheme, such as "
        "https://shop.example.com."
    )
DEFAULT_FROM_EMAIL = os.environ.get("MARQUEE_FROM_EMAIL", "Marquee <tickets@localhost>")
# EMAIL_URL (smtp://user:password@host:587/?tls=True) in production; unset:
# every email is a file under var/mail/ (the demo and the tests).
EMAIL_FILE_PATH = VAR_DIR / "mail"
if os.environ.get("EMAIL_URL"):
    globals().update(_email_settings(os.environ["EMAIL_URL"]))
else:
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
# A mail server that stops answering fails the send (its retry scheduled)
# well within the queue's task timeout (Q_CLUSTER, 60 s), rather than the
# task being killed with its email's claim still held (accounts/tasks.py).
# EMAIL_URL's ?timeout= sets it; without one it is this.
if globals().get("EMAIL_TIMEOUT") is None:
    EMAIL_TIMEOUT = 20
# Sending is a django-q2 task; a failed send is tried again this many times
# in all, waiting MAIL_RETRY_SECONDS, then twice as long, and so on.
MAIL_ATTEMPTS = _env_number("MARQUEE_MAIL_ATTEMPTS", 5, minimum=1)
MAIL_RETRY_SECONDS = _env_number("MARQUEE_MAIL_RETRY_SECONDS", 60)
# Run mail tasks in the request instead of the queue (tests).
MAIL_SYNC = _env_bool("MARQUEE_MAIL_SYNC")
PASSWORD_RESET_TIMEOUT = 60 * 60 * 24  # a reset or order-claim link: one day

# Per order: seats of one performance, units of one line, lines of a cart.
MAX_SEATS_PER_PERFORMANCE = _env_number("MARQUEE_MAX_SEATS", 10)
MAX_LINE_QUANTITY = _env_number("MARQUEE_MAX_LINE_UNITS", 99)
MAX_CART_LINES = _env_number("MARQUEE_MAX_CART_LINES", 20)
# Holds and adds (POSTs that take seats or stock): at most N per window,
# per session and per client address, counted in MongoDB (shared by every
# worker process). A request over it gets 429.
THROTTLE_WINDOW_SECONDS = _env_number("MARQUEE_THROTTLE_WINDOW", 60, minimum=1)
THROTTLE_PER_SESSION = _env_number("MARQUEE_THROTTLE_SESSION", 30)
THROTTLE_PER_ADDRESS = _env_number("MARQUEE_THROTTLE_ADDRESS", 120)
# Declined card payments at checkout (card testing): once a session has had
# N declines in the window, or an address M, its checkouts get 429 until the
# window ends (accounts/declines.py).
DECLINES_WINDOW_SECONDS = _env_number(
    "MARQUEE_DECLINES_WINDOW_SECONDS", 3600, minimum=1
)
DECLINES_PER_SESSION = _env_number("MARQUEE_DECLINES_PER_SESSION", 5, minimum=1)
DECLINES_PER_ADDRESS = _env_number("MARQUEE_DECLINES_PER_ADDRESS", 20, minimum=1)
# Account emails (password reset, order claim) per account per hour: a
# form anyone may post must not become a way to flood someone's inbox.
ACCOUNT_EMAILS_PER_HOUR = _env_number("MARQUEE_ACCOUNT_EMAILS_PER_HOUR", 3)
# Sign-up POSTs (every one, a refused one too: the form says whether an
# email has an account) per client address and per session per hour, and
# password reset requests per client address per hour: more get the form
# again with 429 (accounts/formlimits.py). A family or an office behind one
# address stays well under them.
SIGNUPS_PER_ADDRESS = _env_number("MARQUEE_SIGNUPS_PER_ADDRESS", 20, minimum=1)
SIGNUPS_PER_SESSION = _env_number("MARQUEE_SIGNUPS_PER_SESSION", 10, minimum=1)
RESETS_PER_ADDRESS = _env_number("MARQUEE_RESETS_PER_ADDRESS", 10, minimum=1)
# "Send the invitation again" on the Staff page: emails to one member per
# hour, and invitations one manager (or command) sends per hour, whoever
# they are to; more are refused and nothing is sent
# (staff/services/team.py team_invite_again).
STAFF_INVITES_PER_MEMBER = _env_number("MARQUEE_STAFF_INVITES_PER_MEMBER", 3, minimum=1)
STAFF_INVITES_PER_MANAGER = _env_number(
    "MARQUEE_STAFF_INVITES_PER_MANAGER", 20, minimum=1
)
# On logging in, the orders this browser placed anonymously in the last so
# many minutes become the account's. Older ones (a shared computer's
# earlier customer, say) stay where they are, claimable by their email.
ORDERS_FOLLOW_LOGIN_MINUTES = _env_number("MARQUEE_ORDERS_FOLLOW_LOGIN_MINUTES", 60)
# Behind a reverse proxy: the header it sets with the client's address
# (e.g. HTTP_X_REAL_IP); unset: REMOTE_ADDR.
CLIENT_IP_HEADER = os.environ.get("MARQUEE_CLIENT_IP_HEADER") or None

# django-axes: 10 wrong passwords for one account lock it for 15 minutes.
AUTHENTICATION_BACKENDS = [
    "accounts.backends.LockoutBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = _env_number("MARQUEE_LOGIN_FAILURES", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=_env_number("MARQUEE_LOGIN_LOCK_MINUTES", 15))
# Either 10 failures for one account or 10 from one address lock.
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
# The locked page says for how long, and Retry-After too (accounts/lockout.py).
AXES_LOCKOUT_CALLABLE = "accounts.lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "accounts.throttle.client_ip"
AXES_VERBOSE = False

# django-csp: scripts only from this site (no inline script, no eval: htmx
# runs with allowEval off); inline style attributes are allowed (the seat
# map's zone colours).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
PERMISSIONS_POLICY = (
    "camera=(), microphone=(), geolocation=(self), payment=(), usb=(), "
    "interest-cohort=()"
)
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Production (MARQUEE_SECURE_COOKIES=1 behind HTTPS): HSTS and redirect.
SECURE_SSL_REDIRECT = _env_bool("MARQUEE_SSL_REDIRECT")
SECURE_HSTS_SECONDS = _env_number("MARQUEE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = False
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if _env_bool("MARQUEE_BEHIND_PROXY") else None
)
