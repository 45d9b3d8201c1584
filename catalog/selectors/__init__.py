"""Reads and queries over the catalog's collections; never writes.

One module per concern; import from the module (``catalog.selectors.pricing``).
"""
