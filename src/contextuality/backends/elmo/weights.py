"""ELMo's published files: the options JSON, the weights HDF5 and the character ids.

A release is two files: the options JSON (the architecture) and the weights HDF5, with
the datasets bilm-tf wrote: ``char_embed``; ``CNN/W_cnn_<i>``, ``CNN/b_cnn_<i>``;
``CNN_high_<k>/W_carry``, ``b_carry``, ``W_transform``, ``b_transform``;
``CNN_proj/W_proj``, ``b_proj``; and for direction d (0 forward, 1 backward) and LSTM layer
l, ``RNN_<d>/RNN/MultiRNNCell/Cell<l>/LSTMCell/W_0``, ``B`` and ``W_P_0``.

ELMo reads each word as its UTF-8 bytes between begin- and end-of-word markers, and each
sentence between begin- and end-of-sentence tokens (`WordCharacters`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.backends.base import RunningTextEncoding, Span
from contextuality.errors import ModelLoadError

# bilm-tf's reserved character ids (bytes are 0-255); every id is shifted by one when
# embedded, so that 0 marks a padding token.
BEGIN_SENTENCE, END_SENTENCE, BEGIN_WORD, END_WORD, PADDING = 256, 257, 258, 259, 260
CHARACTER_VOCABULARY = PADDING + 1


@dataclass(frozen=True)
class ElmoOptions:
    """The architecture an options JSON describes.

    filters: (width, number) of each character convolution; projection_dim: p, the token
    representation's and each LSTM direction's output width; cell_dim: the LSTM cell size;
    cell_clip, proj_clip: None where the options set none.
    """

    filters: tuple[tuple[int, int], ...]
    n_highway: int
    character_dim: int
    activation: str
    max_characters: int
    projection_dim: int
    cell_dim: int
    n_layers: int
    cell_clip: float | None
    proj_clip: float | None
    skip_connections: bool

    @property
    def n_filters(self) -> int:
        return sum(number for _, number in self.filters)

    @classmethod
    def read(cls, path: str | Path) -> ElmoOptions:
        """Parse an options JSON; a missing key or an unknown activation is a ModelLoadError."""
        try:
            options = json.loads(Path(path).read_text())
            cnn, lstm = options["char_cnn"], options["lstm"]
            parsed = cls(
                filters=tuple((int(width), int(number)) for width, number in cnn["filters"]),
                n_highway=int(cnn["n_highway"]),
                character_dim=int(cnn["embedding"]["dim"]),
                activation=str(cnn["activation"]),
                max_characters=int(cnn.get("max_characters_per_token", 50)),
                projection_dim=int(lstm["projection_dim"]),
                cell_dim=int(lstm["dim"]),
                n_layers=int(lstm["n_layers"]),
                cell_clip=_clip(lstm.get("cell_clip")),
                proj_clip=_clip(lstm.get("proj_clip")),
                skip_connections=bool(lstm.get("use_skip_connections", False)),
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ModelLoadError(f"{path}: not an ELMo options file ({error!r})") from error
        if parsed.activation not in ("relu", "tanh"):
            raise ModelLoadError(f"{path}: unknown char_cnn activation {parsed.activation!r}")
        if parsed.max_characters < 3:
            raise ModelLoadError(f"{path}: max_characters_per_token must be at least 3")
        return parsed

    def layout(self) -> dict[str, tuple[int, ...]]:
        """Every dataset of the weights file and its shape (``char_embed``'s first dimension,
        the number of characters, is checked separately)."""
        p, c, n = self.projection_dim, self.cell_dim, self.n_filters
        shapes: dict[str, tuple[int, ...]] = {}
        for index, (width, number) in enumerate(self.filters):
            shapes[f"CNN/W_cnn_{index}"] = (1, width, self.character_dim, number)
            shapes[f"CNN/b_cnn_{index}"] = (number,)
        for k in range(self.n_highway):
            for part in ("carry", "transform"):
                shapes[f"CNN_high_{k}/W_{part}"] = (n, n)
                shapes[f"CNN_high_{k}/b_{part}"] = (n,)
        shapes["CNN_proj/W_proj"] = (n, p)
        shapes["CNN_proj/b_proj"] = (p,)
        for direction in range(2):
            for layer in range(self.n_layers):
                cell = lstm_cell_group(direction, layer)
                shapes[f"{cell}/W_0"] = (p + p, 4 * c)
                shapes[f"{cell}/B"] = (4 * c,)
                shapes[f"{cell}/W_P_0"] = (c, p)
        return shapes


def _clip(value: Any) -> float | None:
    return None if value is None else float(value)


def lstm_cell_group(direction: int, layer: int) -> str:
    """The HDF5 group of one LSTM cell: direction 0 forward, 1 backward."""
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def read_weights(path: str | Path, options: ElmoOptions) -> dict[str, np.ndarray]:
    """Every dataset of `options`' layout from the weights HDF5, as float32 arrays.

    A missing dataset or one of another shape is a ModelLoadError naming it.
    """
    import h5py

    arrays = {}
    try:
        with h5py.File(path, "r") as weights:
            embedding_shape = _dataset(weights, "char_embed", path).shape
            if len(embedding_shape) != 2 or embedding_shape[0] < CHARACTER_VOCABULARY:
                raise ModelLoadError(
                    f"{path}: char_embed has shape {embedding_shape}, expected "
                    f"(>= {CHARACTER_VOCABULARY}, {options.character_dim})"
                )
            layout = {"char_embed": (embedding_shape[0], options.character_dim)}
            layout.update(options.layout())
            for name, shape in layout.items():
                dataset = _dataset(weights, name, path)
                if dataset.shape != shape:
                    raise ModelLoadError(
                        f"{path}: {name} has shape {dataset.shape}, the options ask for {shape}"
                    )
                arrays[name] = np.asarray(dataset[...], dtype=np.float32)
    except OSError as error:
        raise ModelLoadError(f"{path}: not a readable HDF5 file ({error})") from error
    return arrays


def _dataset(weights: Any, name: str, path: str | Path) -> Any:
    if name not in weights:
        raise ModelLoadError(f"{path}: no dataset {name}; not ELMo weights for these options")
    return weights[name]


def word_character_ids(word: str, max_characters: int = 50) -> np.ndarray:
    """The (max_characters,) character ids of a word, shifted by one as embedded: begin-of-
    word, the word's UTF-8 bytes (cut to max_characters - 2), end-of-word, then padding."""
    encoded = word.encode("utf-8", "ignore")[: max_characters - 2]
    ids = np.full(max_characters, PADDING, dtype=np.uint16)
    ids[0] = BEGIN_WORD
    ids[1 : len(encoded) + 1] = np.frombuffer(encoded, dtype=np.uint8)
    ids[len(encoded) + 1] = END_WORD
    return ids + 1


