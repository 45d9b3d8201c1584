"""MongoEngine documents owned by the shop app (indexes in each ``meta``).

Only shop.services writes them, with conditional updates on ``state``; the
documents carry no logic.
"""

import mongoengine as me

from config.decimals import MoneyField
from config.documents import Document

# Cart states and their moves: shop/cart_state.py (re-exported here for the
# documents' users).
from shop.cart_state import (  # noqa: E402,F401
    ACTIVE,
    CANCELED,
    CART_STATES,
    COMPLETE,
    EXPIRED,
    EXPIRING,
    HOLDING_STATES,
    PENDING,
)

# Order states. ``pending_payment -> paid``, ``pending_payment -> canceled``
# (its cart expired unpaid), and a paid order canceled by its owner or staff:
# ``paid -> refunding -> refunded`` (refunding: the money and the goods are on
# their way back; a run that stopped there is finished by the reconciler).
PENDING_PAYMENT = "pending_payment"
PAID = "paid"
ORDER_CANCELED = "canceled"
REFUNDING = "refunding"
REFUNDED = "refunded"
ORDER_STATES = (PENDING_PAYMENT, PAID, ORDER_CANCELED, REFUNDING, REFUNDED)


def order_state_label(state: str) -> str:
    """An order's state in staff's words: "pending_payment" reads "pending payment"."""
    return str(state).replace("_", " ")


class CartLine(me.EmbeddedDocument):
    """A product line; its units are held on a stock location for the cart.

    ``sku`` is the line's resource key, the stock location
    (``catalog.documents.stock_location``): the SKU itself for delivery
    (online stock, online price), ``"<sku>@<store_id>"`` to collect at a
    store (that store's stock, that store's price). Every reading of a
    cart's ``items.sku`` (expiry, reconcile, merge) thus keys the resource;
    one cart may list one SKU both ways, as two lines.
    """

    sku = me.StringField(required=True)
    # Click & collect only: the store (and its name as the shopper saw it).
    store_id = me.StringField()
    store_name = me.StringField()
    item_id = me.StringField(required=True)
    name = me.StringField(required=True)
    quantity = me.IntField(required=True, min_value=1)
    # The price when the line was added; checkout re-prices from the catalog.
    unit_price = MoneyField(required=True, min_value=0, precision=2)
    added_at = me.DateTimeField()
    # The takes that gave the line its units (``shop.kinds.line_stock``):
    # the proof a counter's journal entry of each was applied here.
    applied = me.ListField(me.StringField())


class StockBack(me.EmbeddedDocument):
    """Units a cart gave back whose counter step may not have happened
    (``shop.kinds.line_stock``): to the counter (``free``, ``sold``), or to
    another cart (``moved``, ``to``: a login's transfer). ``forget``: the
    takes of the units it ends, which step 2 drops from the counter's
    journal while this entry still proves them."""

    op = me.StringField(required=True)
    sku = me.StringField(required=True)  # the stock location
    free = me.IntField(default=0)
    sold = me.IntField(default=0)
    moved = me.IntField(default=0)
    to = me.StringField()
    forget = me.ListField(me.StringField())
    at = me.DateTimeField(required=True)


class TicketSeat(me.EmbeddedDocument):
    """One held seat of a ticket line, priced when it was held."""

    row = me.IntField(required=True, min_value=0)  # grid position
    col = me.IntField(required=True, min_value=0)
    key = me.StringField(required=True)  # "row-col", as forms carry it
    label = me.StringField(required=True)  # "Row F, seat 12"
    zone = me.StringField(required=True)
    zone_name = me.StringField(required=True)
    price = MoneyField(required=True, min_value=0, precision=2)
    # The tag the session's seat carries for this cart (booking's
    # ``HeldSeat.tag``): checkout's proof that the seat is still the
    # cart's without reading its ``SeatHolds``. Absent on lines recorded
    # before it was kept, and then that document is read, as it was.
    tag = me.IntField()


