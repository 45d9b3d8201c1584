"""Reads and queries over the catalog app's collections; never writes."""
