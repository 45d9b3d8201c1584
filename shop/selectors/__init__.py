"""Reads and queries over the shop's collections; never writes.

One module per concern: ``shop.selectors.carts``, ``shop.selectors.orders``,
``shop.selectors.invariants``.
"""
