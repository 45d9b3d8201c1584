"""Booking's fault points between the writes of the seat protocol
(booking/services/seats.py, booking/services/blocks.py; DESIGN §3.10)."""

from config.faults import EXIT_CODE, arm, disarm, point, register  # noqa: F401

POINTS = register(
    (
        "seats.after_intent",
        "seats.after_release",
        "seats.after_transfer_intent",
        "seats.after_transfer",
        "seats.after_block",
        "seats.after_unblock",
    )
)
