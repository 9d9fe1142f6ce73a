"""The checks at the door of the API's functions, one per kind of argument. Each returns
the argument as the measures read it, or refuses it (`ConfigError`, one line naming the
argument and the value) where the measures would misread it, and warns with a count of
what they will drop. Every public function of `contextuality.api` calls these first."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from contextuality.errors import ConfigError, warn
from contextuality.rows import row_chunks


def shown(value: Any) -> str:
    """`value` as a message quotes it: a numpy scalar as the Python value it holds, cut at
    60 characters."""
    if isinstance(value, np.generic):
        value = value.item()
    return f"{value!r:.60}"


def _rows(count: int, noun: str) -> str:
    return f"{count} such {noun}{'s' if count > 1 else ''}"


def as_matrix(vectors: Any, name: str = "vectors") -> np.ndarray:
    """`vectors` (n, d), a numpy array or a torch tensor on any device, as a numpy float
    array: float16 and float32 kept, float64 kept, any other dtype as float32. Refused
    unless it has rows and columns."""
    if hasattr(vectors, "detach"):  # a torch tensor: no import of torch needed
        vectors = vectors.detach().to("cpu")
        if str(vectors.dtype) == "torch.bfloat16":  # numpy has no bfloat16
            vectors = vectors.float()
        vectors = vectors.numpy()
    matrix = np.asarray(vectors)
    if matrix.ndim != 2:
        raise ConfigError(f"{name}: expected a 2-D array (rows × dimensions), got {matrix.shape}")
    if 0 in matrix.shape:
        raise ConfigError(f"{name}: expected rows of at least one dimension, got {matrix.shape}")
    if matrix.dtype not in (np.float16, np.float32, np.float64):
        try:
            matrix = matrix.astype(np.float32)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: expected numbers, got an array of {matrix.dtype}") from None
    return matrix


def vector_rows(matrix: np.ndarray, name: str = "vectors", *, required: bool = True) -> np.ndarray:
    """Bool mask (n,) of the rows of `matrix` that have a vector (`rows.rows_with_vectors`:
    finite and not all zero). A row all NaN or all zero is a row without a vector, as
    documented; a row with an infinite element or a NaN among numbers (an overflow of
    float16, say) is measured as one too, with a WARNING counting such rows. Refused,
    where `required`, when no row has a vector."""
    has_vector = np.empty(len(matrix), dtype=bool)
    broken = 0
    for chunk in row_chunks(len(matrix), matrix.shape[1]):
        rows = matrix[chunk]
        finite = np.isfinite(rows).all(axis=1)
        has_vector[chunk] = finite & np.any(rows != 0, axis=1)
        broken += int((~finite & ~np.isnan(rows).all(axis=1)).sum())
    if broken:
        warn(
            [
                f"{name}: {broken} of {len(matrix)} rows have an infinite element or a NaN "
                "among numbers (an overflow?), and are measured as rows without a vector"
            ]
        )
    if required and not has_vector.any():
        raise ConfigError(
            f"{name}: none of the {len(matrix)} rows has a vector (each is NaN, infinite or zero)"
        )
    return has_vector


def per_row(values: Any, n_rows: int, name: str) -> np.ndarray:
    """One value per row (a tuple is one value), as a 1-D object array; refused where the
    count is not `n_rows`."""
    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().to("cpu").numpy()
    if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
        raise ConfigError(f"{name}: expected one value per row ({n_rows}), got {shown(values)}")
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ConfigError(
            f"{name}: expected one value per row ({n_rows}), got shape {values.shape}"
        )
    if isinstance(values, np.ndarray):
        values = values.tolist()  # Python's values, not numpy's scalars
    array = np.fromiter(values, dtype=object, count=len(values))
    if len(array) != n_rows:
        raise ConfigError(f"{name}: expected one value per row ({n_rows}), got {len(array)}")
    return array


def _first_missing(array: np.ndarray, name: str, what: str) -> None:
    """Refuse the first None or NaN of `array`, naming its row."""
    missing = np.flatnonzero(pd.isna(array))
    if len(missing):
        row = int(missing[0])
        raise ConfigError(
            f"{name}: row {row} is {shown(array[row])}, not {what} ({_rows(len(missing), 'row')})"
        )


def words_of(values: Sequence[Any], n_rows: int, name: str = "words") -> np.ndarray:
    """Each row's word as a string (a 1-D object array); None or NaN refused by row."""
    array = per_row(values, n_rows, name)
    _first_missing(array, name, "a word")
    return array.astype(str).astype(object)


def labels_of(values: Sequence[Any], n_rows: int, name: str = "sentences") -> np.ndarray:
    """Each row's sentence label, any hashable value (a tuple too), as a 1-D object
    array; None or NaN, and values that cannot be hashed, refused by row."""
    array = per_row(values, n_rows, name)
    _first_missing(array, name, "a sentence label")
    for row, label in enumerate(array):
        try:
            hash(label)
        except TypeError:
            raise ConfigError(
                f"{name}: row {row} is {shown(label)}, which cannot label a sentence "
                f"(a {type(label).__name__} is not hashable)"
            ) from None
    return array


# What pandas infers of an array of numbers only (NaN included, bools not).
_NUMBERS = {"integer", "floating", "mixed-integer-float", "decimal", "empty"}


