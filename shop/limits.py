"""The shop's limits, shared by services (which enforce them), forms and pages."""

# Per line: a shopper buying more is a wholesale order, not a cart.
MAX_LINE_QUANTITY = 99
# How many times a shopper may push the hold deadline without changing the cart.
MAX_EXTENSIONS = 3