class TicketLine(me.EmbeddedDocument):
    """The seats held in one session: one line per session, not per seat.

    One line per session keeps the shop's kind-neutral code simple: a line is
    found by its resource (``session_id``), the same key booking's
    reservation index reports, and the line's amount is its set of seats,
    compared as a whole with what the session holds for the cart. Releasing
    one seat rewrites the line's seat list (guarded on ``rev``, bumped by
    every change of the list), and the cart page groups a show's seats under
    one heading anyway. Seats of one line may differ in price (zones), so the
    line has no single unit price: each seat carries its own.
    """

    session_id = me.StringField(required=True)
    show = me.StringField(required=True)
    theater = me.StringField(required=True)
    start = me.DateTimeField(required=True)
    seats = me.EmbeddedDocumentListField(TicketSeat)
    rev = me.IntField(required=True, default=0, min_value=0)
    added_at = me.DateTimeField()


class MovedIn(me.EmbeddedDocument):
    """A login's transfer this cart received, kept until its source cart
    finished it (``shop.kinds.line_stock.transfer``): the proof it applied
    here, even once the line is gone."""

    op = me.StringField(required=True)
    source = me.StringField(required=True)  # the source cart's id
    at = me.DateTimeField(required=True)


class Cart(Document):
    """A shopper's cart: lines of each reservable kind, and a hold deadline.

    ``owner`` is ``user:<id>`` for a logged-in shopper, ``anon:<token>`` for a
    token kept in the shopper's signed session. ``live_owner`` repeats it
    while the cart can change or be paid (active, pending, expiring) and is
    removed when it ends: the lookup of the owner's live cart. That there is
    at most one is the owner's claim (``CartOwner``, shop.services.owners).
    """

    cart_id = me.StringField(primary_key=True)
    owner = me.StringField(required=True)
    live_owner = me.StringField()
    state = me.StringField(required=True, choices=CART_STATES, default=ACTIVE)
    items = me.EmbeddedDocumentListField(CartLine)
    tickets = me.EmbeddedDocumentListField(TicketLine)
    created_at = me.DateTimeField(required=True)
    modified_at = me.DateTimeField(required=True)
    expires_at = me.DateTimeField(required=True)
    extensions = me.IntField(default=0, min_value=0)
    checkout_at = me.DateTimeField()
    # The running checkout's lease (renewed at each step) and which checkout
    # of this cart it is: the charge's reference and the fence of its writes.
    lease_until = me.DateTimeField()
    checkout_attempt = me.IntField(default=0, min_value=0)
    # The attempt's random tag, drawn with it, in its charge's reference
    # (shop.payments.charge_reference).
    checkout_tag = me.StringField()
    # What the checkout writes on the cart before charging, so that the
    # order can be written once, paid, after the charge, and a run cut off
    # after charging is finished from the cart alone
    # (shop.services.checkout): the order's number (drawn at the cart's
    # first checkout, kept by every later attempt: the charges' references
    # carry it), and the attempt's email, address and payment details.
    order_number = me.StringField()
    checkout_email = me.StringField()
    checkout_shipping = me.DictField(default=None)
    checkout_payment = me.DictField(default=None)
    ended_at = me.DateTimeField()
    # The stock moves in flight out of this cart, and the takes a recovery
    # refused for good (a fence: a stalled writer can no longer record
    # them): ``shop.kinds.line_stock``.
    stock_back = me.EmbeddedDocumentListField(StockBack)
    stock_void = me.ListField(me.StringField())
    moved_in = me.EmbeddedDocumentListField(MovedIn)

    def line_count(self) -> int:
        """How many lines the cart lists, of every kind (the cart's cap)."""
        return len(self.items or []) + len(self.tickets or [])

    meta = {
        "collection": "carts",
        "indexes": [
            # Not unique: one live cart per owner is CartOwner's _id.
            {"fields": ["live_owner"], "sparse": True},
            # The expiry job: active carts past their deadline, expiring ones.
            {"fields": ["state", "expires_at"]},
            {"fields": ["owner", "-modified_at"]},
            # Ended carts past the retention (the purge_carts job).
            {"fields": ["state", "ended_at"]},
            # Give-backs in flight, transfers received whose source may not
            # have finished (the recovery): absent but for a moment.
            {"fields": ["stock_back.at"], "sparse": True},
            {"fields": ["moved_in.at"], "sparse": True},
        ],
        # The carts by a line's resource and state: no query reads them (the
        # stale holders of a resource are read through the expiry index,
        # shop.services.expiry), and every write of a line paid for both.
        "retired_indexes": ["items.sku_1_state_1", "tickets.session_id_1_state_1"],
    }


