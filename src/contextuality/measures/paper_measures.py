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
from contextuality.measures.record import LayerInputs, SummaryRow
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
