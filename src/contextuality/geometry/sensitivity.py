"""How mutual k-NN between two models' layers, and the best-matching layer it picks, move
with k, with the sample of occurrences and with its seed (config ``alignment_sensitivity``).

The geometry stage aligns two models on one sample of rows at one k; a map of which layer
matches which is a finding only where it survives another sample and another scale of
neighbourhood. Here every layer of one model is aligned with every layer of the other for
each sample size (at the geometry's seed), each seed (at its sample size) and each k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.configuration.random_streams import generator
from contextuality.geometry.neighbours import Neighbours, cosine_neighbours, mutual_knn
from contextuality.rows import rows_with_vectors

# One row of the sensitivity table, after the two models' names.
SENSITIVITY_COLUMNS = [
    "reference",
    "sample_size",
    "seed",
    "k",
    "n_rows",
    "layer_a",
    "layer_b",
    "mutual_knn",
    "null_mutual_knn",
]
# What sets one alignment apart from another of the same two models.
SETTING = ["sample_size", "seed", "k"]


@dataclass(frozen=True)
class SensitivitySettings:
    """The sample sizes (each drawn with the reference seed), the seeds (each at the
    reference sample size) and the k every pair of layers is aligned at (config
    ``alignment_sensitivity``); the reference is the geometry stage's own setting
    (``geometry.sample_size``, None for every row; ``measures.seed``;
    ``geometry.alignment.k``)."""

    sample_sizes: tuple[int, ...]
    seeds: tuple[int, ...]
    k: tuple[int, ...]
    reference: tuple[int | None, int, int]

    @classmethod
    def from_config(cls, settings: Mapping[str, Any]) -> SensitivitySettings:
        """What a job is given (`workflow.sensitivity_settings`): config
        ``alignment_sensitivity`` with the reference (sample size, seed, k)."""
        size, seed, k = settings["reference"]
        return cls(
            tuple(settings["sample_sizes"]),
            tuple(settings["seeds"]),
            tuple(settings["k"]),
            (size, seed, k),
        )

    def samples(self, n_rows: int) -> list[tuple[int, int]]:
        """Each (sample size, seed) to draw from `n_rows` occurrences, the reference's
        first, a size beyond them drawn as all of them, none twice."""
        size, seed, _ = self.reference
        wanted = [(size, seed), *((other, seed) for other in self.sample_sizes)]
        wanted += [(size, other) for other in self.seeds]
        return list(dict.fromkeys((_drawn(size, n_rows), seed) for size, seed in wanted))

    def ks(self) -> tuple[int, ...]:
        """Every k aligned at, the reference's among them, in increasing order."""
        return tuple(sorted({*self.k, self.reference[2]}))

    def is_reference(self, size: int, seed: int, k: int, n_rows: int) -> bool:
        """Whether a setting is the geometry stage's own."""
        reference = (_drawn(self.reference[0], n_rows), *self.reference[1:])
        return (size, seed, k) == reference


def _drawn(size: int | None, n_rows: int) -> int:
    """How many rows a sample of `size` holds (None, or more than there are: all)."""
    return n_rows if size is None else min(size, n_rows)


def _first(neighbours: Neighbours, k: int) -> Neighbours:
    """The k nearest of a search made for more (the search sorts them by cosine)."""
    return Neighbours(neighbours.indices[:, :k], neighbours.cosines[:, :k])


def mutual_knn_grid(
    left: Mapping[int, np.ndarray],
    right: Mapping[int, np.ndarray],
    ks: Sequence[int],
    seed: int,
    device: str = "cpu",
) -> pd.DataFrame:
    """Mutual k-NN between every layer of `left` and every layer of `right` (arrays of the
    same occurrences, rows × dimensions) for each k of `ks`, with its null (the rows of
    `right` paired at random, stream ``alignment_null`` of `seed`, as the geometry stage
    draws it), on the rows with a vector in every layer of both: each layer's neighbours
    searched once, at the largest k (columns `SENSITIVITY_COLUMNS` but the setting's)."""
    keep = np.logical_and.reduce(
        [rows_with_vectors(vectors) for side in (left, right) for vectors in side.values()]
    )
    kept = np.flatnonzero(keep)
    searched = [
        {
            layer: cosine_neighbours(vectors[kept], max(ks), device)
            for layer, vectors in side.items()
        }
        for side in (left, right)
    ]
    pairing = generator(seed, "alignment_null").permutation(len(kept))
    records = []
    for k in ks:
        for layer_a, found_a in searched[0].items():
            one = _first(found_a, k)
            for layer_b, found_b in searched[1].items():
                two = _first(found_b, k)
                records.append(
                    {
                        "k": k,
                        "n_rows": len(kept),
                        "layer_a": layer_a,
                        "layer_b": layer_b,
                        "mutual_knn": mutual_knn(one, two),
                        "null_mutual_knn": mutual_knn(one, two.paired(pairing)),
                    }
                )
    return pd.DataFrame.from_records(records)


def _reference(table: pd.DataFrame) -> tuple[int, int, int]:
    """The setting of the rows marked ``reference`` (the geometry stage's own)."""
    settings = table.loc[table["reference"], SETTING].drop_duplicates()
    if len(settings) != 1:
        raise ValueError(f"the table marks {len(settings)} settings as the reference, not 1")
    size, seed, k = settings.iloc[0]
    return int(size), int(seed), int(k)


def best_matches(table: pd.DataFrame) -> pd.DataFrame:
    """For each pair of models, setting and layer of the first, the layer of the second
    with the largest mutual k-NN (``best_layer``), its margin over the second largest, and
    whether it is the reference setting's match (``as_reference``). `table` holds
    ``model_a``, ``model_b``, `SENSITIVITY_COLUMNS` and ``reference`` (the rows of the
    setting the geometry stage aligns at)."""
    keys = ["model_a", "model_b", *SETTING, "layer_a"]
    ranked = table.sort_values([*keys, "mutual_knn"], ascending=[True] * len(keys) + [False])
    grouped = ranked.groupby(keys, sort=False)
    best = grouped.head(1).set_index(keys)
    second = grouped.nth(1).set_index(keys)["mutual_knn"]
    best = best.assign(margin=best["mutual_knn"] - second.reindex(best.index))
    best = best.rename(columns={"layer_b": "best_layer"})[["best_layer", "mutual_knn", "margin"]]
    best = best.reset_index()
    size, seed, k = _reference(table)
    chosen = best[(best["sample_size"] == size) & (best["seed"] == seed) & (best["k"] == k)]
    matched = chosen.set_index(["model_a", "model_b", "layer_a"])["best_layer"]
    at = pd.MultiIndex.from_frame(best[["model_a", "model_b", "layer_a"]])
    return best.assign(as_reference=best["best_layer"].to_numpy() == matched.reindex(at).to_numpy())


def seed_spread(table: pd.DataFrame) -> pd.DataFrame:
    """Each pair of layers' mutual k-NN over the seeds at the reference sample size and k:
    its mean, its standard deviation and the number of seeds (the spread a best match's
    margin is read against)."""
    size, _, k = _reference(table)
    chosen = table[(table["sample_size"] == size) & (table["k"] == k)]
    keys = ["model_a", "model_b", "layer_a", "layer_b"]
    spread = chosen.groupby(keys)["mutual_knn"].agg(mean="mean", std="std", seeds="count")
    return spread.reset_index()
