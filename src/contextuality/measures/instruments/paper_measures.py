"""The paper's measures as summary rows (Ethayarajh 2019, §3.2 and §4.1), exact and as its
published numbers estimated them.

- means over words or sentences (SelfSim, MEV, IntraSim, and SelfSim of stopwords and of
  content words), each adjusted by its family's baseline, with a percentile-bootstrap
  interval drawn from the row's own stream;
- the exact anisotropy baseline, and the Spearman ρ of SelfSim with word frequency;
- the paper's sampled statistics (``anisotropy[paper]``, ``intrasim[paper]``): the mean of
  their estimates on independent samples of sentences, their spread as interval.
"""

from __future__ import annotations

from collections.abc import Callable

from contextuality.measures.ranks import spearman_correlation
from contextuality.measures.record import FigureRows, LayerInputs, Measure, SummaryRow
from contextuality.measures.summary import mean_summary, sampled_summary


def mean_of(
    row: str, table: str, column: str, family: str, word_class: str | None = None
) -> Callable[[LayerInputs], dict[str, SummaryRow]]:
    """The compute function of a mean: of `column` of the ``words`` or ``sentences``
    table (only the words of `word_class` when given), less the `family` baseline."""

    def compute(layer: LayerInputs) -> dict[str, SummaryRow]:
        values = getattr(layer, table)
        chosen = (
            values[column]
            if word_class is None
            else values.loc[values["word_class"] == word_class, column]
        )
        settings = layer.settings
        return {
            row: mean_summary(
                chosen,
                layer.baselines[family],
                settings.bootstrap_resamples,
                settings.confidence,
                layer.generator(row),
            )
        }

    return compute


def anisotropy(layer: LayerInputs) -> dict[str, SummaryRow]:
    """The exact anisotropy baseline: the mean cosine of occurrences in different
    sentences, over every such pair."""
    return {"anisotropy": {"raw": layer.baselines["cosine"].value, "n": layer.n_valid}}


def selfsim_frequency(layer: LayerInputs) -> dict[str, SummaryRow]:
    """Spearman ρ of each word's SelfSim with its count (none with fewer than 3 words)."""
    selfsim = layer.words["selfsim"]
    n = int(selfsim.notna().sum())
    if n < 3:
        return {}
    return {
        "selfsim~frequency": {"raw": spearman_correlation(selfsim, layer.words["count"]), "n": n}
    }


def paper_samples(layer: LayerInputs) -> dict[str, SummaryRow]:
    """The paper's sampled IntraSim, adjusted by its sampled anisotropy on the same
    samples, and that anisotropy (estimates: ``layer.paper``'s columns 1 and 0)."""
    paper, size, level = layer.paper, layer.paper_sample_size, layer.settings.confidence
    return {
        "intrasim[paper]": sampled_summary(paper[:, 1], size, level, paper[:, 0]),
        "anisotropy[paper]": sampled_summary(paper[:, 0], size, level),
    }


def _mean(
    name: str,
    table: str,
    column: str,
    family: str,
    caption: str,
    word_class: str | None = None,
    **fields,
) -> Measure:
    """A mean of one column of the per-word (``words``) or per-sentence (``sentences``)
    table, of the words of `word_class` only when given, adjusted by `family`'s baseline,
    with a bootstrap interval."""
    return Measure(
        name=name,
        rows=(name,),
        caption=caption,
        family=family,
        interval="bootstrap",
        table=table,
        column=column,
        compute=mean_of(name, table, column, family, word_class),
        **fields,
    )


# Where these records come in the catalogue (`contextuality.catalogue.discovery`): first.
ORDER = 1

