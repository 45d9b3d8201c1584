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

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from pymongo.errors import PyMongoError

from activity.services.partitions import activity_write

log = logging.getLogger("marquee.activity")


@dataclass(frozen=True)
class WriterStats:
    queued: int
    written: int
    dropped: int
    failed: int


class Writer:
    """A bounded queue and the thread that empties it into ``sink``.

    ``sink(docs)`` writes a batch (``activity_write`` by default); it may
    block as long as the database makes it, which only ever holds up this
    writer's thread. A flush every ``interval`` seconds, or as soon as
    ``batch`` events wait.
    """

    def __init__(
        self,
        *,
        sink: Callable[[list[dict]], int] = activity_write,
        capacity: int = 10_000,
        batch: int = 500,
        interval: float = 1.0,
        budget: float = 0.0,
    ):
        self._queue: queue.Queue[dict] = queue.Queue(maxsize=capacity)
        self._sink, self._batch = sink, batch
        self._interval, self._budget = interval, budget
        self._counts = {"written": 0, "dropped": 0, "failed": 0}
        self._count_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def _count(self, name: str, n: int) -> None:
        with self._count_lock:
            self._counts[name] += n

    def stats(self) -> WriterStats:
        with self._count_lock:
            return WriterStats(queued=self._queue.qsize(), **self._counts)

    def put(self, doc: dict) -> bool:
        """Queue one event; False (and counted) when the queue is full."""
        try:
            if self._budget > 0:
                self._queue.put(doc, timeout=self._budget)
            else:
                self._queue.put_nowait(doc)
        except queue.Full:
            self._count("dropped", 1)
            return False
        if self._thread is None:
            self.start()
        if self._queue.qsize() >= self._batch:
            self._wake.set()
        return True

    def start(self) -> None:
        with self._start_lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="activity-writer", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        reported = 0
        while not self._stop.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            self.flush()
            reported = self._report_drops(reported)

    def _report_drops(self, reported: int) -> int:
        """One log line per interval in which events were dropped (the
        operator's sign that the database is slower than the pages)."""
        dropped = self.stats().dropped
        if dropped > reported:
            log.warning(
                "activity: %d events dropped (queue full), %d in all",
                dropped - reported,
                dropped,
            )
        return dropped

    def _drain(self) -> list[dict]:
        docs = []
        while True:
            try:
                docs.append(self._queue.get_nowait())
            except queue.Empty:
                return docs

    def flush(self) -> int:
        """Write out everything queued now (one flush at a time); returns
        how many were written. A batch the database refuses is counted as
        failed and not retried: the queue must keep moving."""
        with self._flush_lock:
            docs = self._drain()
            if not docs:
                return 0
            try:
                written = self._sink(docs)
            except PyMongoError as exc:
                self._count("failed", len(docs))
                log.warning("activity: %d events lost: %s", len(docs), exc)
                return 0
            self._count("written", written)
            return written

    def discard(self) -> int:
        """Forget what is queued (a test starting afresh); returns how many."""
        with self._flush_lock:
            return len(self._drain())

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread, then write what is left (exit hooks call this)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.flush()


_writer: Writer | None = None
_lock = threading.Lock()


def writer() -> Writer:
    """This process's writer, made on first use with the settings."""
    global _writer
    if _writer is None:
        with _lock:
            if _writer is None:
                _writer = Writer(
                    capacity=settings.ACTIVITY_QUEUE,
                    batch=settings.ACTIVITY_BATCH,
                    interval=settings.ACTIVITY_FLUSH_SECONDS,
                    budget=settings.ACTIVITY_BUDGET_MS / 1000,
                )
    return _writer


def record(doc: dict) -> bool:
    """Log one activity document (``activity.kinds``) unless logging is off."""
    if not settings.ACTIVITY_LOG:
        return False
    return writer().put(doc)


def flush() -> int:
    return writer().flush() if _writer is not None else 0


def shutdown() -> None:
    """Flush and stop this process's writer (gunicorn's ``worker_exit``)."""
    if _writer is not None:
        _writer.stop()


def _after_fork() -> None:
    # A queue and a thread do not survive a fork: the child makes its own.
    global _writer
    _writer = None


os.register_at_fork(after_in_child=_after_fork)
# Registered once, for whichever writer the process has when it exits (a
# forked child's, never its parent's copy).
atexit.register(shutdown)
