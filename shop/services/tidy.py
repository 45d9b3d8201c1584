"""What a paid checkout leaves to write a moment later, in batches.

Two writes follow every paid checkout that neither the shopper nor any
rule waits for:

* its owner's claim released (``shop.services.owners``): the cart has
  ended, so the claim is stale already, and the owner's next claim deletes
  it anyway;
* its product lines' give-backs' last step (``shop.kinds.line_stock.
  finish_backs``): the complete write moved the lines' units into
  ``stock_back`` entries, the counters counted them sold and recorded the
  moves, so the entries only wait to be pulled.

Each process queues them and writes what waits every SHOP_SETTLE_SECONDS,
or as soon as SHOP_SETTLE_BATCH items wait: one statement per kind for the
whole batch instead of one per checkout (a synced write each on the
embedded server). With SHOP_SETTLE_SYNC (the tests), or when the queue is
full, they are written at once.

A batch lost with its process leaves claims on ended carts (deleted by
their owners' next claims) and applied ``stock_back`` entries (finished by
the reconciler, ``line_stock.recover``, after its grace): neither holds a
unit or an owner back.
"""

from django.conf import settings

from config.batching import BatchWriter, PerProcess
from shop.kinds import line_stock
from shop.services import owners

_CLAIM, _HOLDS = "claim", "holds"


def release_claim_later(*, owner: str, cart_id: str) -> None:
    """``owners.release`` of a cart that has just ended paid, batched."""
    _later(_CLAIM, (owner, cart_id))


def finish_backs_later(cart_id: str, moves: list[tuple[str, str]]) -> None:
    """``line_stock.finish_back`` of a checkout's complete, batched (its
    ``finish``)."""
    if moves:
        _later(_HOLDS, [(cart_id, key, op) for key, op in moves])


def _later(kind: str, item) -> None:
    if settings.SHOP_SETTLE_SYNC or not writer().put((kind, item)):
        _write([(kind, item)])


def _write(items: list[tuple[str, object]]) -> int:
    """One batch: every give-back's last step in one statement, every
    claim's release in one."""
    moves = [move for kind, item in items if kind == _HOLDS for move in item]
    if moves:
        line_stock.finish_backs(moves)
    ended = [item for kind, item in items if kind == _CLAIM]
    if ended:
        owners.release_all(ended)
    return len(items)


_process = PerProcess(
    lambda: BatchWriter(
        sink=_write,
        name="tidy",
        noun="checkout leftovers",
        batch=settings.SHOP_SETTLE_BATCH,
        interval=settings.SHOP_SETTLE_SECONDS,
    )
)


def writer() -> BatchWriter:
    """This process's batch, made on first use."""
    return _process.get()


def flush() -> int:
    """Write what this process's batch holds now; how many."""
    return _process.flush()


def shutdown() -> None:
    """Write what is left and stop (exit hooks, gunicorn's worker_exit)."""
    _process.shutdown()


def discard() -> int:
    """Forget what this process's batch holds, and stop it; the next use
    makes one with the settings of then (tests)."""
    dropped = _process.discard()
    _process.reset()
    return dropped
