"""Domain errors of the booking app."""
