"""What a measure is (`Measure`) and what it is computed from (`LayerInputs`).

A measure writes one or more rows of a layer's summary (and of ``measures.tsv``). Its
record says which rows, what they are (baseline family, the kind of interval), whether a
streamed layer has them, and how to compute them from a layer's `LayerInputs`; the
registry (`contextuality.measures.registry`) finds every record, and the analysis, the
streamed layers, the figures' checks and the docs' list of measures follow from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from contextuality.catalogue.record import Instrument
from contextuality.configuration.random_streams import measure_generator
from contextuality.measures.equations import SentenceSums
from contextuality.measures.isotropy import Spread, spread
from contextuality.measures.occurrences import LayerRows
from contextuality.measures.settings import MeasureSettings
from contextuality.measures.summary import Baseline, Census

# A summary row: raw, baseline and adjusted values with their intervals, n, and so on
# (`summary.SUMMARY_COLUMNS`).
SummaryRow = dict[str, Any]

# The baseline families: what each adjusted value subtracts (`analysis` estimates each).
BASELINE_FAMILIES = ("cosine", "paper_cosine", "truncated_svd", "mev", "mev_centered")

# What an interval is: a percentile bootstrap of a mean over words or sentences, the
# spread of estimates on independent samples, the range of a curve over the scales of its
# plateau (intrinsic dimension), or none (an exact value).
INTERVALS = ("bootstrap", "sample spread", "plateau range", "none")

# The steps that compute a measure: the measure step (from a `LayerInputs`), the
# degeneration analysis inside it, and the intrinsic dimension's step.
STEPS = ("measure_layer", "degeneration", "layer_dimension")


@dataclass
class LayerInputs:
    """What a layer's measures are computed from, stored or streamed.

    words, sentences: the per-word and per-sentence tables (`occurrences.word_table`,
    `occurrences.sentence_table`), adjusted values included; baselines: every baseline by
    family; sentence_sums: the unit rows' sums by sentence; n_valid: occurrences with a
    vector. A stored layer also has its `rows` (each occurrence's vector) and the paper's
    sampled statistics (`paper`, (1 + sample_replicates, 3), on samples of `paper_sample_size`
    occurrences); a streamed one has neither, and its records say it lacks what needs them.
    """

    settings: MeasureSettings
    words: pd.DataFrame
    sentences: pd.DataFrame
    baselines: dict[str, Baseline]
    sentence_sums: SentenceSums
    n_valid: int
    rows: LayerRows | None = None
    paper: np.ndarray | None = None
    paper_sample_size: int = 0
    vocab: pd.DataFrame | None = None
    overwrite: bool = False
    _shared: dict[str, Any] = field(default_factory=dict, repr=False)

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """`compute()`, computed once per layer: what several measures read (one
        covariance's eigenvalues, say)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def spread(self) -> Spread:
        """The covariance of the layer's rows and its eigenvalues (`isotropy.spread`),
        computed once: the isotropy and spectrum scores read it."""
        return self.shared("spread", lambda: spread(self.rows.vectors))

    def generator(self, row: str) -> np.random.Generator:
        """The random stream of summary row `row` (`random_streams.measure_generator`):
        its own, so that adding or removing a measure changes no other measure's draws."""
        return measure_generator(self.settings.seed, row)


@dataclass(frozen=True)
class MeasureFigure:
    """A figure of a measure's own: each of its rows against layer, a line per model.

    name: the figure's file name (``results/figures/<name>.png``); title; ylabel: its y
    axis; column: the summary column drawn (``raw`` or ``adjusted``)."""

    name: str
    title: str
    ylabel: str
    column: str = "raw"


@dataclass(frozen=True)
class FigureRows:
    """Rows of a measure drawn in a figure of several measures' rows (`figures.specs`).

    figure: the figure's name (a key of `figures.specs.FIGURES_OF_ROWS`, or one of
    `figures.specs.PANEL_FIGURES`); rows: which of the measure's rows it draws, in order
    (none: every row); place: where the first of them comes among the figure's lines or
    panels (0: first), the others right after it; column: the summary column a figure of a
    panel per row draws of them (a figure of several rows' lines draws its own: None)."""

    figure: str
    rows: tuple[str, ...] = ()
    place: int = 0
    column: str | None = None


@dataclass(frozen=True, kw_only=True)
class Measure(Instrument):
    """One measure: the summary rows it writes and how they are computed.

    name: the measure's name (its first row's, or the family's stem, as ``rogue_share``);
    caption: what it is, in one sentence (`Instrument`; the docs' list of measures).
    rows: the summary rows it writes, in order.
    family: the baseline its adjusted value subtracts (`BASELINE_FAMILIES`), or
    None for a measure with no baseline.
    interval: what its interval is (`INTERVALS`); a value estimated on seeded samples
    (`sampled`) has their spread, or the range of its curve over the scales of a plateau.
    streamed: whether a streamed layer has it (see `contextuality.streaming`).
    table, column: the per-word (``words``) or per-sentence (``sentences``) table and its
    column that it averages, adjusted in that table by the same family's baseline (None: a
    layer value).
    step: which step computes it (`STEPS`); `compute` is that of the measure step's.
    compute: rows of it from a layer's inputs: row name → summary values.
    needs_positions: computed only where the position profile is (a layer whose
    degeneration is analysed), after every other measure, as it may drop rows in place.
    optional: one that ``measures.leave_out`` may name (no other step reads its rows).
    census: a table its row gathers across layers (`summary.Census`), or None.
    figure: a figure of its own (`MeasureFigure`), drawn under every transform of
    ``figures.transforms`` (the figures of several measures are `figures.specs`').
    labels: what a figure's axis calls each row, in the order of `rows` (none: the rows'
    names); ``adjusted`` is put before it where the adjusted value is drawn.
    drawn_in: the figures of several measures that draw its rows (`FigureRows`).
    """

    rows: tuple[str, ...]
    family: str | None = None
    interval: str = "none"
    streamed: bool = False
    table: str | None = None
    column: str | None = None
    step: str = "measure_layer"
    compute: Callable[[LayerInputs], dict[str, SummaryRow]] | None = None
    needs_positions: bool = False
    optional: bool = False
    census: Census | None = None
    figure: MeasureFigure | None = None
    labels: tuple[str, ...] = ()
    drawn_in: tuple[FigureRows, ...] = ()

    @property
    def sampled(self) -> bool:
        """Whether its value is estimated on seeded samples of occurrences or sentences,
        its interval their spread or its curve's range over a plateau (else it is computed
        from every occurrence; its baseline may still be sampled)."""
        return self.interval in ("sample spread", "plateau range")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.family is not None and self.family not in BASELINE_FAMILIES:
            raise ValueError(f"{self.name}: family must be one of {BASELINE_FAMILIES}")
        if self.interval not in INTERVALS:
            raise ValueError(f"{self.name}: interval must be one of {INTERVALS}")
        if self.step not in STEPS:
            raise ValueError(f"{self.name}: step must be one of {STEPS}")
        if self.labels and len(self.labels) != len(self.rows):
            raise ValueError(f"{self.name}: a label for each row, or none")
        if any(set(drawn.rows) - set(self.rows) for drawn in self.drawn_in):
            raise ValueError(f"{self.name}: a figure draws only rows the measure writes")
        if (self.compute is None) != (self.step != "measure_layer"):
            raise ValueError(f"{self.name}: a compute function iff the measure step computes it")
