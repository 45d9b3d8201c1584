"""MongoEngine documents owned by the booking app (indexes in each ``meta``)."""