class CartOwner(Document):
    """An owner's claim on their one live cart: ``_id`` is the owner.

    Inserted before a cart becomes live, deleted when it ends (see
    shop.services.owners for why this is a document of its own).
    """

    owner = me.StringField(primary_key=True)
    cart_id = me.StringField(required=True)
    at = me.DateTimeField(required=True)

    meta = {"collection": "cart_owners"}


class ShippingAddress(me.EmbeddedDocument):
    name = me.StringField(required=True)
    line1 = me.StringField(required=True)
    line2 = me.StringField(default="")
    city = me.StringField(required=True)
    postcode = me.StringField(required=True)
    country = me.StringField(required=True)


class Ticket(me.EmbeddedDocument):
    """The admission an order line of kind ``ticket`` stands for (one seat)."""

    show = me.StringField(required=True)
    theater = me.StringField(required=True)
    start = me.DateTimeField(required=True)
    row = me.IntField(required=True, min_value=0)
    col = me.IntField(required=True, min_value=0)
    label = me.StringField(required=True)
    zone = me.StringField(required=True)
    zone_name = me.StringField(required=True)


class OrderLine(me.EmbeddedDocument):
    kind = me.StringField(required=True)
    key = me.StringField(required=True)
    name = me.StringField(required=True)
    quantity = me.IntField(required=True, min_value=1)
    unit_price = MoneyField(required=True, min_value=0, precision=2)
    line_total = MoneyField(required=True, min_value=0, precision=2)
    # An unguessable code shown at the door (ticket lines); also listed in
    # ``Order.codes``, whose unique index makes it unique across orders.
    code = me.StringField()
    ticket = me.EmbeddedDocumentField(Ticket)
    # Set once what the line sold is back on sale (a canceled paid order).
    returned_at = me.DateTimeField()
    # A ticket scanned at the door: when and by whom (unset by an undo);
    # written only by shop.services.admissions.
    admitted_at = me.DateTimeField()
    admitted_by = me.StringField()
    # A product to collect at a store (click & collect; ``key`` is then the
    # store's stock location): where, in the shopper's words.
    store_id = me.StringField()
    store_name = me.StringField()


class PaymentAttempt(me.EmbeddedDocument):
    reference = me.StringField(required=True)
    at = me.DateTimeField(required=True)
    outcome = me.StringField(required=True)  # paid, declined, error
    message = me.StringField(default="")
    card = me.StringField(default="")  # brand and last four digits only