def positions_of(values: Sequence[Any], n_rows: int, name: str = "positions") -> np.ndarray:
    """Each row's place in its sentence, counted from 0 at its first word, as int64: a
    whole number of at least 0, refused by row otherwise (NaN, negative, fractional)."""
    array = per_row(values, n_rows, name)
    if pd.api.types.infer_dtype(array, skipna=False) not in _NUMBERS:
        for row, value in enumerate(array):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ConfigError(f"{name}: row {row} is {shown(value)}, not a whole number")
    numbers_given = array.astype(np.float64)
    bad = ~np.isfinite(numbers_given) | (numbers_given < 0)
    bad[~bad] = numbers_given[~bad] != np.floor(numbers_given[~bad])
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ConfigError(
            f"{name}: row {row} is {shown(array[row])}, not a whole number of at least 0 "
            "(a word's place in its sentence, 0 for its first word)"
        )
    return numbers_given.astype(np.int64)


def copies_of(sentence_copies: Mapping[Any, Any] | None) -> dict[Any, int]:
    """The times the corpus repeats a sentence, by label: whole numbers of at least 1."""
    if sentence_copies is None:
        return {}
    if not isinstance(sentence_copies, Mapping):
        raise ConfigError(
            "sentence_copies: expected a mapping of sentence label to count, got a "
            f"{type(sentence_copies).__name__}"
        )
    for label, count in sentence_copies.items():
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
            raise ConfigError(
                f"sentence_copies: {shown(count)} for sentence {shown(label)}, not a whole "
                "number of at least 1 (the times the corpus holds it)"
            )
    return {label: int(count) for label, count in sentence_copies.items()}


def layer_number(value: Any, name: str) -> int:
    """A layer's number (0 the embeddings): a whole number of at least 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ConfigError(f"{name}: {shown(value)} is not a layer (a whole number of at least 0)")
    return int(value)


def layer_labels(layer: Any, n_layers: Any) -> tuple[int, int]:
    """`layer` and the model's `n_layers` (its blocks; default `layer`, at least 1) that
    label a layer's rows, checked so that its relative depth, layer / n_layers, is within
    [0, 1]."""
    layer = layer_number(layer, "layer")
    if n_layers is None:
        return layer, max(layer, 1)
    if isinstance(n_layers, bool) or not isinstance(n_layers, numbers.Integral):
        raise ConfigError(f"n_layers: {shown(n_layers)} is not a whole number")
    if n_layers < max(layer, 1):
        raise ConfigError(
            f"n_layers: {n_layers} is below {max(layer, 1)} (at least 1 and at least "
            f"layer = {layer}: the model's blocks, layer 0 its embeddings)"
        )
    return layer, int(n_layers)


def one_sentence_warning(codes: np.ndarray, labels: pd.Index, where: str) -> None:
    """Warn where the rows with a vector (their sentence codes `codes`) lie in one sentence:
    every interval resamples sentences, so each has zero width."""
    present = np.unique(codes)
    if len(present) == 1:
        warn(
            [
                f"{where}: every row measured is in one sentence "
                f"({shown(labels[present[0]])}); the intervals resample sentences, so each has "
                "zero width and says nothing of the spread"
            ]
        )


def texts_of(texts: Sequence[str]) -> list[str]:
    """The texts of a batch: one or more strings."""
    if isinstance(texts, str | bytes) or not hasattr(texts, "__len__"):
        raise ConfigError(f"texts: expected a sequence of strings, got {shown(texts)}")
    texts = list(texts)
    if not texts:
        raise ConfigError("texts: no text given (expected the batch's texts, one per item)")
    for item, text in enumerate(texts):
        if not isinstance(text, str):
            raise ConfigError(f"texts: item {item} is {shown(text)}, not a string")
    return texts


def chosen_layers(layers: Sequence[Any] | None, n_given: int) -> list[int]:
    """The layers to keep of the `n_given` of a model's hidden states (default all)."""
    if layers is None:
        return list(range(n_given))
    if isinstance(layers, str | bytes) or not hasattr(layers, "__iter__"):
        raise ConfigError(f"layers: expected a sequence of layer numbers, got {shown(layers)}")
    chosen = [layer_number(layer, "layers") for layer in layers]
    if not chosen:
        raise ConfigError("layers: no layer given")
    for layer in chosen:
        if layer >= n_given:
            raise ConfigError(
                f"layers: {layer} is not among the {n_given} layers of hidden_states "
                f"(0 to {n_given - 1})"
            )
    return chosen


def batch_array(values: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    """A (batch, tokens, ...) array or tensor as a numpy array, refused unless its shape is
    `shape` (that of hidden_states' batch and tokens, then what `name` holds)."""
    if hasattr(values, "detach"):
        values = values.detach().to("cpu").numpy()
    array = np.asarray(values)
    if array.shape != shape:
        raise ConfigError(
            f"{name}: shape {array.shape}, not the {shape} that hidden_states' "
            "(batch, tokens) asks for"
        )
    if array.dtype.kind not in "iub":
        raise ConfigError(f"{name}: expected whole numbers, got an array of {array.dtype}")
    return array


def offsets_in_texts(spans: np.ndarray, texts: list[str], kept: np.ndarray) -> None:
    """Refuse a token kept (`kept`, (batch, tokens)) whose character span (`spans`,
    (batch, tokens, 2)) is not within its text: its word would silently get no vector."""
    lengths = np.array([len(text) for text in texts])[:, None]
    start, end = spans[..., 0], spans[..., 1]
    outside = kept & ((start < 0) | (end < start) | (end > lengths))
    if outside.any():
        item, token = (int(where[0]) for where in np.nonzero(outside))
        raise ConfigError(
            f"offsets: token {token} of text {item} spans characters "
            f"{tuple(spans[item, token].tolist())}, not within its {len(texts[item])} "
            f"characters ({_rows(int(outside.sum()), 'token')}; offsets are each token's "
            "(start, end) in its text)"
        )
