"""ELMo (Peters et al. 2018) in plain PyTorch, loaded from the published options and weights.

A release is two files: the options JSON (the architecture) and the weights HDF5, with
the datasets bilm-tf wrote: ``char_embed``; ``CNN/W_cnn_<i>``, ``CNN/b_cnn_<i>``;
``CNN_high_<k>/W_carry``, ``b_carry``, ``W_transform``, ``b_transform``;
``CNN_proj/W_proj``, ``b_proj``; and for direction d (0 forward, 1 backward) and LSTM layer
l, ``RNN_<d>/RNN/MultiRNNCell/Cell<l>/LSTMCell/W_0``, ``B`` and ``W_P_0``.

Layers are the original's. Layer 0 is the character-CNN token representation: each
word's UTF-8 bytes, between begin- and end-of-word markers, embedded, convolved and
max-pooled over characters, passed through highway layers and projected to p dimensions,
then duplicated to [x; x] so that every layer has the biLM's width 2p. Layer l >= 1 is the
l-th biLSTM layer, [forward; backward] (`contextuality.bilm` gives the cell's equations).
From the second LSTM layer on, a layer's input is added to its output when the options
ask for skip connections. Every sentence is read from zero states between begin- and
end-of-sentence tokens (whose vectors are dropped), so its vectors do not depend on the
other sentences of its batch or of the corpus. AllenNLP's ``ElmoEmbedder``, which the
paper ran one sentence at a time, carries the LSTM states over from one call to the next
instead: ``lstm_states: carried`` does that (sentences one at a time, in corpus order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.errors import ConfigError, InputDataError, ModelLoadError
from contextuality.extract import RunningTextEncoding
from contextuality.fetch import fetch_file
from contextuality.models import LoadedModel, ModelSpec, model_location
from contextuality.provenance import sha256_file

BASE_URL = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"
RELEASE_DIRECTORY = "resources/elmo"
RELEASE_FILES = ("options.json", "weights.hdf5")

# bilm-tf's reserved character ids (bytes are 0-255); every id is shifted by one when
# embedded, so that 0 marks a padding token.
BEGIN_SENTENCE, END_SENTENCE, BEGIN_WORD, END_WORD, PADDING = 256, 257, 258, 259, 260
CHARACTER_VOCABULARY = PADDING + 1


@dataclass(frozen=True)
class ElmoRelease:
    """One published ELMo: its directory on the AllenNLP server and its file name stem."""

    directory: str
    stem: str
    n_layers: int = 2

    def published_name(self, file: str) -> str:
        """The file's published name (``elmo_2x4096_..._weights.hdf5`` for weights.hdf5)."""
        return f"{self.stem}_{file}"

    def url(self, file: str) -> str:
        return f"{BASE_URL}/{self.directory}/{self.published_name(file)}"


RELEASES = {
    "elmo-original": ElmoRelease(
        "2x4096_512_2048cnn_2xhighway", "elmo_2x4096_512_2048cnn_2xhighway"
    ),
    "elmo-original-5.5b": ElmoRelease(
        "2x4096_512_2048cnn_2xhighway_5.5B", "elmo_2x4096_512_2048cnn_2xhighway_5.5B"
    ),
    "elmo-medium": ElmoRelease("2x2048_256_2048cnn_1xhighway", "elmo_2x2048_256_2048cnn_1xhighway"),
    "elmo-small": ElmoRelease("2x1024_128_2048cnn_1xhighway", "elmo_2x1024_128_2048cnn_1xhighway"),
}


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


@dataclass(frozen=True)
class WordCharacters:
    """ELMo's tokenizer: each word of the word index is one token, read as characters.

    pad_token_id: the id of a padding token's every character (its embedding is zero).
    """

    max_characters: int = 50
    pad_token_id: int = 0
    bos_token_id: None = None

    def encode(self, sentence: str, spans: list[tuple[int, int]]) -> RunningTextEncoding:
        """One sentence's tokens: the (n_words, max_characters) character ids of the words at
        `spans`, between the begin- and end-of-sentence tokens."""
        content = np.zeros((len(spans), self.max_characters), dtype=np.uint16)
        for row, (start, end) in enumerate(spans):
            content[row] = word_character_ids(sentence[start:end], self.max_characters)
        return RunningTextEncoding(
            prefix=[boundary_character_ids(BEGIN_SENTENCE, self.max_characters)],
            content=content,
            suffix=[boundary_character_ids(END_SENTENCE, self.max_characters)],
            offsets=list(spans),
        )


@dataclass(frozen=True)
class ElmoFiles:
    """Where one ELMo's two files are."""

    options: Path
    weights: Path
    release: str | None = None


