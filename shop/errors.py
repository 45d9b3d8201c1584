"""Domain errors of the shop app."""
