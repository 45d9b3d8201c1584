"""What the shop announces as its orders and carts change state.

The shop sits below the back office: it must not know who listens. Each
signal is sent right after the conditional update that made the change, and
only when that update matched, so a change is announced once. Receivers run
in the same process and the same request (Django's signals are
synchronous); the back office connects its audit trail and sales counters
in ``StaffConfig.ready``. A payment is the exception: it is announced a
moment later, in batches (``orders_paid``).
"""

from django.dispatch import Signal

# order: the order document after the change; before (None when created),
# after: states; at: when.
order_moved = Signal()
# cart_id, before, after, at: the order of this cart changed state (the
# sender knows the cart, not the order).
cart_order_moved = Signal()
# cart_id, before, after, at.
cart_moved = Signal()
# paid: [(order, context)], orders just marked paid, announced together
# after their checkouts answered (shop.services.settle), each with the
# contextvars of the code that paid it (None when the reconciler settles it).
# Instead of ``order_moved`` for ``-> paid``. An order may be announced
# again (the reconciler meeting an order a settler is announcing, a
# checkout finished after a crash): every receiver does its part once per
# order.
orders_paid = Signal()

# --- What a shopper did, sent by the shop's views once the service has made
# the change (the activity log listens to the first two, the accounts app's
# decline limit to card_declined).
# request, owner, sku, item_id, delta: units added (> 0) or taken out (< 0).
cart_line_changed = Signal()
# request, owner, hold (the SeatHold the service returned), held: True for a
# hold, False for a release.
seats_changed = Signal()
# request: the provider declined the card of this checkout (CardDeclined;
# not a provider's own failure). The accounts app counts it against the
# request's session and client address (accounts/declines.py), which is all
# a decline limit needs: no owner is sent.
card_declined = Signal()