MEASURES: tuple[Measure, ...] = (
    _mean(
        "selfsim",
        "words",
        "selfsim",
        "cosine",
        "Mean over words of SelfSim (Def. 1), the mean cosine of a word's occurrences in "
        "different sentences, exactly.",
        streamed=True,
        labels=("SelfSim",),
        drawn_in=(
            FigureRows("fig2_selfsim"),
            FigureRows("transforms", column="adjusted"),
            FigureRows("ablation", column="adjusted", place=1),
            FigureRows("series", column="adjusted", place=1),
        ),
    ),
    _mean(
        "selfsim[paper]",
        "words",
        "selfsim_paper",
        "paper_cosine",
        "SelfSim as the paper's code estimated it: every ordered pair of a word's listed "
        "occurrences, repeated sentences included.",
        labels=("SelfSim, the paper's estimator",),
        drawn_in=(FigureRows("fig2_selfsim", place=1),),
    ),
    _mean(
        "mev",
        "words",
        "mev",
        "mev",
        "Mean over words of MEV (Def. 3), σ₁²/Σσ² of a word's occurrence matrix, uncentered.",
        streamed=True,
        labels=("MEV",),
        drawn_in=(
            FigureRows("mev_definition3"),
            FigureRows("series", column="adjusted", place=3),
        ),
    ),
    _mean(
        "mev_centered",
        "words",
        "mev_centered",
        "mev_centered",
        "MEV of each word's column-centered occurrence matrix.",
        streamed=True,
        labels=("centered MEV",),
        drawn_in=(FigureRows("mev_definition3", place=1),),
    ),
    _mean(
        "mev[truncated_svd]",
        "words",
        "mev_truncated_svd",
        "truncated_svd",
        "MEV as the paper's code estimated it: scikit-learn's TruncatedSVD variance ratio.",
        labels=("TruncatedSVD variance ratio",),
        drawn_in=(FigureRows("fig4_mev"),),
    ),
    _mean(
        "intrasim",
        "sentences",
        "intrasim",
        "cosine",
        "Mean over sentences of IntraSim (Def. 2), the mean cosine of a sentence's words "
        "with their mean.",
        streamed=True,
        labels=("IntraSim",),
        drawn_in=(
            FigureRows("fig3_intrasim"),
            FigureRows("series", column="adjusted", place=2),
        ),
    ),
    *(
        _mean(
            f"selfsim[{word_class}]",
            "words",
            "selfsim",
            "cosine",
            f"Mean SelfSim of the indexed {word_class} words (scikit-learn's English "
            "stopword list).",
            word_class=word_class,
            streamed=True,
            labels=(f"SelfSim of {word_class} words",),
            drawn_in=(FigureRows("selfsim_word_classes", place=place),),
        )
        for word_class, place in (("stopword", 1), ("content", 0))
    ),
    Measure(
        name="anisotropy",
        rows=("anisotropy",),
        caption=(
            "The anisotropy baseline (§4.1): the exact mean cosine of occurrences in different "
            "sentences."
        ),
        streamed=True,
        compute=anisotropy,
        labels=("anisotropy (mean cosine)",),
        drawn_in=(
            FigureRows("fig1_anisotropy"),
            FigureRows("transforms", column="raw", place=1),
            FigureRows("ablation", column="raw"),
            FigureRows("series", column="raw"),
        ),
    ),
    Measure(
        name="selfsim~frequency",
        rows=("selfsim~frequency",),
        caption="Spearman ρ of a word's SelfSim with its count.",
        streamed=True,
        compute=selfsim_frequency,
        labels=("Spearman ρ(SelfSim, count)",),
        drawn_in=(FigureRows("selfsim_frequency"),),
    ),
    Measure(
        name="paper_samples",
        rows=("intrasim[paper]", "anisotropy[paper]"),
        caption=(
            "The paper's sampled IntraSim (adjusted by its sampled anisotropy) and anisotropy: "
            "measures.baseline_sample_size sentences (the paper's 1,000) with one word each, on "
            "independent samples."
        ),
        family="paper_cosine",
        interval="sample spread",
        compute=paper_samples,
        labels=("IntraSim, the paper's estimator", "anisotropy, the paper's estimator"),
        drawn_in=(
            FigureRows("fig3_intrasim", ("intrasim[paper]",), place=1),
            FigureRows("fig1_anisotropy", ("anisotropy[paper]",), place=1),
        ),
    ),
)
