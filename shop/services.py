"""Every write that changes the shop app's state; one function per use case."""
