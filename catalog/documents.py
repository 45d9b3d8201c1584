"""MongoEngine documents owned by the catalog app (indexes in each ``meta``)."""
