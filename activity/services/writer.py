"""The batching writer: a request hands its event to a bounded in-process
queue and goes on; a thread writes the queue out in unordered batches.

What may be lost, and nothing else:
* a process that dies without running its exit hooks (``atexit``, gunicorn's
  ``worker_exit``) loses what it queued since the last flush: at most the
  last ``ACTIVITY_FLUSH_SECONDS`` (one second by default);
* while the database is slow or down the queue fills and further events are
  dropped and counted (``dropped``), and a batch the database refused is
  counted in ``failed``. The queue never grows past ``ACTIVITY_QUEUE``.

A request never waits on the database for its event: ``record`` only puts
into the queue, waiting at most ``ACTIVITY_BUDGET_MS`` for room (0: not at
all) before dropping.
"""

from collections.abc import Callable

from django.conf import settings

from activity.services.partitions import activity_write
from config.batching import BatchWriter, PerProcess


class Writer(BatchWriter):
    """The activity log's writer: ``activity_write`` is its sink."""

    def __init__(self, *, sink: Callable[[list[dict]], int] = activity_write, **kw):
        super().__init__(sink=sink, name="activity", noun="events", **kw)


def _make() -> Writer:
    return Writer(
        capacity=settings.ACTIVITY_QUEUE,
        batch=settings.ACTIVITY_BATCH,
        interval=settings.ACTIVITY_FLUSH_SECONDS,
        budget=settings.ACTIVITY_BUDGET_MS / 1000,
    )


_process = PerProcess(_make)


def writer() -> Writer:
    """This process's writer, made on first use with the settings."""
    return _process.get()


def record(doc: dict) -> bool:
    """Log one activity document (``activity.kinds``) unless logging is off."""
    if not settings.ACTIVITY_LOG:
        return False
    return writer().put(doc)


def flush() -> int:
    return _process.flush()


def shutdown() -> None:
    """Flush and stop this process's writer (gunicorn's ``worker_exit``)."""
    _process.shutdown()
