"""What a long call of the API tells while it runs. A line through the calling module's
logger when it starts, stating its cost, then at least one every 15 seconds while it runs
(its count done, the rate and the time left where it counts draws; its stage otherwise),
and one when it ends; with ``progress=True``, or by default where a terminal or a notebook
shows stderr, a tqdm bar too."""

from __future__ import annotations

import logging
import statistics
import sys
import threading
import time
from types import TracebackType
from typing import Any

from contextuality.jobs.console import PROGRESS_INTERVAL, duration


def wants_bar(progress: bool | None) -> bool:
    """Whether a call given `progress` shows a bar: as given, or where None, when stderr
    is a terminal or the call runs in IPython (a notebook)."""
    if progress is not None:
        return bool(progress)
    ipython = sys.modules.get("IPython")
    in_ipython = ipython is not None and getattr(ipython, "get_ipython", lambda: None)() is not None
    return in_ipython or (hasattr(sys.stderr, "isatty") and sys.stderr.isatty())


class Told:
    """A call's progress, as a context: `what` the call, `cost` what it computes (the
    start line), `total` the `unit`s it counts (`update`; 0: it counts stages, `stage`),
    told through `logger` at most every `interval` seconds (a thread that wakes to tell
    it, `beat`) and on a bar where `progress` asks for one (`wants_bar`). `before`: what
    the call does before its first unit (an alignment's neighbour searches), said until
    the first is done."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        cost: str,
        total: int = 0,
        unit: str = "stages",
        progress: bool | None = None,
        interval: float = PROGRESS_INTERVAL,
        before: str = "",
    ) -> None:
        self.logger, self.what, self.cost = logger, what, cost
        self.total, self.unit, self.interval, self.before = total, unit, interval, before
        self.done, self.now = 0, "starting"
        # Units read from a stopped run rather than computed (milliseconds each): counted
        # done, never timed.
        self.read = 0
        # When the latest computed units were done, and the seconds a unit took in each
        # update since the one before it: the time left is at their median, so that what
        # came before the first (`before`) or between two (an alignment's searches of its
        # next set of rows) does not stretch every unit's share.
        self.last_done: float | None = None
        self.took: list[float] = []
        self.bar: Any = None
        if wants_bar(progress):
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total or None, desc=what, unit=unit)
        self._stop = threading.Event()
        self._beats = threading.Thread(target=self._tell, daemon=True)
        self.start = time.monotonic()

    def __enter__(self) -> Told:
        self.logger.info("%s: %s", self.what, self.cost)
        self._beats.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._beats.join()
        if self.bar is not None:
            self.bar.close()
        took = duration(time.monotonic() - self.start)
        if kind is None:
            self.logger.info("%s: done in %s", self.what, took)
        else:
            self.logger.info("%s: stopped after %s (%s)", self.what, took, kind.__name__)

    def update(self, count: int = 1, *, read: bool = False) -> None:
        """`count` more units done: computed, or `read` from a stopped run's kept parts
        (counted, but not in the rate: a resumed call would tell minutes for hours)."""
        self.done += count
        if read:
            self.read += count
        else:
            now = time.monotonic()
            if self.last_done is not None:
                self.took.append((now - self.last_done) / count)
            self.last_done = now
        if self.bar is not None:
            self.bar.update(count)

    def stage(self, name: str) -> None:
        """The call now at stage `name` (the previous one done)."""
        self.now = name
        self.logger.debug("%s: %s", self.what, name)
        if self.bar is not None:
            self.bar.set_postfix_str(name)

    def beat(self) -> str:
        """The line telling where the call is (logged every `interval` seconds): the stage,
        or the units done and, once more are computed after the first, the time left at
        the median time of a unit since the one before it (what came before the first,
        `before`, a long pause between two, and the units read from a stopped run not
        counted)."""
        elapsed = time.monotonic() - self.start
        if not self.total:
            return f"{self.what}: {self.now}, {duration(elapsed)} so far"
        line = f"{self.what}: {self.done:,} of {self.total:,} {self.unit}, {duration(elapsed)}"
        if not self.done and self.before:
            line += f" ({self.before})"
        if self.read:
            line += f" ({self.read:,} read from a stopped run)"
        if self.took:
            each = statistics.median(self.took)
            line += f", about {duration((self.total - self.done) * each)} left"
        return line

    def _tell(self) -> None:
        while not self._stop.wait(self.interval):
            self.logger.info(self.beat())
            if self.bar is not None:
                self.bar.refresh()
