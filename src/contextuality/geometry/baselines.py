"""Representations that know only which word an occurrence is (and where it stands). The
baselines an alignment value needs beside its null: a layer that agrees with one of them as
much as with another model says no more than that both tell words apart.

``word_identity``: the one-hot vector of the occurrence's word type; ``word_position``:
that beside the one-hot vector of its position in the sentence (each part of norm 1). Both
are sparse 0/1 rows (`linear_cka.CrossProducts` multiplies them as such), aligned with a
model's layers by the same measures on the same sampled rows."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from contextuality.geometry.alignment import BASELINE_NAMES, SampledLayers

# The baselines, by the name their rows carry in the alignment table's model_b, and the
# short label the figures give them.
BASELINES = dict(zip(BASELINE_NAMES, ("word", "word+pos"), strict=True))


def _one_hot(codes: np.ndarray) -> sparse.csr_matrix:
    """A (rows × distinct codes) 0/1 matrix: row i has its 1 in the column of codes[i]."""
    _, columns = np.unique(codes, return_inverse=True)
    ones = np.ones(len(codes), dtype=np.float32)
    return sparse.csr_matrix((ones, (np.arange(len(codes)), columns)))


def word_baselines(
    words: np.ndarray, positions: np.ndarray, names: tuple[str, ...] = tuple(BASELINES)
) -> dict[str, SampledLayers]:
    """The baselines called `names` of the sampled rows, the word id (`words`) and position
    in the sentence (`positions`) of each, as one-layer models (layer 0)."""
    unknown = sorted(set(names) - set(BASELINES))
    if unknown:
        raise ValueError(f"no baseline called {', '.join(unknown)}; there are {list(BASELINES)}")
    word = _one_hot(words)
    layers = {
        "word_identity": word,
        "word_position": sparse.hstack([word, _one_hot(positions)], format="csr"),
    }
    return {name: SampledLayers({0: layers[name]}, {}) for name in names}


def without_baselines(table):
    """The rows of an alignment table between models' layers, the baselines' left out."""
    return table[~table["model_b"].isin(BASELINES)]
