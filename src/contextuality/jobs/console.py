"""What a user watching the console is told while a job runs: where a long loop is, how
fast it goes and how long it has left, and when a long job ends.

A workflow job's stderr is its log file (`process.run_step`); these lines also go to the
process's own stderr, which Snakemake shows, so that a run of minutes is never silent.
From the command line (stderr the terminal) they are its log lines.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from contextuality.errors import on_console

log = logging.getLogger(__name__)

# Seconds between two progress lines of one loop (`Progress`).
PROGRESS_INTERVAL = 15.0


def say(message: str) -> None:
    """Log `message`, and print it on the console where stderr is a job's log file
    (`errors.on_console`, as a warning is)."""
    log.info(message)
    on_console(message)


def duration(seconds: float) -> str:
    """``4.2 s``, ``42 s``, ``3 min 5 s`` or ``2 h 4 min`` (tenths below 10 s: an API
    call of a second, or a job of a few)."""
    if seconds < 9.95:
        return f"{max(0.0, seconds):.1f} s"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _rate(per_second: float, unit: str) -> str:
    """``12.5 words/s``, or below one item a second ``20.4 s each`` (a rate of slow
    items would read 0.0)."""
    if per_second >= 1.0:
        return f"{per_second:,.1f} {unit}/s"
    return f"{1.0 / per_second:,.1f} s each"


class Progress:
    """A loop over `total` items of `unit` told on the console (`say`): a line at most
    every `interval` seconds with the count done, the rate and the time left at that rate,
    and one at the end with the time it took: always with `always`, else only after a loop
    that lasted `interval` or more (a short one passes unsaid)."""

    def __init__(
        self,
        what: str,
        total: int,
        unit: str,
        interval: float = PROGRESS_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        always: bool = False,
    ) -> None:
        self.what, self.total, self.unit = what, total, unit
        self.interval, self.clock, self.always = interval, clock, always
        self.done = self.read = 0
        self.start = self.last = clock()

    def update(self, count: int = 1, *, read: bool = False) -> None:
        """`count` more items done, computed or `read` from a stopped run's kept parts
        (counted, not in the rate); a line if `interval` has passed since the last."""
        self.done += count
        self.read += count if read else 0
        now = self.clock()
        if now - self.last >= self.interval and self.done < self.total:
            self.last = now
            line = f"{self.what}: {self.done:,} of {self.total:,} {self.unit} "
            line += f"({self.done / self.total:.0%})"
            if self.read:
                line += f", {self.read:,} read from a stopped run"
            computed = self.done - self.read
            if computed:
                rate = computed / max(now - self.start, 1e-9)
                left = (self.total - self.done) / rate
                line += f", {_rate(rate, self.unit)}, about {duration(left)} left"
            say(line)

    def finish(self) -> None:
        """The line saying the loop ended, its count and the time it took."""
        elapsed = self.clock() - self.start
        if self.always or elapsed >= self.interval:
            say(f"{self.what}: {self.done:,} {self.unit} in {duration(elapsed)}")
