"""Static word vectors on disk: word2vec's text format, which the benchmarks and gensim
read, with a provenance sidecar."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.files.tables import write_text_with_sidecar


def write_word2vec_text(
    path: str | os.PathLike, words: list[str], matrix: np.ndarray, provenance: dict[str, Any]
) -> None:
    """word2vec text format (``n d`` header, then ``word v1 … vd``), its provenance and
    digest in ``<path>.json`` (`tables.write_text_with_sidecar`)."""
    lines = [f"{len(words)} {matrix.shape[1]}\n"]
    for word, row in zip(words, matrix, strict=True):
        lines.append(word + " " + " ".join(f"{value:.6g}" for value in row) + "\n")
    sidecar = Path(f"{path}.json")
    write_text_with_sidecar(path, "".join(lines), {**provenance, "n_words": len(words)}, sidecar)
