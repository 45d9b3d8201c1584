"""MongoEngine documents owned by the shop app (indexes in each ``meta``)."""
