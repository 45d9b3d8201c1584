"""Demo data of the booking app, loaded by ``manage.py load_demo``."""


def load(*, items: int, seed: int, out) -> None:
    """Nothing to load yet."""
