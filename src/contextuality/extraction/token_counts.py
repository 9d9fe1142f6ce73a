"""How often each token id occurs in a corpus's sentences. Read by the model's own
tokenizer as the extraction reads them (running text): the frequencies the rows of a
token embedding matrix are measured against (`measures.embedding_matrix`)."""

from __future__ import annotations

import numpy as np

from contextuality.backends.base import TextEncoder
from contextuality.errors import ModelLoadError


def token_counts(encoder: TextEncoder, sentences: list[str], n_rows: int) -> np.ndarray:
    """How often each token id occurs among the content tokens of `sentences` (special
    tokens left out), as counts (n_rows,) int64 indexed by id; ModelLoadError where an id
    is not below `n_rows`, the rows of the embedding matrix the tokenizer should index."""
    encodings = encoder.encode(sentences)
    content = [np.asarray(encoding.content, dtype=np.int64) for encoding in encodings]
    ids = np.concatenate(content) if content else np.zeros(0, dtype=np.int64)
    if ids.size and ids.max() >= n_rows:
        raise ModelLoadError(
            f"the tokenizer gives token id {ids.max()}, beyond the {n_rows} rows of the "
            "embedding matrix"
        )
    return np.bincount(ids, minlength=n_rows)