class Order(Document):
    """What was bought, by whom, for how much, and whether it is paid.

    One order per cart (unique ``cart_id``): a repeated checkout finds it.
    ``token`` is the secret of the anonymous order link.
    """

    number = me.StringField(required=True)
    cart_id = me.StringField(required=True)
    owner = me.StringField(required=True)
    token = me.StringField(required=True)
    state = me.StringField(required=True, choices=ORDER_STATES)
    email = me.EmailField(required=True)
    # None when nothing is delivered (tickets only).
    shipping = me.EmbeddedDocumentField(ShippingAddress)
    lines = me.EmbeddedDocumentListField(OrderLine)
    # The lines' codes (tickets), absent when there are none: an empty list
    # would collide in the unique index like a missing value.
    codes = me.ListField(me.StringField(), default=None)
    subtotal = MoneyField(required=True, min_value=0, precision=2)
    total = MoneyField(required=True, min_value=0, precision=2)
    currency = me.StringField(required=True, default="GBP")
    payment_attempts = me.IntField(default=0)
    # The tag of the latest attempt (its cart's ``checkout_tag``), in the
    # charge's reference: shop.payments.charge_reference. None on orders
    # made before references had one.
    payment_tag = me.StringField()
    attempts = me.EmbeddedDocumentListField(PaymentAttempt)
    payment_provider = me.StringField()
    payment_reference = me.StringField()
    created_at = me.DateTimeField(required=True)
    paid_at = me.DateTimeField()
    # The outbox (shop.services.settle): set by the write that marks the
    # order paid, unset once its payment has been announced.
    announce_at = me.DateTimeField()
    announce_context = me.DictField(default=None)
    canceled_at = me.DateTimeField()
    # A paid order canceled: who asked ("owner" or "staff"), the refund's
    # reference with the provider, and when the money went back.
    canceled_by = me.StringField()
    refund_reference = me.StringField()
    refunded_at = me.DateTimeField()
    # Sold at the box office's counter (shop.payments.AtCounter): the method
    # ("box_office"; absent for a card) and the customer it was sold to.
    payment_method = me.StringField()
    customer_name = me.StringField()
    customer_phone = me.StringField()

    meta = {
        "collection": "orders",
        "indexes": [
            {"fields": ["number"], "unique": True},
            {"fields": ["cart_id"], "unique": True},
            {"fields": ["owner", "-created_at"]},
            {"fields": ["codes"], "unique": True, "sparse": True},
            # Paid orders' tickets per session (the invariant check).
            {"fields": ["lines.key", "state"]},
            # Cancellations left half-way (the reconciler finishes them).
            {"fields": ["state", "canceled_at"]},
            # Payments no settler announced (the reconciler's sweep).
            {"fields": ["announce_at"], "sparse": True},
        ],
    }


class Sequence(Document):
    """A named counter, advanced with ``$inc`` (order numbers)."""

    name = me.StringField(primary_key=True)
    value = me.IntField(required=True, default=0)

    meta = {"collection": "sequences"}


class GatewayCharge(Document):
    """A charge taken by the built-in test gateway, keyed by its reference.

    The gateway keeps its own record, as a real provider does, so a charge is
    idempotent per reference and can be looked up after a crash.
    """

    reference = me.StringField(primary_key=True)
    amount = MoneyField(precision=2)  # none on a void
    currency = me.StringField()
    outcome = me.StringField(required=True)  # paid, declined, void
    card = me.StringField(default="")
    message = me.StringField(default="")
    at = me.DateTimeField(required=True)

    meta = {"collection": "test_gateway_charges"}


class GatewayRefund(Document):
    """A refund made by the built-in test gateway, keyed by its reference.

    Idempotent per reference like a charge; never more than the charge.
    """

    reference = me.StringField(primary_key=True)
    charge_reference = me.StringField(required=True)
    amount = MoneyField(required=True, precision=2)
    currency = me.StringField(required=True)
    at = me.DateTimeField(required=True)

    meta = {"collection": "test_gateway_refunds"}


class CounterPayment(Document):
    """Money taken or given back at the box office's counter, keyed by its
    reference (shop.payments.box_office): the counter's own record, so a
    charge is settled once per reference and can be looked up after a
    crash, like a provider's."""

    reference = me.StringField(primary_key=True)
    kind = me.StringField(required=True)  # charge, refund, void
    amount = MoneyField(precision=2)  # none on a void
    currency = me.StringField()
    by = me.StringField(default="")
    charge_reference = me.StringField()
    at = me.DateTimeField(required=True)

    meta = {"collection": "box_office_payments"}
