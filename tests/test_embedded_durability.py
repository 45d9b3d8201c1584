"""What the embedded server, started as ``serve`` starts it, keeps when it
dies: every write it acknowledged (config/embedded.py).

Without a synced log, WiredTiger acknowledges a commit whose log record is
still in its own buffers, and a kill -9 loses the last of them (dozens to
hundreds under four writers).
"""

import itertools
import os
import signal
import threading

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from config.embedded import EmbeddedServer

WRITERS = 4
# Enough writes in flight and behind us that a log left unsynced shows:
# run without the sync, a kill at this point loses some in every try.
ACKNOWLEDGED_BEFORE_THE_KILL = 2000


def test_every_acknowledged_write_survives_a_kill_9_of_the_server(tmp_path):
    server = EmbeddedServer(tmp_path / "data", tmp_path / "mongo.log")
    uri = server.start()
    acknowledged: list[str] = []
    lock = threading.Lock()
    enough = threading.Event()

    def write(writer: int) -> None:
        client = MongoClient(uri, serverSelectionTimeoutMS=2000)
        try:
            for i in itertools.count():
                key = f"{writer}-{i}"
                client.durability.writes.insert_one({"_id": key})
                with lock:
                    acknowledged.append(key)
                    if len(acknowledged) >= ACKNOWLEDGED_BEFORE_THE_KILL:
                        enough.set()
        except PyMongoError:
            return  # the server is gone; this write was never acknowledged
        finally:
            client.close()

    writers = [
        threading.Thread(target=write, args=(n,), daemon=True) for n in range(WRITERS)
    ]
    try:
        for thread in writers:
            thread.start()
        assert enough.wait(timeout=120), "the writers did not get going"
        os.kill(server.process.pid, signal.SIGKILL)  # writers still writing
        for thread in writers:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in writers)

        server.restart()  # as serve's supervisor does: same data, same port
        client = MongoClient(uri)
        try:
            kept = {doc["_id"] for doc in client.durability.writes.find({}, {"_id": 1})}
        finally:
            client.close()
    finally:
        server.stop()

    assert len(acknowledged) >= ACKNOWLEDGED_BEFORE_THE_KILL
    lost = [key for key in acknowledged if key not in kept]
    assert lost == [], f"{len(lost)} of {len(acknowledged)} acknowledged writes lost"
