"""The measures past each sentence's first word (``[position>0]``, beyond the paper).

Decoders put vectors of huge norm on a sequence's first token, which dominate a layer's
mean and its cosine baseline: SelfSim and IntraSim (each adjusted) and the exact
anisotropy baseline, over the occurrences past each sentence's first word.
"""

from __future__ import annotations

from contextuality.measures import equations
from contextuality.measures.occurrences import sentence_table, word_table
from contextuality.measures.record import LayerInputs, Measure, SummaryRow
from contextuality.measures.summary import Baseline, mean_summary
from contextuality.rows import run_starts


def measures_past_first_word(layer: LayerInputs) -> dict[str, SummaryRow]:
    """``selfsim[position>0]``, ``intrasim[position>0]`` and ``anisotropy[position>0]``.
    With ``layer.overwrite`` the first words' rows are dropped in place."""
    later = layer.rows.kept(layer.rows.position > 0, layer.overwrite)
    starts = run_starts(later.sentence_id)
    intrasim, sums = equations.sentence_statistics(later.vectors, starts)
    baseline = Baseline(sums.expected_cosine())
    sentences = sentence_table(later, starts, intrasim, baseline.value)
    words = word_table(later, layer.vocab, first_components=False)
    resamples, level = layer.settings.bootstrap_resamples, layer.settings.confidence
    means = {"selfsim[position>0]": words["selfsim"], "intrasim[position>0]": sentences["intrasim"]}
    rows = {
        row: mean_summary(values, baseline, resamples, level, layer.generator(row))
        for row, values in means.items()
    }
    rows["anisotropy[position>0]"] = {"raw": baseline.value, "n": len(later.vectors)}
    return rows


# Where these records come in the catalogue (`contextuality.catalogue.discovery`).
ORDER = 7

MEASURES: tuple[Measure, ...] = (
    Measure(
        name="position>0",
        rows=("selfsim[position>0]", "intrasim[position>0]", "anisotropy[position>0]"),
        caption=(
            "SelfSim, IntraSim and the anisotropy baseline over the words past each "
            "sentence's first."
        ),
        family="cosine",
        interval="bootstrap",
        compute=measures_past_first_word,
        needs_positions=True,
        labels=tuple(
            f"{measure} past the first word" for measure in ("SelfSim", "IntraSim", "anisotropy")
        ),
    ),
)
