"""The shop's limits, shared by services (which enforce them), forms and pages.

Set in settings (README "Accounts, emails and limits"); the caps on what
one cart may hold are enforced in ``shop/services/caps.py``.
"""

from django.conf import settings

# Per line: a shopper buying more is a wholesale order, not a cart.
MAX_LINE_QUANTITY = getattr(settings, "MAX_LINE_QUANTITY", 99)
# How many times a shopper may push the hold deadline without changing the cart.
MAX_EXTENSIONS = 3
