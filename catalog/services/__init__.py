"""Every write that changes the catalog's state; one function per use case.

One module per concern; import from the module (``catalog.services.stock``).
"""