def boundary_character_ids(character: int, max_characters: int = 50) -> np.ndarray:
    """Character ids of the begin- (BEGIN_SENTENCE) or end-of-sentence (END_SENTENCE) token."""
    ids = np.full(max_characters, PADDING, dtype=np.uint16)
    ids[:3] = (BEGIN_WORD, character, END_WORD)
    return ids + 1


def _no_subwords() -> ModelLoadError:
    return ModelLoadError(
        "ELMo has no subword tokenizer (it reads each word's characters); use it with units: word"
    )


@dataclass(frozen=True)
class WordCharacters:
    """ELMo's `TextEncoder`: each word of the word index is one token, read as characters.

    pad_token_id: the id of a padding token's every character (its embedding is zero).
    """

    max_characters: int = 50
    pad_token_id: int = 0
    bos_token_id: None = None

    def encode(
        self, sentences: list[str], spans: list[list[Span]] | None = None
    ) -> list[RunningTextEncoding]:
        """Each sentence's tokens: the (n_words, max_characters) character ids of the words
        at its `spans`, between the begin- and end-of-sentence tokens."""
        if spans is None:
            raise _no_subwords()
        return [
            self.encode_words(sentence, sentence_spans)
            for sentence, sentence_spans in zip(sentences, spans, strict=True)
        ]

    def encode_words(self, sentence: str, spans: list[Span]) -> RunningTextEncoding:
        """One sentence's tokens (see `encode`)."""
        content = np.zeros((len(spans), self.max_characters), dtype=np.uint16)
        for row, (start, end) in enumerate(spans):
            content[row] = word_character_ids(sentence[start:end], self.max_characters)
        return RunningTextEncoding(
            prefix=[boundary_character_ids(BEGIN_SENTENCE, self.max_characters)],
            content=content,
            suffix=[boundary_character_ids(END_SENTENCE, self.max_characters)],
            offsets=list(spans),
        )

    def subword_strings(self, encodings: list[RunningTextEncoding]) -> list[list[str]]:
        """ELMo has no subwords: it reads each word's characters."""
        raise _no_subwords()
