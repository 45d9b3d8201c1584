"""What a shop manager does to stock: receive units, adjust them with a
reason, set a SKU's low-stock threshold, set a store's count. Each goes
through the catalog's own service (the stock ledger, never a bare write of
an inventory) and is recorded in the audit trail with who did it and why.
"""

from catalog.errors import AlreadyRecorded, UnknownSku
from catalog.selectors.stock import stock_level
from catalog.selectors.stock_report import sku_exists
from catalog.services.stock import stock_correct, stock_restock
from catalog.services.store_stock import store_stock_set
from catalog.services.thresholds import stock_threshold_set
from staff.services.actions import actor_of
from staff.services.audit import audit_record

SKU = "sku"


def _catalog_sku(sku: str) -> None:
    """The staff stock actions take a SKU of the catalog, never another stock
    location's id (a store's ``<sku>@<store>``) that the ledger would take."""
    if not sku_exists(sku=sku):
        raise UnknownSku()


def _free(sku: str) -> str | None:
    level = stock_level(sku=sku)
    return None if level is None else f"{level.free} free"


def _ledgered(user, sku: str, action: str, note: str, details: dict, write) -> int:
    """Run ``write`` (a ledger movement; returns its number) and audit it
    with the free units before and after; returns the ledger number.

    The audit entry is keyed on the ledger entry, so a movement is audited
    once: a form sent again (AlreadyRecorded, same movement) audits the
    movement if the first sending died before it could, then says so. A
    refused movement is not audited."""
    before = _free(sku)
    repeat = None
    try:
        seq = write()
    except AlreadyRecorded as exc:
        if not exc.same:
            raise
        repeat, seq, before = exc, exc.seq, None  # "before" is long gone
    audit_record(
        action=action,
        object_kind=SKU,
        object_id=sku,
        before=before,
        after=_free(sku),
        actor=actor_of(user),
        reason=note.strip()[:500],
        details={**details, "ledger": seq},
        once_id=f"stock|{sku}|{seq}",
    )
    if repeat is not None:
        raise repeat
    return seq


def staff_receive_stock(
    *, user, sku: str, quantity: int, note: str = "", key: str | None = None
) -> int:
    """Receive ``quantity`` units (a restock: ledger entry, then applied) of a
    SKU the catalog has (UnknownSku otherwise: a typo never opens stock).
    ``key``: the form's, so that sending it twice receives once
    (AlreadyRecorded, and no second audit entry)."""
    _catalog_sku(sku)
    return _ledgered(
        user,
        sku,
        "stock received",
        note,
        {"quantity": quantity},
        lambda: stock_restock(sku=sku, quantity=quantity, note=note, key=key),
    )


def staff_adjust_stock(
    *, user, sku: str, delta: int, kind: str, note: str, key: str | None = None
) -> int:
    """Adjust by ``delta`` units with a reason (damaged, count correction);
    refused (FreeStockShort) when free stock would go negative. ``key``: as
    ``staff_receive_stock``'s. Only a SKU of the catalog (UnknownSku): a
    store's stock is counted, not adjusted here (``staff_set_store_stock``)."""
    _catalog_sku(sku)
    return _ledgered(
        user,
        sku,
        f"stock adjusted ({kind})",
        note,
        {"delta": delta},
        lambda: stock_correct(sku=sku, delta=delta, kind=kind, note=note, key=key),
    )


def staff_set_threshold(*, user, sku: str, threshold: int | None) -> None:
    """A SKU's own low-stock threshold (None: the default); UnknownSku for
    anything but a SKU of the catalog. Audited when it changed: the trail
    records changes, and setting what is set is none."""
    _catalog_sku(sku)
    if not stock_threshold_set(sku=sku, threshold=threshold):
        return
    audit_record(
        action="low-stock threshold set",
        object_kind=SKU,
        object_id=sku,
        after="default" if threshold is None else str(threshold),
        actor=actor_of(user),
        reason="",
    )


def staff_set_store_stock(*, user, sku: str, store_id: str, quantity: int) -> None:
    """A store's count of a SKU (its units free to sell): a ledger entry of
    the store's stock location, which click & collect reserves from."""
    store_stock_set(store_id=store_id, sku=sku, quantity=quantity)
    audit_record(
        action="store stock set",
        object_kind=SKU,
        object_id=sku,
        after=str(quantity),
        actor=actor_of(user),
        reason="",
        details={"store": store_id},
    )
