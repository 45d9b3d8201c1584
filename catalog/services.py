"""Every write that changes the catalog app's state; one function per use case."""
