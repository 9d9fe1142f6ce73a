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


FIGURES = {
    spec.name: spec
    for spec in (
        figure_of_rows(
            "fig1_anisotropy",
            "Figure 1. Anisotropy",
            "raw",
            ("anisotropy", "anisotropy[paper]"),
            section=PAPERS_FIGURES,
        ),
        figure_of_rows(
            "fig2_selfsim",
            "Figure 2. Self-similarity",
            "adjusted",
            ("selfsim", "selfsim[paper]"),
            section=PAPERS_FIGURES,
        ),
        figure_of_rows(
            "fig3_intrasim",
            "Figure 3. Intra-sentence similarity",
            "adjusted",
            ("intrasim", "intrasim[paper]"),
            section=PAPERS_FIGURES,
        ),
        figure_of_rows(
            "fig4_mev",
            "Figure 4. MEV, the paper's estimator",
            "adjusted",
            ("mev[truncated_svd]",),
            section=PAPERS_FIGURES,
        ),
        figure_of_rows(
            "mev_definition3",
            "MEV as Definition 3 defines it (σ₁²/Σσ²)",
            "adjusted",
            ("mev", "mev_centered"),
            section=PAPERS_FIGURES,
        ),
        figure_of_rows(
            "selfsim_word_classes",
            "Self-similarity of stopwords and content words",
            "adjusted",
            ("selfsim[content]", "selfsim[stopword]"),
            ylabel=axis_label("selfsim", "adjusted"),
            section=WORDS,
        ),
        figure_of_rows(
            "selfsim_frequency",
            "Self-similarity against word frequency",
            "raw",
            ("selfsim~frequency",),
            spearman=True,
            section=WORDS,
        ),
        figure_of_rows(
            "matrix_entropy",
            "Matrix entropy of the corpus and within sentences",
            "raw",
            ("dataset_entropy", "prompt_entropy"),
            ylabel="matrix entropy (nats)",
            section=SPECTRA,
        ),
        figure_of_rows(
            "alpha_req",
            "Decay of the eigenspectrum (α-ReQ)",
            "raw",
            ("alpha_req",),
            section=SPECTRA,
        ),
        figure_of_rows(
            "massive_activations",
            "Massive activations",
            "raw",
            ("massive_activations",),
            section=MASSIVE_ACTIVATIONS,
        ),
        figure_of_rows(
            "curvature",
            "Curvature of each sentence's trajectory",
            "raw",
            ("curvature",),
            section=SPECTRA,
        ),
    )
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

# The figure of each ablated model (results/figures/ablation/<model>.png).
ABLATION_FIGURE = "ablation"
