"""Thin views of the booking app: parse with a form, call a service, render."""
