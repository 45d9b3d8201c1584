import pytest
from bson import ObjectId

from tests.booking.factories import make_session, make_theater


@pytest.fixture
def theater_id():
    return make_theater()


@pytest.fixture
def session_id(theater_id):
    return make_session(theater_id)


@pytest.fixture
def raw_session(mongo_db, session_id):
    """Read the session document as stored (to assert what changed)."""

    def read():
        return mongo_db.sessions.find_one({"_id": ObjectId(session_id)})

    return read
