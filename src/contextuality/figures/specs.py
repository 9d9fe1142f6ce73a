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


@dataclass(frozen=True)
class FigureSpec:
    """What a figure plots: a column of one or more measures of the summary table.
    spearman: the column is a Spearman ρ over the row's n words, whose band is its
    closed-form interval (`measures.ranks.spearman_interval`), not the table's."""

    name: str
    column: str
    title: str
    ylabel: str
    series: tuple[MeasureLine, ...]
    spearman: bool = False


FIGURES = {
    spec.name: spec
    for spec in (
        FigureSpec(
            "fig1_anisotropy",
            "raw",
            "Figure 1. Anisotropy",
            "mean cosine of random words",
            (
                MeasureLine("anisotropy", "-", " exact"),
                MeasureLine("anisotropy[paper]", "--", " paper's estimator"),
            ),
        ),
        FigureSpec(
            "fig2_selfsim",
            "adjusted",
            "Figure 2. Self-similarity",
            axis_label("selfsim", "adjusted"),
            (
                MeasureLine("selfsim", "-", " exact"),
                MeasureLine("selfsim[paper]", "--", " paper's estimator"),
            ),
        ),
        FigureSpec(
            "fig3_intrasim",
            "adjusted",
            "Figure 3. Intra-sentence similarity",
            axis_label("intrasim", "adjusted"),
            (
                MeasureLine("intrasim", "-", " exact"),
                MeasureLine("intrasim[paper]", "--", " paper's estimator"),
            ),
        ),
        FigureSpec(
            "fig4_mev",
            "adjusted",
            "Figure 4. MEV, the paper's estimator",
            "adjusted TruncatedSVD variance ratio",
            (MeasureLine("mev[truncated_svd]"),),
        ),
        FigureSpec(
            "mev_definition3",
            "adjusted",
            "MEV as Definition 3 defines it (σ₁²/Σσ²)",
            axis_label("mev", "adjusted"),
            (
                MeasureLine("mev", "-", " uncentered"),
                MeasureLine("mev_centered", "--", " centered"),
            ),
        ),
        FigureSpec(
            "selfsim_word_classes",
            "adjusted",
            "Self-similarity of stopwords and content words",
            axis_label("selfsim", "adjusted"),
            (
                MeasureLine("selfsim[content]", "-", " content"),
                MeasureLine("selfsim[stopword]", "--", " stopwords"),
            ),
        ),
        FigureSpec(
            "selfsim_frequency",
            "raw",
            "Self-similarity against word frequency",
            axis_label("selfsim~frequency"),
            (MeasureLine("selfsim~frequency"),),
            spearman=True,
        ),
        FigureSpec(
            "matrix_entropy",
            "raw",
            "Matrix entropy of the corpus and within sentences",
            "matrix entropy (nats)",
            (
                MeasureLine("dataset_entropy", "-", " dataset (sentence means)"),
                MeasureLine("prompt_entropy", "--", " within a sentence"),
            ),
        ),
        FigureSpec(
            "alpha_req",
            "raw",
            "Decay of the eigenspectrum (α-ReQ)",
            "α, ranks 6 to 100",
            (MeasureLine("alpha_req"),),
        ),
        FigureSpec(
            "massive_activations",
            "raw",
            "Massive activations",
            "share of occurrences with one",
            (MeasureLine("massive_activations"),),
        ),
        FigureSpec(
            "curvature",
            "raw",
            "Curvature of each sentence's trajectory",
            "mean angle between steps (rad)",
            (MeasureLine("curvature"),),
        ),
    )
}


def record_figure(record: Measure) -> FigureSpec:
    """The figure a measure's record declares (`record.MeasureFigure`): each of its rows
    against layer, named by the row where it has several."""
    figure = record.figure
    several = len(record.rows) > 1
    lines = tuple(MeasureLine(row, "-", f" {row}" if several else "") for row in record.rows)
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
DIMENSION_FIGURE = FigureSpec(
    "intrinsic_dimension",
    "raw",
    "Intrinsic dimension of the occurrence vectors",
    "intrinsic dimension",
    (
        MeasureLine("intrinsic_dimension[twonn]", "-", " TwoNN"),
        MeasureLine("intrinsic_dimension[gride]", "--", " GRIDE"),
    ),
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
