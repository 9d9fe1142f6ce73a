"""Every measure of a layer, one `record.Measure` each, in the order they are computed.

The measure step computes the records whose step is ``measure_layer`` (`analysis`), a
streamed layer those marked `streamed` (`contextuality.streaming.measure`); the summary
rows, ``measures.tsv``, the figures' measures and the docs' list of measures are these
records' rows (`tests/test_measures_registry.py` checks each against them). Adding a measure: a
module with its compute function, a record here, a test (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from contextuality.errors import ConfigError
from contextuality.measures import (
    isotropy_scores,
    later_positions,
    outlier_scores,
    paper_measures,
    spectrum_scores,
)
from contextuality.measures.paper_measures import mean_of
from contextuality.measures.record import Measure


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
        name,
        (name,),
        caption,
        family=family,
        interval="bootstrap",
        table=table,
        column=column,
        compute=mean_of(name, table, column, family, word_class),
        **fields,
    )


MEASURES: tuple[Measure, ...] = (
    _mean(
        "selfsim",
        "words",
        "selfsim",
        "cosine",
        "Mean over words of SelfSim (Def. 1), the mean cosine of a word's occurrences in "
        "different sentences, exactly.",
        streamed=True,
    ),
    _mean(
        "selfsim[paper]",
        "words",
        "selfsim_paper",
        "paper_cosine",
        "SelfSim as the paper's code estimated it: every ordered pair of a word's listed "
        "occurrences, repeated sentences included.",
    ),
    _mean(
        "mev",
        "words",
        "mev",
        "mev",
        "Mean over words of MEV (Def. 3), σ₁²/Σσ² of a word's occurrence matrix, uncentered.",
        streamed=True,
    ),
    _mean(
        "mev_centered",
        "words",
        "mev_centered",
        "mev_centered",
        "MEV of each word's column-centered occurrence matrix.",
        streamed=True,
    ),
    _mean(
        "mev[truncated_svd]",
        "words",
        "mev_truncated_svd",
        "truncated_svd",
        "MEV as the paper's code estimated it: scikit-learn's TruncatedSVD variance ratio.",
    ),
    _mean(
        "intrasim",
        "sentences",
        "intrasim",
        "cosine",
        "Mean over sentences of IntraSim (Def. 2), the mean cosine of a sentence's words "
        "with their mean.",
        streamed=True,
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
        )
        for word_class in ("stopword", "content")
    ),
    Measure(
        "anisotropy",
        ("anisotropy",),
        "The anisotropy baseline (§4.1): the exact mean cosine of occurrences in different "
        "sentences.",
        streamed=True,
        compute=paper_measures.anisotropy,
    ),
    Measure(
        "selfsim~frequency",
        ("selfsim~frequency",),
        "Spearman ρ of a word's SelfSim with its count.",
        streamed=True,
        compute=paper_measures.selfsim_frequency,
    ),
    Measure(
        "paper_samples",
        ("intrasim[paper]", "anisotropy[paper]"),
        "The paper's sampled IntraSim (adjusted by its sampled anisotropy) and anisotropy: "
        "1,000 sentences with one word each, on independent samples.",
        family="paper_cosine",
        interval="sample spread",
        compute=paper_measures.paper_samples,
    ),
    Measure(
        "isotropy",
        ("isoscore", "effective_rank", "partition_ratio"),
        "IsoScore, the effective rank of the centered occurrences, and the partition-function "
        "ratio I(W), exactly.",
        compute=isotropy_scores.exact_scores,
    ),
    Measure(
        "isoscore*",
        ("isoscore*",),
        "IsoScore* on seeded samples of occurrences, each covariance shrunk toward the layer's.",
        interval="sample spread",
        compute=isotropy_scores.isoscore_star,
    ),
    Measure(
        "spectrum",
        ("dataset_entropy", "alpha_req"),
        "Matrix entropy (nats) of the sentences' mean occurrence vectors, centered and "
        "normalised (Skean et al. 2025), and α-ReQ, the power-law decay of the covariance "
        "eigenvalues over ranks 6 to 100.",
        compute=spectrum_scores.spectrum,
        optional=True,
    ),
    Measure(
        "sentence_shape",
        ("prompt_entropy", "curvature"),
        "Mean over sentences of the matrix entropy of a sentence's occurrences and of the "
        "curvature of their trajectory (mean angle in radians between consecutive steps).",
        interval="bootstrap",
        compute=spectrum_scores.sentence_shapes,
        optional=True,
    ),
    Measure(
        "rogue_share",
        tuple(f"rogue_share[{k}]" for k in range(1, isotropy_scores.ROGUE_DIMENSIONS + 1)),
        "Share of the exact anisotropy baseline owed to the top k dimensions (named in "
        "`dimensions`).",
        streamed=True,
        compute=isotropy_scores.rogue_shares,
    ),
    Measure(
        "massive_activations",
        ("massive_activations",),
        "Share of occurrences with a massive activation (|a| above 100 and 1,000 times the "
        "layer's median |a|, Sun et al. 2024); the dimensions in `dimensions`, a census in "
        "massive_activations.tsv.",
        compute=outlier_scores.massive,
        optional=True,
    ),
    Measure(
        "position>0",
        ("selfsim[position>0]", "intrasim[position>0]", "anisotropy[position>0]"),
        "SelfSim, IntraSim and the anisotropy baseline over the words past each sentence's first.",
        family="cosine",
        interval="bootstrap",
        compute=later_positions.without_first_words,
        needs_positions=True,
    ),
    Measure(
        "degeneration",
        (
            "occurrence_norm~frequency",
            "norm~frequency",
            "knn_distance~frequency",
            "mean_direction~frequency",
        ),
        "Spearman ρ with word count of a word's mean occurrence norm, its mean vector's norm, "
        "neighbour distance and direction (the degeneration analysis).",
        step="degeneration",
    ),
    Measure(
        "intrinsic_dimension",
        ("intrinsic_dimension[twonn]", "intrinsic_dimension[gride]"),
        "Intrinsic dimension of the sampled occurrences on the plateau of its curve over "
        "scale (named in `scale`), TwoNN and GRIDE.",
        interval="plateau range",
        step="layer_geometry",
    ),
)


# The measures `MeasureSettings.leave_out` may name: the field's instruments beyond the
# paper, which the embedded default run leaves out to keep to its minute.
OPTIONAL = tuple(record.name for record in MEASURES if record.optional)


def check_left_out(leave_out: Iterable[str]) -> None:
    """Refuse (ConfigError) a name in ``measures.leave_out`` that is not an optional measure."""
    unknown = sorted(set(leave_out) - set(OPTIONAL))
    if unknown:
        raise ConfigError(
            f"measures.leave_out: {', '.join(unknown)} cannot be left out; the optional "
            f"measures are {', '.join(OPTIONAL)}"
        )


def left_out_rows(leave_out: Iterable[str]) -> frozenset[str]:
    """The summary rows of the measures named in `leave_out`."""
    names = set(leave_out)
    return frozenset(row for record in MEASURES if record.name in names for row in record.rows)


def row_names(step: str | None = None) -> list[str]:
    """Every summary row of the records (of those of `step` only, when given), in order."""
    return [row for record in MEASURES if step in (None, record.step) for row in record.rows]


def not_streamed() -> list[str]:
    """The summary rows of a stored layer that a streamed layer lacks."""
    return [row for record in MEASURES if not record.streamed for row in record.rows]


def not_streamed_columns() -> list[str]:
    """The per-word columns of a stored layer that a streamed layer lacks."""
    return [record.column for record in MEASURES if record.table == "words" and not record.streamed]


def word_columns() -> dict[str, str]:
    """Per-word column → the baseline family its adjusted value subtracts, in order."""
    return {record.column: record.family for record in MEASURES if record.table == "words"}
