"""A process's connections to MongoDB are capped (settings.MONGODB_POOL_SIZE)."""

import threading

from config import mongo


def _pool_limit() -> int:
    return mongo.db().client.options.pool_options.max_pool_size


def _uri_with(uri: str, option: str) -> str:
    return f"{uri}{'&' if '?' in uri else '?'}{option}"


def test_a_process_opens_at_most_the_settings_connections(
    settings, mongo_uri, mongo_db
):
    settings.MONGODB_POOL_SIZE = 2
    mongo.connect(mongo_uri, db=mongo_db.name)
    mongo_db.things.insert_many([{"n": n} for n in range(200)])
    start = threading.Barrier(12)
    counted = []

    def read():
        start.wait()
        counted.append(mongo.db().things.count_documents({"n": {"$gte": 0}}))

    threads = [threading.Thread(target=read) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Every thread was served, over two connections at most.
    assert counted == [200] * 12
    pool = next(iter(mongo.db().client._topology._servers.values())).pool
    assert len(pool.conns) <= 2
    assert _pool_limit() == 2


def test_a_pool_size_in_the_uri_wins_over_the_setting(settings, mongo_uri, mongo_db):
    settings.MONGODB_POOL_SIZE = 2
    mongo.connect(_uri_with(mongo_uri, "maxPoolSize=5"), db=mongo_db.name)

    assert _pool_limit() == 5
    assert mongo.db().things.count_documents({}) == 0
