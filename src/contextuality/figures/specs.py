"""What each figure draws, and every figure's file name: importable without matplotlib, so
that the Snakefile and the command line can name the figures without loading it."""

from __future__ import annotations

from dataclasses import dataclass

from contextuality.measures.record import Measure
from contextuality.measures.registry import MEASURES, axis_label


@dataclass(frozen=True)
class MeasureLine:
    """One measure drawn as a line per model, with a line style and a legend suffix."""

    measure: str
    linestyle: str = "-"
    label: str = ""


# The report's sections of the measures' figures (`workflow.report.report_section`), each
# figure under the transform it shows.
PAPERS_FIGURES = "The paper's figures 1-4"
WORDS = "Words by class and frequency"
SPECTRA = "Spectra and sentence shape"
MASSIVE_ACTIVATIONS = "Massive activations"
BEYOND_THE_PAPER = "Measures beyond the paper"


@dataclass(frozen=True)
class FigureSpec:
    """What a figure plots: a column of one or more measures of the summary table.
    spearman: the column is a Spearman ρ over the row's n words, whose band is its
    closed-form interval (`measures.ranks.spearman_interval`), not the table's.
    section: the report's section that shows it."""

    name: str
    column: str
    title: str
    ylabel: str
    series: tuple[MeasureLine, ...]
    spearman: bool = False
    section: str = BEYOND_THE_PAPER


# Each line's style, by its place in a figure of several rows.
LINE_STYLES = ("-", "--", "-.", ":")


def measure_lines(rows: tuple[str, ...], labels: tuple[str, ...]) -> tuple[MeasureLine, ...]:
    """A line per summary row, styled by its place, and where the figure draws several,
    called in its legend by its label (its record's: one label per row)."""
    several = len(rows) > 1
    return tuple(
        MeasureLine(row, LINE_STYLES[place], f" {label}" if several else "")
        for place, (row, label) in enumerate(zip(rows, labels, strict=True))
    )


def figure_of_rows(
    name: str,
    title: str,
    column: str,
    rows: tuple[str, ...],
    ylabel: str | None = None,
    spearman: bool = False,
    section: str = BEYOND_THE_PAPER,
) -> FigureSpec:
    """A figure of `rows` (summary rows) against layer, each a line called by its record's
    label; its y axis `ylabel`, else what the first row's record calls it
    (`registry.axis_label`, of `column`); in the report's `section`."""
    ylabel = axis_label(rows[0], column) if ylabel is None else ylabel
    labels = tuple(axis_label(row) for row in rows)
    return FigureSpec(name, column, title, ylabel, measure_lines(rows, labels), spearman, section)


@dataclass(frozen=True)
class FigureOfRows:
    """A figure of several measures' rows, each row's record naming it (`record.FigureRows`):
    its title, the summary column drawn, its y axis (None: what its first row's record calls
    it), whether the column is a Spearman ρ and its section (as `FigureSpec`)."""

    title: str
    column: str
    ylabel: str | None = None
    spearman: bool = False
    section: str = BEYOND_THE_PAPER


# The figures of several measures' rows, in the order the report and the command line list
# them; which rows each draws, and in what order, is said by the rows' records.
FIGURES_OF_ROWS = {
    "fig1_anisotropy": FigureOfRows("Figure 1. Anisotropy", "raw", section=PAPERS_FIGURES),
    "fig2_selfsim": FigureOfRows("Figure 2. Self-similarity", "adjusted", section=PAPERS_FIGURES),
    "fig3_intrasim": FigureOfRows(
        "Figure 3. Intra-sentence similarity", "adjusted", section=PAPERS_FIGURES
    ),
    "fig4_mev": FigureOfRows(
        "Figure 4. MEV, the paper's estimator", "adjusted", section=PAPERS_FIGURES
    ),
    "mev_definition3": FigureOfRows(
        "MEV as Definition 3 defines it (σ₁²/Σσ²)", "adjusted", section=PAPERS_FIGURES
    ),
    "selfsim_word_classes": FigureOfRows(
        "Self-similarity of stopwords and content words",
        "adjusted",
        ylabel=axis_label("selfsim", "adjusted"),
        section=WORDS,
    ),
    "selfsim_frequency": FigureOfRows(
        "Self-similarity against word frequency", "raw", spearman=True, section=WORDS
    ),
    "matrix_entropy": FigureOfRows(
        "Matrix entropy of the corpus and within sentences",
        "raw",
        ylabel="matrix entropy (nats)",
        section=SPECTRA,
    ),
    "alpha_req": FigureOfRows("Decay of the eigenspectrum (α-ReQ)", "raw", section=SPECTRA),
    "massive_activations": FigureOfRows("Massive activations", "raw", section=MASSIVE_ACTIVATIONS),
    "curvature": FigureOfRows("Curvature of each sentence's trajectory", "raw", section=SPECTRA),
}


