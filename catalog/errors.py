"""Domain errors of the catalog app."""

from config.errors import DomainError


class UnknownItem(DomainError):
    message = "That product does not exist."
    status = 404


class UnknownSku(DomainError):
    message = "That product variant does not exist."
    status = 404


class UnknownStore(DomainError):
    message = "That store does not exist."
    status = 404


class NotForSale(DomainError):
    message = "That product has no price and cannot be sold."
    status = 409
