"""The POSTs refused before their view runs when a limit is reached: one
table, one middleware (after CSRF's check, so a forged POST is refused as
such and costs no count or read).

* holds and adds over the throttle (``accounts/throttle.py``);
* a checkout once the shopper's declined cards reached a limit
  (``accounts/declines.py``);
* sign-ups and password reset requests over their hourly limits
  (``accounts/formlimits.py``).
"""

from accounts.declines import CHECKOUT, declines_refusal
from accounts.formlimits import RESET, SIGNUP, reset_refusal, signup_refusal
from accounts.throttle import THROTTLED, throttle_refusal

# url name -> its check: a 429 response, or None to let the view run.
LIMITED = {
    **dict.fromkeys(THROTTLED, throttle_refusal),
    CHECKOUT: declines_refusal,
    SIGNUP: signup_refusal,
    RESET: reset_refusal,
}


class LimitsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        match = request.resolver_match
        if request.method != "POST" or match is None:
            return None
        check = LIMITED.get(match.view_name)
        return check(request) if check is not None else None
