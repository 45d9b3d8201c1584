"""Reads and queries over the shop app's collections; never writes."""
