"""Converting stock holds of an earlier shape into the carts' lines.

Earlier versions kept what a cart held of a stock location outside the
cart: in a hold document per cart and location (``stock_holds``, with its
moves in flight: ``applied``, ``back``), and before that in a list inside
the location's inventory (``reservations``). Now a line's ``quantity`` is
what its cart holds (``shop.kinds.line_stock``). ``serve`` runs this with
the shop stopped (``convert_data``), so no writer is between two steps.

Per location, in an order that makes a second run (after a crash) find
each step done or do it once:

1. every move in flight is settled: a give-back (``back`` entry) the
   counter has not applied is applied, once (the counter's fence and its
   guarded apply); a transfer its target did not record gives its units
   back likewise; a take its hold does not list goes back to the counter
   (guarded on its journal entry).
2. each hold meets its cart's line: the same units, nothing moves; more
   than the line lists, the surplus goes free (a give-back whose op names
   the hold, so it applies once); fewer, the line shrinks to what is held
   (guarded on the line as read; a line of nothing goes); a cart that is
   gone, ended or does not list the location, every unit goes free. The
   line is marked met (``applied: []``, in the same write).
3. the hold goes (the document, or the inventory's entry).
4. a line of a holding cart that no hold met (it listed units its cart
   never held, which checkout used to top up) takes them from the counter
   now, recorded in the same guarded write that marks it; if they are not
   free, the line goes.

Nothing is ever free and held at once: units leave a hold only through the
counter's guarded give-back, and a line only shrinks.
"""

from datetime import UTC, datetime

from catalog.documents import hold_id
from catalog.services import counters
from config.mongo import db as database
from shop.cart_state import HOLDING_STATES
from shop.services.common import carts, utcnow

_HOLDS = "stock_holds"  # the earlier shape's collection (no document class)


def _holds():
    return database()[_HOLDS]


def stock_lines_migrate(*, now: datetime | None = None) -> tuple[int, int]:
    """Convert every earlier-shape hold; return (holds converted, units that
    went free). Idempotent; meant for a stopped shop."""
    now = utcnow(now)
    if not _earlier_shape():
        return 0, 0  # a current database: `serve` runs this at every start
    converted = freed = 0
    for hold in list(_holds().find({})):
        _settle_backs(hold, now)
    _settle_takes()
    for hold in list(_holds().find({})):
        freed += _meet_line(hold["sku"], hold["cart_id"], hold["quantity"], now)
        _holds().delete_one({"_id": hold["_id"]})
        converted += 1
    for inv in list(counters.inventories().find({"reservations.0": {"$exists": True}})):
        for entry in inv["reservations"]:
            freed += _meet_line(
                inv["_id"], entry["cart_id"], entry["quantity"], now, of="reservation"
            )
            counters.inventories().update_one(
                {"_id": inv["_id"]},
                {"$pull": {"reservations": {"cart_id": entry["cart_id"]}}},
            )
            converted += 1
    _unmet_lines(now)
    if _HOLDS in database().list_collection_names() and not _holds().count_documents(
        {}, limit=1
    ):
        _holds().drop()
    return converted, freed


def _earlier_shape() -> bool:
    """Whether anything of an earlier shape is left: hold documents,
    reservations inside an inventory, or a holding cart's line no hold met
    (``applied`` is what every line of this version has)."""
    if _HOLDS in database().list_collection_names():
        return True
    if counters.inventories().count_documents({"reservations.0": {"$exists": True}}):
        return True
    unmet = {
        "state": {"$in": list(HOLDING_STATES)},
        "items": {"$elemMatch": {"applied": {"$exists": False}}},
    }
    return bool(carts().count_documents(unmet, limit=1))


def _settle_backs(hold: dict, now: datetime) -> None:
    """Step 1 for a hold's ``back`` entries: each applied once, then gone."""
    for entry in hold.get("back") or []:
        units = {"free": entry.get("free", 0), "sold": entry.get("sold", 0)}
        if entry.get("to"):
            target = _holds().find_one(
                {"_id": hold_id(hold["sku"], entry["to"]), "applied": entry["op"]}
            )
            if target is None:  # never recorded: its units go free
                units = {"free": entry.get("moved", 0), "sold": 0}
            else:
                units = None  # the target holds them
        if units is not None:
            _apply_once(hold, entry, units)
        _holds().update_one(
            {"_id": hold["_id"]}, {"$pull": {"back": {"op": entry["op"]}}}
        )


