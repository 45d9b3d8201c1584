"""Every write that changes the shop's state; one function per use case.

One module per concern; import from the module:
``shop.services.carts`` (shoppers' changes), ``shop.services.expiry``,
``shop.services.checkout``, ``shop.services.reconcile``.
"""
