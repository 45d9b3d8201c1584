"""Every write that changes the booking app's state; one function per use case."""