def _apply_once(hold: dict, entry: dict, units: dict) -> None:
    """A give-back's counter step, once whoever asked first: the writer's
    entry there means it applied; else the fence takes it over and applies
    it (guarded on the fence)."""
    sku, op = hold["sku"], entry["op"]
    if counters.fence_give(sku, op, hold["_id"], entry["at"]):
        counters.apply_fenced(sku, op, forget=hold.get("applied") or [], **units)


def _settle_takes() -> None:
    """Step 1 for the takes of hold documents: one its hold lists is
    finished (dropped); one it does not goes back to the counter, once. A
    take of this version (its proof is a cart's line, not a hold document:
    a take step 4 made, or one a line records whose entry waits for its
    process's next write) is the reconciler's (``line_stock.recover``)."""
    for sku, move in counters.takes_before(datetime.max.replace(tzinfo=UTC)):
        hold = _holds().find_one({"_id": move["hold"]}, {"applied": 1})
        if hold is None:
            continue
        if move["op"] in (hold.get("applied") or []):
            counters.drop(sku, takes=[move["op"]])
        else:
            counters.untake(sku, move["op"], move["units"])


def _meet_line(
    key: str, cart_id: str, units: int, now: datetime, *, of: str = "hold"
) -> int:
    """Step 2: ``units`` held for the cart's line of ``key`` (``of``: a hold
    document's, or a reservation's: the op of its surplus names which, so
    both of one cart apply); the units that went free."""
    cart = carts().find_one({"_id": cart_id}, {"state": 1, "items": 1})
    line = None
    if cart is not None and cart["state"] in HOLDING_STATES:
        line = next((x for x in cart.get("items") or [] if x["sku"] == key), None)
    listed = 0
    if line is not None and "applied" not in line:
        listed = line["quantity"]
        _met(cart_id, key, listed, min(units, listed), now)
    elif line is not None:
        listed = min(units, line["quantity"])  # met by an earlier run
    surplus = units - min(units, listed)
    if surplus:
        op = f"migrate-{of}-{hold_id(key, cart_id)}"
        entry = {"op": op, "free": surplus, "sold": 0, "at": now}
        counters.give([(key, hold_id(key, cart_id), entry, [])])
    return surplus


def _met(cart_id: str, key: str, listed: int, units: int, now: datetime) -> bool:
    """The line (as read: ``listed`` units, not met) lists ``units`` and is
    marked met (``applied``); a line of nothing goes."""
    unmet = {"sku": key, "quantity": listed, "applied": {"$exists": False}}
    as_read = {"_id": cart_id, "items": {"$elemMatch": unmet}}
    if units:
        fields = {"items.$.quantity": units, "items.$.applied": [], "modified_at": now}
        change = {"$set": fields}
    else:
        change = {"$pull": {"items": {"sku": key}}, "$set": {"modified_at": now}}
    return bool(carts().update_one(as_read, change).modified_count)


def _unmet_lines(now: datetime) -> None:
    """Step 4: the lines no hold met take their units now, or go."""
    holding = {"state": {"$in": list(HOLDING_STATES)}}
    unmet = {"items": {"$elemMatch": {"applied": {"$exists": False}}}}
    for cart in list(carts().find({**holding, **unmet}, {"items": 1})):
        for line in cart["items"]:
            if "applied" in line:
                continue
            key, units = line["sku"], line["quantity"]
            op = counters.take(key, hold_id(key, cart["_id"]), units, now)
            if op is None:
                _met(cart["_id"], key, units, 0, now)
                continue
            recorded = carts().update_one(
                {
                    "_id": cart["_id"],
                    "items": {
                        "$elemMatch": {
                            "sku": key,
                            "quantity": units,
                            "applied": {"$exists": False},
                        }
                    },
                },
                {"$set": {"items.$.applied": [op]}},
            )
            if recorded.modified_count:
                counters.taken(key, op)
            else:
                counters.untake(key, op, units)
