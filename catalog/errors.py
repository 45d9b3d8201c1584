"""Domain errors of the catalog app."""
