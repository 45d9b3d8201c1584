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


class InvalidProduct(DomainError):
    message = "That product is not valid."
    status = 400


class SkuTaken(DomainError):
    message = "That SKU belongs to another product."
    status = 409


class StockShort(DomainError):
    message = "Not enough of that variant in that store."
    status = 409


class InvalidStore(DomainError):
    message = "That store is not valid."
    status = 400
