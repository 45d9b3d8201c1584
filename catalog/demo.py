"""Demo data of the catalog app, loaded by ``manage.py load_demo``."""


def load(*, items: int, seed: int, out) -> None:
    """Nothing to load yet."""
