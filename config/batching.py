"""A bounded in-process queue and the thread that writes it out in batches.

A request hands an item to the queue and goes on; a thread writes what
waits in one batch, every ``interval`` seconds or as soon as ``batch``
items wait. Used where a request's follow-up can be written a moment later
and is cheaper written together: the activity log (activity/), what
follows a payment (shop.services.settle) and the release of a paid cart's
owner claim (shop.services.owners).

What a ``BatchWriter`` may lose, and the caller must allow for:
* a process that dies without running its exit hooks loses what it queued
  since the last flush;
* a full queue drops further items (counted in ``dropped``), and a batch
  the database refused is counted in ``failed``, never retried.
"""

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pymongo.errors import PyMongoError

log = logging.getLogger("marquee.batching")


@dataclass(frozen=True)
class BatchStats:
    queued: int
    written: int
    dropped: int
    failed: int


class BatchWriter:
    """A bounded queue and the thread that empties it into ``sink``.

    ``sink(items)`` writes a batch and returns how many it wrote; it may
    block as long as the database makes it, which only ever holds up this
    writer's thread. A flush every ``interval`` seconds, or as soon as
    ``batch`` items wait. ``name`` and ``noun`` label the thread and the log
    lines.
    """

    def __init__(
        self,
        *,
        sink: Callable[[list], int],
        name: str,
        noun: str = "items",
        capacity: int = 10_000,
        batch: int = 500,
        interval: float = 1.0,
        budget: float = 0.0,
    ):
        self._name, self._noun = name, noun
        self._queue: queue.Queue = queue.Queue(maxsize=capacity)
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

    def stats(self) -> BatchStats:
        with self._count_lock:
            return BatchStats(queued=self._queue.qsize(), **self._counts)

    def put(self, doc) -> bool:
        """Queue one item; False (and counted) when the queue is full."""
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
                    target=self._run, name=f"{self._name}-writer", daemon=True
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
        """One log line per interval in which items were dropped (the
        operator's sign that the database is slower than the pages)."""
        dropped = self.stats().dropped
        if dropped > reported:
            log.warning(
                "%s: %d %s dropped (queue full), %d in all",
                self._name,
                dropped - reported,
                self._noun,
                dropped,
            )
        return dropped

    def _drain(self) -> list:
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
                log.warning(
                    "%s: %d %s lost: %s", self._name, len(docs), self._noun, exc
                )
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


class PerProcess:
    """This process's ``BatchWriter``, made by ``make`` on first use.

    A queue and a thread do not survive a fork: a forked child (a web or
    job worker) makes its own. At exit, what is left is written out
    (``shutdown``; gunicorn's ``worker_exit`` calls it too).
    """

    def __init__(self, make: Callable[[], BatchWriter]):
        self._make = make
        self._writer: BatchWriter | None = None
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)
        atexit.register(self.shutdown)

    def get(self) -> BatchWriter:
        if self._writer is None:
            with self._lock:
                if self._writer is None:
                    self._writer = self._make()
        return self._writer

    def flush(self) -> int:
        """Write out what waits now, if this process made its writer."""
        return self._writer.flush() if self._writer is not None else 0

    def discard(self) -> int:
        """Forget what waits now, if this process made its writer (a test
        starting afresh); how many."""
        return self._writer.discard() if self._writer is not None else 0

    def shutdown(self) -> None:
        """Stop the thread and write out what is left."""
        if self._writer is not None:
            self._writer.stop()

    def reset(self) -> None:
        """Stop, and make a new writer (with the settings of then) on next
        use: a test that changes them."""
        self.shutdown()
        self._forget()

    def _forget(self) -> None:
        self._writer = None
