"""Thin views of the shop app: parse with a form, call a service, render."""
