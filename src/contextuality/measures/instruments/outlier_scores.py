"""A layer's massive activations as a summary row and a census (beyond the paper;
definitions in `contextuality.measures.outliers`).

Row ``massive_activations``: the share of occurrences with at least one, the dimensions
that hold them (most first, in ``dimensions``), and a census by dimension (``census``,
gathered into ``results/tables/massive_activations.tsv``): how many, on how many
occurrences, the share of those that are their sentence's first word, the largest
magnitude and the words that carry them most often.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from contextuality.measures import outliers
from contextuality.measures.record import FigureRows, LayerInputs, Measure, SummaryRow
from contextuality.measures.summary import CENSUS_LAYER_COLUMNS, Census

# Words named per dimension in the census.
CENSUS_WORDS = 3

# The census of massive activations (results/tables/massive_activations.tsv): a row per
# layer and dimension, the layer's median |a| and threshold beside each.
MASSIVE_ACTIVATIONS_CENSUS = Census(
    name="massive_activations",
    row="massive_activations",
    columns=(
        *CENSUS_LAYER_COLUMNS,
        "dimension",
        "n_activations",
        "n_occurrences",
        "share_first_word",
        "max_abs",
        "mean",
        "top_words",
        "median_abs",
        "threshold",
    ),
    key="dimension",
    totals=("median_abs", "threshold"),
    caption=(
        "The massive activations of every stored layer (Sun et al. 2024): activations of an "
        "occurrence vector whose magnitude is above both 100 and 1,000 times the layer's median "
        "magnitude (``median_abs``, over every element of the layer's occurrence vectors; "
        "``threshold`` the larger of the two). One row per (model, transform, layer, dimension) "
        "that has any: ``n_activations`` (how many), ``n_occurrences`` (on how many "
        "occurrences), ``share_first_word`` (the share of those that are their sentence's first "
        "word), ``max_abs`` and ``mean`` (their largest magnitude and mean signed value) and "
        "``top_words`` (the words that carry them most often). A layer with none has no row; "
        "the share of a layer's occurrences with one is the ``massive_activations`` row of "
        "measures.tsv."
    ),
)


def _census(found: outliers.MassiveActivations, layer: LayerInputs) -> list[dict[str, Any]]:
    """One entry per dimension with a massive activation, most activations first."""
    words = layer.vocab.set_index("word_id")["word"] if layer.vocab is not None else None
    entries = []
    for dimension in np.unique(found.dimensions):
        chosen = found.dimensions == dimension
        rows = found.rows[chosen]
        first = layer.rows.position[rows] == 0
        carriers = Counter(layer.rows.word_id[rows].tolist()).most_common(CENSUS_WORDS)
        entries.append(
            {
                "dimension": int(dimension),
                "n_activations": int(chosen.sum()),
                "n_occurrences": len(np.unique(rows)),
                "share_first_word": float(first.mean()),
                "max_abs": float(np.abs(found.values[chosen]).max()),
                "mean": float(found.values[chosen].mean()),
                "top_words": " ".join(
                    str(words[word_id]) if words is not None else str(word_id)
                    for word_id, _ in carriers
                ),
            }
        )
    return sorted(entries, key=lambda entry: (-entry["n_activations"], entry["dimension"]))


def massive(layer: LayerInputs) -> dict[str, SummaryRow]:
    """``massive_activations``: the share of the layer's occurrences with one, and their
    census."""
    found = outliers.massive_activations(layer.rows.vectors)
    census = _census(found, layer)
    n = layer.n_valid
    return {
        "massive_activations": {
            "raw": len(np.unique(found.rows)) / n if n else float("nan"),
            "n": n,
            "dimensions": ",".join(str(entry["dimension"]) for entry in census),
            "median_abs": found.median,
            "threshold": found.threshold,
            "census": census,
        }
    }


# Where these records come in the catalogue (`contextuality.catalogue.discovery`).
ORDER = 5

MEASURES: tuple[Measure, ...] = (
    Measure(
        name="massive_activations",
        rows=("massive_activations",),
        caption=(
            "Share of occurrences with a massive activation (a magnitude above 100 and 1,000 "
            "times the layer's median magnitude, Sun et al. 2024); the dimensions in "
            "`dimensions`, a census in massive_activations.tsv."
        ),
        compute=massive,
        optional=True,
        census=MASSIVE_ACTIVATIONS_CENSUS,
        labels=("share of occurrences with a massive activation",),
        drawn_in=(FigureRows("massive_activations"),),
    ),
)
