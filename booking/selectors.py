"""Reads and queries over the booking app's collections; never writes."""
