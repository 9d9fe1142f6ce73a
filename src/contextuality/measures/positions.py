"""Where in its sentence a word occurs, and what that does to its vector (beyond the paper).

Decoders park very large norms on the first token of a sequence (the "attention sink"):
such vectors dominate a layer's mean and its cosine baseline. A layer's position profile
gives, per bucket of word positions (0, 1, 2–3, 4–7, …), the number of occurrences, their
mean and median L2 norm and the exact anisotropy baseline among them (the expected cosine
between two of the bucket's occurrences in different sentences, `equations.SentenceSums`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contextuality.measures import equations
from contextuality.measures.rows import row_norms, run_starts

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
