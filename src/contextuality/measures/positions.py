"""Where in its sentence a word occurs, and what that does to its vector (beyond the paper).

Decoders park very large norms on the first token of a sequence (the "attention sink"):
such vectors dominate a layer's mean and its cosine baseline. A layer's position profile
gives, per bucket of word positions (0, 1, 2–3, 4–7, …), the number of occurrences, their
mean and median L2 norm and the exact anisotropy baseline among them (the expected cosine
between two of the bucket's occurrences in different sentences, `equations.SentenceSums`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from contextuality.measures import equations
from contextuality.rows import row_norms, run_starts

# First position of each bucket; the last bucket is open.
POSITION_EDGES = (0, 1, 2, 4, 8, 16, 32)

PROFILE_COLUMNS = ["bucket", "first_position", "n", "mean_norm", "median_norm", "anisotropy"]


def bucket_labels() -> list[str]:
    """The buckets' names: ``0``, ``1``, ``2–3``, …, ``32+``."""
    labels = []
    for low, high in zip(POSITION_EDGES, (*POSITION_EDGES[1:], None), strict=True):
        if high is None:
            labels.append(f"{low}+")
        else:
            labels.append(str(low) if high == low + 1 else f"{low}–{high - 1}")
    return labels


def position_profile(
    vectors: np.ndarray, positions: np.ndarray, sentence_id: np.ndarray
) -> pd.DataFrame:
    """Per position bucket with occurrences (`PROFILE_COLUMNS`): rows (N, d) with a vector,
    sentences contiguous; `positions` and `sentence_id` (N,) of each row."""
    bucket = np.searchsorted(POSITION_EDGES, positions, side="right") - 1
    norms = row_norms(vectors)
    labels = bucket_labels()
    found = []
    for index in np.unique(bucket):
        chosen = np.flatnonzero(bucket == index)  # in row order: sentences stay contiguous
        sums = equations.sentence_sums(vectors[chosen], run_starts(sentence_id[chosen]), True)
        found.append(
            {
                "bucket": labels[index],
                "first_position": POSITION_EDGES[index],
                "n": len(chosen),
                "mean_norm": float(norms[chosen].mean()),
                "median_norm": float(np.median(norms[chosen])),
                "anisotropy": sums.expected_cosine(),
            }
        )
    return pd.DataFrame(found, columns=PROFILE_COLUMNS)


SPECIAL_COLUMNS = ["layer", *PROFILE_COLUMNS, "cosine_share"]


def _unit_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows (N, d) widened to float64 and scaled to unit length (a zero row stays zero),
    and their L2 norms."""
    rows = np.asarray(vectors, dtype=np.float64)
    norms = row_norms(rows)
    return rows / np.where(norms > 0, norms, 1.0)[:, None], norms


def _sums_by_sentence(units: np.ndarray, sentence: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The (len(order), d) sum of the unit rows of each sentence of `order` (sorted ids)."""
    sums = np.zeros((len(order), units.shape[1]))
    np.add.at(sums, np.searchsorted(order, sentence), units)
    return sums


class SpecialTokenProfile:
    """The special tokens' rows of a position profile (`SPECIAL_COLUMNS`), summed batch by
    batch (`add`) from a sample of sentences, each batch holding whole sentences.

    Per layer and kind of token (``[CLS]``, ``[SEP]``, ``<bos>``): their count, mean and
    median L2 norm, their anisotropy (the exact expected cosine between two of them in
    different sentences: (‖Σu‖² − Σ_s‖Σ_{u∈s} u‖²) / (N² − Σ_s n_s²) over unit vectors u)
    and ``cosine_share``, the share of the sum of cosines between rows of different
    sentences, over every row of the sentences (their words and their special tokens),
    that the pairs involving this kind's rows contribute:
    1 − C(rows without the kind) / C(every row), C = ‖Σu‖² − Σ_s‖S_s‖². No n × n matrix is
    formed: only sums of unit vectors per sentence, in float64.
    """

    def __init__(self) -> None:
        self._layers: dict[int, dict[str, Any]] = {}

    def add(
        self,
        layer: int,
        words: np.ndarray,
        word_sentence: np.ndarray,
        special: np.ndarray,
        special_sentence: np.ndarray,
        special_kind: np.ndarray,
        special_position: np.ndarray,
    ) -> None:
        """Add one batch of whole sentences: word rows (n, d) and special-token rows (m, d)
        with their sentence ids, and each special row's kind and position in its input."""
        word_units, _ = _unit_rows(words)
        special_units, special_norms = _unit_rows(special)
        order = np.unique(np.concatenate([word_sentence, special_sentence]))
        sentence_sums = _sums_by_sentence(word_units, word_sentence, order)
        sentence_sums += _sums_by_sentence(special_units, special_sentence, order)
        found = self._layers.setdefault(
            layer, {"total": np.zeros(words.shape[1]), "within": 0.0, "kinds": {}}
        )
        found["total"] += sentence_sums.sum(axis=0)
        found["within"] += float(np.sum(sentence_sums**2))
        kinds = np.asarray(special_kind, dtype=object)
        for kind in sorted(set(kinds.tolist())):
            chosen = kinds == kind
            kind_sums = _sums_by_sentence(special_units[chosen], special_sentence[chosen], order)
            sizes = np.bincount(np.searchsorted(order, special_sentence[chosen]))
            sums = found["kinds"].setdefault(
                kind,
                {
                    "total": np.zeros(words.shape[1]),
                    "within": 0.0,
                    "others_within": 0.0,
                    "same_sentence_pairs": 0.0,
                    "norms": [],
                    "positions": set(),
                },
            )
            sums["total"] += kind_sums.sum(axis=0)
            sums["within"] += float(np.sum(kind_sums**2))
            sums["others_within"] += float(np.sum((sentence_sums - kind_sums) ** 2))
            sums["same_sentence_pairs"] += float(np.sum(sizes.astype(np.float64) ** 2))
            sums["norms"].append(special_norms[chosen])
            sums["positions"].update(np.asarray(special_position)[chosen].tolist())

    def table(self) -> pd.DataFrame:
        """One row per layer and kind of special token (`SPECIAL_COLUMNS`); ``bucket`` is
        the token, ``first_position`` its position in its input where every one of them
        has the same (0 for a leading token), else -1."""
        found = []
        for layer, sums in sorted(self._layers.items()):
            total = sums["total"]
            every_pair = float(total @ total) - sums["within"]
            for kind, kind_sums in sorted(sums["kinds"].items()):
                norms = np.concatenate(kind_sums["norms"])
                pairs = float(len(norms)) ** 2 - kind_sums["same_sentence_pairs"]
                kind_total = kind_sums["total"]
                own = float(kind_total @ kind_total) - kind_sums["within"]
                rest = total - kind_total
                without = float(rest @ rest) - kind_sums["others_within"]
                positions = kind_sums["positions"]
                found.append(
                    {
                        "layer": layer,
                        "bucket": kind,
                        "first_position": next(iter(positions)) if len(positions) == 1 else -1,
                        "n": len(norms),
                        "mean_norm": float(norms.mean()),
                        "median_norm": float(np.median(norms)),
                        "anisotropy": own / pairs if pairs > 0 else float("nan"),
                        "cosine_share": 1 - without / every_pair if every_pair else float("nan"),
                    }
                )
        return pd.DataFrame(found, columns=SPECIAL_COLUMNS).astype(
            {"layer": "int64", "bucket": "object", "first_position": "int64", "n": "int64"}
            | {column: "float64" for column in SPECIAL_COLUMNS[4:]}
        )
