#!/usr/bin/env python
"""Django's command-line entry point for Marquee."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting from the environment that cannot work: its one line
        # names the variable, a traceback would only bury it.
        sys.exit(f"Marquee cannot start: {exc}")


if __name__ == "__main__":
    main()
