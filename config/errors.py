"""The root of Marquee's domain errors."""


class DomainError(Exception):
    """A rule of the domain said no. ``message`` is safe to show to a shopper."""

    message = "That could not be done."
    status = 409

    def __init__(self, message: str | None = None):
        if message is not None:
            self.message = message
        super().__init__(self.message)


class InvalidInput(DomainError):
    """A form did not validate; ``message`` is its first error."""

    message = "Please check what you entered."
    status = 400