def elmo_files(spec: ModelSpec) -> ElmoFiles:
    """The options and weights files of an ELMo model.

    A published release name (`RELEASES`): ``resources/elmo/<release>/`` in the working
    directory, where the workflow's download rule and ``contextuality download-elmo`` put
    them. A directory: its ``options.json`` and ``weights.hdf5``, or its one
    ``*options.json`` and one ``*weights.hdf5`` (the published names).
    """
    if spec.source in RELEASES:
        directory = Path(RELEASE_DIRECTORY) / spec.source
        return ElmoFiles(*(directory / file for file in RELEASE_FILES), release=spec.source)
    directory = Path(model_location(spec))
    found = []
    for file, pattern in zip(RELEASE_FILES, ("*options.json", "*weights.hdf5"), strict=True):
        matches = (
            [directory / file] if (directory / file).is_file() else sorted(directory.glob(pattern))
        )
        if len(matches) != 1:
            raise ModelLoadError(
                f"model {spec.name}: {directory} must hold one {file} or one {pattern} "
                f"(found {len(matches)})"
            )
        found.extend(matches)
    return ElmoFiles(*found)


def count_layers(spec: ModelSpec) -> int:
    """The number of biLSTM layers (hidden states are 0..n), from the release table or the
    options file."""
    if spec.source in RELEASES:
        return RELEASES[spec.source].n_layers
    return ElmoOptions.read(elmo_files(spec).options).n_layers


def check_spec(spec: ModelSpec) -> None:
    """Refuse the settings that mean nothing for ELMo (its units are words, read as
    characters; it has no BOS token, no final norm, no GGUF file, no remote code)."""
    refused = {
        "units": spec.units != "word",
        "add_bos": spec.add_bos,
        "last_layer": spec.last_layer != "as_returned",
        "gguf_file": spec.gguf_file is not None,
        "trust_remote_code": spec.trust_remote_code,
    }
    wrong = sorted(name for name, is_set in refused.items() if is_set)
    if wrong:
        raise ConfigError(
            f"model {spec.name}: {', '.join(wrong)} cannot be set for loader: elmo (one "
            "token per word, read as characters; no BOS token, final norm or remote code)"
        )


def load_elmo(spec: ModelSpec, device: str = "cpu") -> LoadedModel:
    """Load an ELMo's options and weights onto `device`; its revision is the SHA-256 of
    the weights file (compared with ``revision`` when the config pins one)."""
    check_spec(spec)
    files = elmo_files(spec)
    paths = (files.options, files.weights)
    missing = [path for path in paths if not path.is_file()]
    if missing:  # a release not fetched yet (a directory's files were found)
        raise ModelLoadError(
            f"model {spec.name}: {missing[0]} not found; run the workflow (its download_elmo "
            f"rule fetches it) or `contextuality download-elmo {files.release}`"
        )
    checksums = {file: sha256_file(path) for file, path in zip(RELEASE_FILES, paths, strict=True)}
    if spec.revision is not None and spec.revision != checksums["weights.hdf5"]:
        raise ModelLoadError(
            f"model {spec.name}: {files.weights} has SHA-256 {checksums['weights.hdf5']}, "
            f"not the revision {spec.revision} the config pins"
        )
    from contextuality.bilm import ElmoBiLM

    options = ElmoOptions.read(files.options)
    carried = spec.lstm_states == "carried"
    arrays = read_weights(files.weights, options)
    module = ElmoBiLM(options, arrays, carry_states=carried).eval().to(device)
    p = options.projection_dim
    return LoadedModel(
        spec=spec,
        tokenizer=WordCharacters(options.max_characters),
        model=module,
        n_layers=options.n_layers,
        hidden_size=2 * p,
        max_length=spec.max_length or np.iinfo(np.int32).max,
        revision=checksums["weights.hdf5"],
        described_layers={
            "layer_0": f"character-CNN token representation (highway, projection to {p}), "
            f"duplicated to [x; x] ({2 * p})",
            "layer": "biLSTM layer {layer}, [forward; backward]",
            "last_layer": f"biLSTM layer {options.n_layers}, [forward; backward]"
            + (" with the skip connection" if options.skip_connections else ""),
            "final_norm": None,
            "last_layer_setting": spec.last_layer,
        },
        file_checksums=checksums,
        sequential=carried,
    )


def fetch_release(
    release: str,
    destinations: dict[str, str | Path],
    mirror: str | Path | None,
    expected: dict[str, str] | None = None,
) -> dict[str, str]:
    """Put a published release's two files at `destinations` (keyed by RELEASE_FILES),
    copied from `mirror` (a directory holding the published file names) or downloaded,
    and check that the weights have every dataset the options ask for.

    expected: SHA-256 digests to hold the files to, keyed by published file name.
    Returns the digests of the files written.
    """
    if release not in RELEASES:
        raise ConfigError(f"unknown ELMo release {release!r}; known: {sorted(RELEASES)}")
    published = RELEASES[release]
    expected = expected or {}
    for file in RELEASE_FILES:
        name = published.published_name(file)
        fetch_file(
            destinations[file],
            published.url(file),
            None if mirror is None else Path(mirror) / name,
            "set elmo.mirror to a directory holding the published ELMo files",
            expected.get(name),
        )
    try:
        read_weights(destinations["weights.hdf5"], ElmoOptions.read(destinations["options.json"]))
    except ModelLoadError as error:
        for path in destinations.values():
            Path(path).unlink(missing_ok=True)
        raise InputDataError(f"ELMo release {release}: {error}") from error
    return {
        published.published_name(file): sha256_file(destinations[file]) for file in RELEASE_FILES
    }
