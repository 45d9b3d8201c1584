"""A dependency-free progress bar for long management commands."""

import sys
import time

# Off a terminal (a log, `make run` piped), at most one line this often.
LOG_EVERY_SECONDS = 3.0


def eta(done: int, total: int, elapsed: float) -> float | None:
    """Seconds left at the pace so far; None before anything is done."""
    if done <= 0 or elapsed <= 0:
        return None
    return elapsed / done * (total - done)


def say_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "estimating"
    if seconds < 1:
        return "under a second left"
    if seconds < 90:
        return f"about {seconds:.0f} s left"
    return f"about {seconds / 60:.0f} min left"


class Progress:
    """A bar with counts and an estimate of the time left.

    On a terminal one line is redrawn in place; elsewhere a line is printed
    at most every LOG_EVERY_SECONDS (and at the end), so a log shows the
    load moving. ``clock`` is for tests.
    """

    def __init__(
        self, label: str, total: int, stream=None, width: int = 30, clock=None
    ):
        self.label, self.total, self.width = label, max(total, 1), width
        self.stream = stream or sys.stderr
        self.clock = clock or time.monotonic
        self.done = 0
        self.tty = self.stream.isatty()
        self.started = self.clock()
        self._logged_at: float | None = None
        self._finished = False

    def line(self) -> str:
        """ "catalog items [#####-----] 50% 500/1000, about 12 s left"."""
        fraction = self.done / self.total
        filled = int(fraction * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        left = eta(self.done, self.total, self.clock() - self.started)
        tail = "done" if self.done >= self.total else say_seconds(left)
        return (
            f"{self.label:<18} [{bar}] {fraction:4.0%} {self.done}/{self.total}, {tail}"
        )

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        now = self.clock()
        if self.tty:
            self.stream.write("\r" + self.line() + "\033[K")
        elif self._due(now):
            self._logged_at = now
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def _due(self, now: float) -> bool:
        """A line off a terminal: every few seconds, and the last one once."""
        if self.done >= self.total:
            finished, self._finished = self._finished, True
            return not finished
        return self._logged_at is None or now - self._logged_at >= LOG_EVERY_SECONDS

    def close(self) -> None:
        if self.tty:
            elapsed = self.clock() - self.started
            self.stream.write(f"  {elapsed:.1f}s\n")
            self.stream.flush()

    def __enter__(self):
        if not self.tty:  # say at once what is starting and how big it is
            self.stream.write(self.line() + "\n")
            self.stream.flush()
        return self

    def __exit__(self, *exc):
        self.close()
