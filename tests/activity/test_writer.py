"""The batching writer: batches reach the database, exit writes what is
left, and a stalled database costs events (counted), never a request's time.

The stall is real: the writer's sink talks to a TCP server that accepts
connections and never answers, through pymongo, as it would to a hung
MongoDB.
"""

import socket
import threading
import time
from datetime import UTC, datetime

import pytest
from pymongo import MongoClient

from activity import kinds
from activity.services.partitions import activity_write
from activity.services.writer import Writer
from tests.activity.conftest import logged

T = datetime(2030, 1, 15, 12, tzinfo=UTC)


def event(n: int = 0) -> dict:
    return kinds.view(user=f"user:{n}", ts=T, item=str(n))


class Written:
    """The real sink, and an event to wait on once ``expected`` are written."""

    def __init__(self, expected: int):
        self.expected, self.count = expected, 0
        self.done = threading.Event()

    def __call__(self, docs):
        written = activity_write(docs)
        self.count += written
        if self.count >= self.expected:
            self.done.set()
        return written


def test_a_full_batch_is_written_without_waiting_for_the_interval(mongo_db):
    sink = Written(expected=5)
    writer = Writer(sink=sink, capacity=100, batch=5, interval=3600)

    for n in range(5):
        assert writer.put(event(n))

    assert sink.done.wait(10), "the thread did not flush a full batch"
    assert len(logged(mongo_db)) == 5
    # The thread counts the batch once the sink has returned: join it first.
    writer.stop()
    assert writer.stats().written == 5


def test_the_interval_flushes_a_part_batch(mongo_db):
    sink = Written(expected=2)
    writer = Writer(sink=sink, capacity=100, batch=500, interval=0.05)

    writer.put(event(1))
    writer.put(event(2))

    assert sink.done.wait(10), "the timer did not flush"
    writer.stop()


def test_stopping_writes_what_is_queued(mongo_db):
    writer = Writer(capacity=100, batch=500, interval=3600)
    for n in range(7):
        writer.put(event(n))

    writer.stop()  # what atexit and gunicorn's worker_exit call

    assert writer.stats().written == 7
    assert len(logged(mongo_db)) == 7


def test_an_event_written_twice_is_stored_once(mongo_db):
    paid = kinds.order(order_id="o1", user="u", ts=T, number="MQ-1", lines=[])
    writer = Writer(capacity=10, batch=500, interval=3600)

    writer.put(paid)
    writer.put(dict(paid))
    writer.put(event(3))
    writer.flush()

    assert writer.stats().written == 2
    assert writer.stats().failed == 0
    assert len(logged(mongo_db)) == 2


def test_a_web_workers_exit_writes_what_its_pages_queued(mongo_db, monkeypatch):
    from activity.services import writer as module
    from config.gunicorn import worker_exit

    monkeypatch.setattr(module._process, "_writer", None)  # this test's own writer
    slow = module.writer()
    slow._interval = 3600  # no timer flush: only the exit writes
    for n in range(3):
        module.record(event(n))

    worker_exit(server=None, worker=None)

    assert slow.stats().written == 3
    assert len(logged(mongo_db)) == 3


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    client = MongoClient(
        f"mongodb://127.0.0.1:{port}/?directConnection=true",
        serverSelectionTimeoutMS=3000,
        connectTimeoutMS=3000,
        socketTimeoutMS=3000,
    )
    yield client.marquee
    client.close()
    listener.close()


def test_a_stalled_database_drops_events_with_a_count_and_blocks_no_one(
    silent_server, caplog
):
    budget = 0.02
    entered = threading.Event()

    def stalled(docs):
        entered.set()
        return activity_write(docs, database=silent_server)

    writer = Writer(
        sink=stalled,
        capacity=10,
        batch=1,
        interval=0.01,
        budget=budget,
    )
    # The first event wakes the thread, which takes it and hangs on the
    # silent server; ten more fill the queue behind it.
    writer.put(event(0))
    assert entered.wait(10), "the writer's thread never took the event"
    waits = []
    for n in range(1, 31):
        started = time.perf_counter()
        writer.put(event(n))
        waits.append(time.perf_counter() - started)

    stats = writer.stats()
    assert (stats.queued, stats.dropped, stats.written) == (10, 20, 0)
    # Each request waited about its budget for room, never for the server,
    # which keeps the thread for its 3 s socket timeout (the bound leaves a
    # loaded machine room to deschedule a put without hiding such a wait).
    assert max(waits) < 1.0
    writer.stop(timeout=15)
    stats = writer.stats()
    # Every event is accounted for: the stalled batch and the queue failed.
    assert (stats.failed, stats.dropped, stats.written) == (11, 20, 0)
    # and the operator is told, once the thread is back.
    assert "activity: 20 events dropped (queue full), 20 in all" in caplog.text
