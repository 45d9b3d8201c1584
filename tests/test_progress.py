"""The progress bar of long commands: counts, an estimate, a line per few
seconds off a terminal. Time is a parameter (a clock the test moves)."""

import io

from config.progress import LOG_EVERY_SECONDS, Progress, eta, say_seconds


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_estimate_is_the_pace_so_far():
    assert eta(0, 1000, 5.0) is None
    assert eta(250, 1000, 10.0) == 30.0
    assert eta(1000, 1000, 40.0) == 0.0
    assert say_seconds(None) == "estimating"
    assert say_seconds(30.4) == "about 30 s left"
    assert say_seconds(300) == "about 5 min left"


def test_off_a_terminal_a_line_every_few_seconds_with_counts_and_time_left():
    out, clock = io.StringIO(), Clock()

    with Progress("catalog items", 1000, stream=out, width=10, clock=clock) as bar:
        for _ in range(5):
            clock.now += 10
            bar.advance(200)
            bar.advance(0)  # at once again: no new line

    lines = out.getvalue().splitlines()
    assert lines[0] == "catalog items      [----------]   0% 0/1000, estimating"
    assert lines[1] == "catalog items      [##--------]  20% 200/1000, about 40 s left"
    assert lines[2].endswith("40% 400/1000, about 30 s left")
    assert lines[-1] == "catalog items      [##########] 100% 1000/1000, done"
    assert len(lines) == 6
    assert LOG_EVERY_SECONDS < 10


def test_on_a_terminal_one_line_is_redrawn():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out, clock = Terminal(), Clock()
    with Progress("Sessions", 4, stream=out, width=4, clock=clock) as bar:
        clock.now += 2
        bar.advance()

    text = out.getvalue()
    assert text.startswith("\rSessions           [#---]  25% 1/4, about 6 s left")
    assert "\n" not in text.rstrip("\n") and text.endswith("  2.0s\n")