# The figures of a panel per row, each row's record naming it with the column drawn
# (`record.FigureRows.column`): the transforms figure (results/figures/transforms.png,
# every transform side by side), each ablated model's
# (results/figures/ablation/<model>.png) and the figures of a series of models, a
# checkpoint sweep's and a family's (`SERIES_FIGURE`), and the geometry under the
# corrections (its measures' panels; `figures.geometry.correction_panels`).
TRANSFORMS_FIGURE = "transforms"
ABLATION_FIGURE = "ablation"
SERIES_FIGURE = "series"
CORRECTIONS_FIGURE = "geometry_transforms"
PANEL_FIGURES = (TRANSFORMS_FIGURE, ABLATION_FIGURE, SERIES_FIGURE, CORRECTIONS_FIGURE)


def _placed(name: str) -> list[tuple[int, str, str | None]]:
    """(place, row, column) of every row the records draw in figure `name`, by place
    (`record.FigureRows`); a ValueError unless they take each place from 0 once."""
    placed = sorted(
        (drawn.place + offset, row, drawn.column)
        for record in MEASURES
        for drawn in record.drawn_in
        if drawn.figure == name
        for offset, row in enumerate(drawn.rows or record.rows)
    )
    if not placed or [place for place, _, _ in placed] != list(range(len(placed))):
        raise ValueError(f"{name}: its records' rows must take each place from 0 once: {placed}")
    return placed


def rows_drawn_in(name: str) -> tuple[str, ...]:
    """The summary rows that figure `name` (of `FIGURES_OF_ROWS`) draws, in the order of the
    places their records give them; the figure's column, none of their own."""
    placed = _placed(name)
    if any(column is not None for _, _, column in placed):
        raise ValueError(f"{name}: a figure of several rows draws its own column, not a row's")
    return tuple(row for _, row, _ in placed)


def panels_drawn_in(name: str) -> tuple[tuple[str, str, str], ...]:
    """(summary row, column drawn, its axis label) of each panel of figure `name` (of
    `PANEL_FIGURES`), in the order of the places their records give them."""
    placed = _placed(name)
    if any(column is None for _, _, column in placed):
        raise ValueError(f"{name}: each of its panels' records says which column it draws")
    return tuple((row, column, axis_label(row, column)) for _, row, column in placed)


_UNKNOWN_FIGURES = sorted(
    {drawn.figure for record in MEASURES for drawn in record.drawn_in}
    - {*FIGURES_OF_ROWS, *PANEL_FIGURES}
)
if _UNKNOWN_FIGURES:
    raise ValueError(f"records draw in figures of neither kind: {_UNKNOWN_FIGURES}")

FIGURES = {
    name: figure_of_rows(
        name,
        figure.title,
        figure.column,
        rows_drawn_in(name),
        figure.ylabel,
        figure.spearman,
        figure.section,
    )
    for name, figure in FIGURES_OF_ROWS.items()
}


def record_figure(record: Measure) -> FigureSpec:
    """The figure a measure's record declares (`record.MeasureFigure`): each of its rows
    against layer, called by its label (its name where the record gives none) where it
    has several."""
    figure = record.figure
    lines = measure_lines(record.rows, record.labels or record.rows)
    return FigureSpec(figure.name, figure.column, figure.title, figure.ylabel, lines)


# The figures the measures' records declare, drawn as the figures above; their caption
# in the report is `RECORD_FIGURE_CAPTION`, as they have no file of their own.
RECORD_FIGURES = {
    record.figure.name: record_figure(record) for record in MEASURES if record.figure is not None
}
if set(RECORD_FIGURES) & set(FIGURES):
    raise ValueError(f"figures named twice: {sorted(set(RECORD_FIGURES) & set(FIGURES))}")
FIGURES.update(RECORD_FIGURES)
RECORD_FIGURE_CAPTION = "measure"


def figure_caption(name: str) -> str:
    """The report's caption file of figure `name`, relative to workflow/rules/: its own,
    or that of every figure a record declares."""
    return f"../report/figures/{RECORD_FIGURE_CAPTION if name in RECORD_FIGURES else name}.rst"


# The degeneration figures of one model and transform (`contextuality.figures.degeneration`).
DEGENERATION_FIGURES = ("norm_by_rank", "knn_by_bin", "cone")

# Intrinsic dimension by layer (the geometry step's layer summaries).
DIMENSION_FIGURE = figure_of_rows(
    "intrinsic_dimension",
    "Intrinsic dimension of the occurrence vectors",
    "raw",
    next(record.rows for record in MEASURES if record.name == "intrinsic_dimension"),
    ylabel="intrinsic dimension",
)

# The figures of the geometry steps, drawn by one job.
GEOMETRY_FIGURES = (
    "intrinsic_dimension",
    "intrinsic_dimension_scales",
    "cka",
    "alignment",
    "best_layers",
    "geometry_transforms",
    "positions",
)

# The figure of each checkpoint sweep (results/figures/sweeps/<sweep>.png).
SWEEP_FIGURE = "sweep"

# The figure of each family of model sizes (results/figures/families/<family>.png).
FAMILY_FIGURE = "family"
