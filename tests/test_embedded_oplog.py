"""The embedded Rust server runs without an oplog (config/embedded.py
``EmbeddedServer._environment``): no replica, change stream or restore of
Marquee reads one, and writing it cost every write."""

from pymongo import MongoClient

from config import engine
from config.embedded import EmbeddedServer


def _oplog_entries_after_writes(tmp_path, **options) -> int:
    server = EmbeddedServer(
        tmp_path / "data",
        tmp_path / "mongo.log",
        engine=engine.resolve("rust"),
        cache_size="256M",
        **options,
    )
    client = MongoClient(server.start())
    try:
        carts = client.marquee.carts
        carts.insert_one({"_id": "c1", "state": "active"})
        carts.update_one({"_id": "c1"}, {"$set": {"state": "complete"}})
        assert carts.find_one({"_id": "c1"})["state"] == "complete"
        return client.local["oplog.rs"].count_documents({})
    finally:
        client.close()
        server.stop()


def test_the_embedded_server_writes_no_oplog(tmp_path):
    assert engine.resolve("rust").name == "rust"
    assert _oplog_entries_after_writes(tmp_path / "default") == 0
    # The same writes with the oplog asked for (bench --oplog) leave entries:
    # what the count above reads is the oplog the server would write.
    assert _oplog_entries_after_writes(tmp_path / "asked", oplog=True) >= 2
