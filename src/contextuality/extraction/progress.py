"""What the console is told while an extraction runs: its start, a line between batches at
least every `INTERVAL` seconds of wall time, and its end.

Told through `jobs.console.say`. The first line between batches comes once
`FIRST_INTERVAL` seconds have passed; each says the sentences and words done, the time
taken, the rate and the time left, and the last says 100 %. Lines come between batches,
not between segments, so that an extraction of one or two segments is not silent for
minutes."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from contextuality.extraction.units import EncodedSentence
from contextuality.jobs.console import PROGRESS_INTERVAL, duration, say

INTERVAL = PROGRESS_INTERVAL  # seconds of wall time between two progress lines
FIRST_INTERVAL = 5.0  # seconds from the start to the first


class ExtractionProgress:
    """An extraction's sentences and words (shard rows) done, counted batch by batch and
    told on the console where `shown`. A sentence, and its words with it, is done once
    every input it was read in has run (all its windows, `units.encode_inputs`); the time
    left is the words left at the rate of words so far, as batches of long sentences run
    first in each segment (`forward.plan_batches`)."""

    def __init__(
        self,
        what: str,
        n_sentences: int,
        n_rows: int,
        n_layers: int,
        device: object,
        shown: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.n_sentences, self.n_rows = what, n_sentences, n_rows
        self.shown, self.clock = shown, clock
        self.sentences = self.rows = 0
        self.started = clock()
        self.next_line = self.started + FIRST_INTERVAL
        self._owners = self._inputs_left = self._words = np.zeros(0, dtype=np.int64)
        if shown:
            say(
                f"{what}: extracting {n_rows:,} words of {n_sentences:,} sentences, "
                f"{n_layers} layers, on {device}"
            )

    def segment(self, encoded: Sequence[EncodedSentence]) -> None:
        """The inputs of the segment whose batches come next (`batch` takes their
        positions)."""
        self._owners = np.array([item.sentence for item in encoded], dtype=np.int64)
        self._inputs_left = np.bincount(self._owners)
        self._words = np.zeros(len(self._inputs_left), dtype=np.int64)
        self._words[self._owners] = [item.n_words for item in encoded]

    def batch(self, positions: np.ndarray) -> None:
        """The inputs at `positions` of the current segment have run; a line if it is
        time for one and the extraction is not done (`finish` says that)."""
        owners = self._owners[positions]
        np.subtract.at(self._inputs_left, owners, 1)
        ended = np.unique(owners[self._inputs_left[owners] == 0])
        self.sentences += len(ended)
        self.rows += int(self._words[ended].sum())
        now = self.clock()
        if self.shown and now >= self.next_line and self.sentences < self.n_sentences:
            self.next_line = now + INTERVAL
            say(self._line(now))

    def finish(self) -> None:
        """The line saying the extraction ended: what it did and the time it took."""
        if self.shown:
            say(self._line(self.clock()))

    def _line(self, now: float) -> str:
        """``m: extraction: 120 of 480 sentences (25%), 2,000 of 8,000 words, 30 s,
        66.7 words/s, time left about 1 min 30 s``; at the end, ``..., in 2 min 0 s, ...``."""
        elapsed = now - self.started
        rate = self.rows / max(elapsed, 1e-9)
        done = self.sentences >= self.n_sentences
        # Floored, so that only the end says 100%.
        percent = 100 if done else 100 * self.sentences // self.n_sentences
        counts = (
            f"{self.what}: extraction: {self.sentences:,} of {self.n_sentences:,} sentences "
            f"({percent}%), {self.rows:,} of {self.n_rows:,} words"
        )
        if done:
            return f"{counts}, in {duration(elapsed)}, {rate:,.1f} words/s"
        left = (
            "not yet known" if not rate else f"about {duration((self.n_rows - self.rows) / rate)}"
        )
        return f"{counts}, {duration(elapsed)}, {rate:,.1f} words/s, time left {left}"
