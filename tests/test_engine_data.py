"""The two embedded servers share one data directory, as the fallback needs.

Marquee's data written by SecantusDB's Rust server must open on its Python
server and back: a machine that loses its Rust build (or a person who sets
MARQUEE_DB_ENGINE=python) keeps every cart, order and seat. The pinned
versions (config/engine.py) are chosen for this; this test proves it.
"""

import pytest
from pymongo import MongoClient

from config import engine
from config.embedded import EmbeddedServer


@pytest.fixture
def both_servers():
    rust = engine.resolve("rust")
    assert rust.name == "rust", rust.fallback_reason
    return rust, engine.resolve("python")


def _session(tmp_path, chosen, work):
    server = EmbeddedServer(
        tmp_path / "data", tmp_path / "mongo.log", engine=chosen, cache_size="256M"
    )
    client = MongoClient(server.start())
    try:
        return work(client.marquee)
    finally:
        client.close()
        server.stop()


def test_data_written_by_either_server_opens_on_the_other(tmp_path, both_servers):
    rust, python = both_servers

    def write_on_rust(db):
        db.carts.create_index("owner")
        db.carts.insert_many([{"_id": i, "owner": f"o{i % 7}"} for i in range(200)])

    def read_then_write_on_python(db):
        assert db.carts.count_documents({"owner": "o3"}) == 29
        db.carts.update_many({"owner": "o3"}, {"$set": {"seen": "python"}})
        db.orders.insert_one({"_id": "A-1", "total": 35})

    def read_on_rust(db):
        return (
            db.carts.count_documents({"seen": "python"}),
            db.orders.find_one({"_id": "A-1"}),
            [i["key"] for i in db.carts.list_indexes()],
        )

    _session(tmp_path, rust, write_on_rust)
    _session(tmp_path, python, read_then_write_on_python)
    seen, order, indexes = _session(tmp_path, rust, read_on_rust)

    assert seen == 29
    assert order == {"_id": "A-1", "total": 35}
    assert {"owner": 1} in [dict(k) for k in indexes]
