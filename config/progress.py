"""A dependency-free progress bar for long management commands."""

import sys
import time


class Progress:
    """Redraws one line on a terminal; prints a line every 10% elsewhere."""

    def __init__(self, label: str, total: int, stream=None, width: int = 30):
        self.label, self.total, self.width = label, max(total, 1), width
        self.stream = stream or sys.stderr
        self.done = 0
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self._last_decile = -1

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        fraction = self.done / self.total
        if self.tty:
            filled = int(fraction * self.width)
            bar = "#" * filled + "-" * (self.width - filled)
            self.stream.write(
                f"\r{self.label:<18} [{bar}] {fraction:4.0%} {self.done}/{self.total}"
            )
        elif int(fraction * 10) > self._last_decile:
            self._last_decile = int(fraction * 10)
            self.stream.write(
                f"{self.label}: {fraction:.0%} ({self.done}/{self.total})\n"
            )
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            elapsed = time.monotonic() - self.started
            self.stream.write(f"  {elapsed:.1f}s\n")
            self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
