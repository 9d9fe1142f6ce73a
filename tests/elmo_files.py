"""ELMo files as the tests (and bench/elmo.py) build them: an options JSON and a weights
HDF5 with random values in the published layout, and an independent forward pass written
step by step from bilm-tf's definitions, in float64, one sentence at a time.

The published sizes are in PUBLISHED_SIZES (random weights in them measure speed, not
vectors).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np

TINY_OPTIONS = {
    "lstm": {
        "use_skip_connections": True,
        "projection_dim": 8,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 16,
        "n_layers": 2,
    },
    "char_cnn": {
        "activation": "relu",
        "filters": [[1, 4], [2, 4], [3, 8]],
        "n_highway": 2,
        "embedding": {"dim": 4},
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}
_PUBLISHED_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
PUBLISHED_SIZES = {
    "small": {"projection_dim": 128, "dim": 1024, "n_highway": 1},
    "original": {"projection_dim": 512, "dim": 4096, "n_highway": 2},
}


def published_size_options(size: str) -> dict:
    """The options of a published release size (its filters, highways, LSTM widths)."""
    options = copy.deepcopy(TINY_OPTIONS)
    widths = PUBLISHED_SIZES[size]
    options["lstm"] |= {"projection_dim": widths["projection_dim"], "dim": widths["dim"]}
    options["char_cnn"] |= {
        "filters": _PUBLISHED_FILTERS,
        "n_highway": widths["n_highway"],
        "embedding": {"dim": 16},
    }
    return options


def write_elmo_files(
    directory: Path,
    options: dict = TINY_OPTIONS,
    seed: int = 0,
    stem: str | None = None,
) -> tuple[Path, Path]:
    """Write `options` and random weights in the published layout into `directory`, as
    ``options.json`` and ``weights.hdf5`` or, with `stem`, the published names
    ``<stem>_options.json`` and ``<stem>_weights.hdf5``.

    The biases push the cells to saturate (forget and input gates open, the new content
    positive) so that the cell clip is reached within a few words, and the output
    projections are large enough for the projection clip to bind.
    """
    import h5py

    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    prefix = f"{stem}_" if stem else ""
    options_path = directory / f"{prefix}options.json"
    weights_path = directory / f"{prefix}weights.hdf5"
    options_path.write_text(json.dumps(options))
    cnn, lstm = options["char_cnn"], options["lstm"]
    dim, p, c = cnn["embedding"]["dim"], lstm["projection_dim"], lstm["dim"]
    n = sum(number for _, number in cnn["filters"])

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    with h5py.File(weights_path, "w") as weights:
        weights["char_embed"] = normal(261, dim)
        for index, (width, number) in enumerate(cnn["filters"]):
            weights[f"CNN/W_cnn_{index}"] = normal(1, width, dim, number, scale=0.5)
            weights[f"CNN/b_cnn_{index}"] = normal(number, scale=0.1)
        for k in range(cnn["n_highway"]):
            for part in ("carry", "transform"):
                weights[f"CNN_high_{k}/W_{part}"] = normal(n, n, scale=n**-0.5)
                weights[f"CNN_high_{k}/b_{part}"] = normal(n, scale=0.1)
        weights["CNN_proj/W_proj"] = normal(n, p, scale=n**-0.5)
        weights["CNN_proj/b_proj"] = normal(p, scale=0.1)
        for direction in range(2):
            for layer in range(lstm["n_layers"]):
                cell = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
                weights[f"{cell}/W_0"] = normal(2 * p, 4 * c, scale=(2 * p) ** -0.5)
                bias = normal(4 * c, scale=0.1)
                bias[: 3 * c] += 2.0  # input gate, new content, forget gate (TF order i, j, f, o)
                weights[f"{cell}/B"] = bias
                weights[f"{cell}/W_P_0"] = normal(c, p, scale=2 * c**-0.5)
    return options_path, weights_path


def _character_rows(word: str | int) -> np.ndarray:
    """bilm-tf's character ids plus one: begin-of-word 258, the bytes (or the sentence
    marker 256/257), end-of-word 259, padding 260."""
    middle = [word] if isinstance(word, int) else list(word.encode("utf-8"))[:48]
    row = [258, *middle, 259] + [260] * (50 - len(middle) - 2)
    return np.array(row) + 1


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def reference_forward(
    options_path: Path, weights_path: Path, words: list[str], initial: dict | None = None
) -> tuple[np.ndarray, dict[str, int], dict]:
    """Every layer's vectors of one sentence, shape (n_layers + 1, n_words, 2p), how many
    cell and projection values hit their clip, and the final (h, c) of each (layer,
    direction), computed independently of contextuality.elmo: explicit loops over
    characters, filters and time steps on the HDF5 arrays as bilm-tf stores them (TF gate
    order i, j, f, o; forget bias + 1). `initial`: the (h, c) to start each (layer,
    direction) from, e.g. the previous sentence's finals; default zeros."""
    import h5py

    options = json.loads(Path(options_path).read_text())
    cnn, lstm = options["char_cnn"], options["lstm"]
    with h5py.File(weights_path, "r") as file:
        w = {name: np.asarray(file[name], dtype=np.float64) for name in _dataset_names(file)}
    ids = np.stack([_character_rows(256), *map(_character_rows, words), _character_rows(257)])
    tokens = []
    for row in ids:
        embedded = w["char_embed"][row - 1]  # (50, dim); ids start at 1
        features = []
        activation = (lambda x: np.maximum(x, 0)) if cnn["activation"] == "relu" else np.tanh
        for index, (width, _) in enumerate(cnn["filters"]):
            kernel = w[f"CNN/W_cnn_{index}"][0]  # (width, dim, number)
            convolved = np.array(
                [
                    sum(embedded[start + k] @ kernel[k] for k in range(width))
                    for start in range(len(row) - width + 1)
                ]
            )
            pooled = (convolved + w[f"CNN/b_cnn_{index}"]).max(axis=0)
            features.append(activation(pooled))
        x = np.concatenate(features)
        for k in range(cnn["n_highway"]):
            carry = _sigmoid(x @ w[f"CNN_high_{k}/W_carry"] + w[f"CNN_high_{k}/b_carry"])
            transform = np.maximum(
                x @ w[f"CNN_high_{k}/W_transform"] + w[f"CNN_high_{k}/b_transform"], 0
            )
            x = carry * transform + (1 - carry) * x
        tokens.append(x @ w["CNN_proj/W_proj"] + w["CNN_proj/b_proj"])
    tokens = np.array(tokens)
    clipped = {"cell": 0, "projection": 0}
    finals = {}
    layers = [np.concatenate([tokens, tokens], axis=1)]
    inputs = [tokens, tokens[::-1]]
    for layer in range(lstm["n_layers"]):
        outputs = []
        for direction in range(2):
            cell_group = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            W, B, P = (w[f"{cell_group}/{name}"] for name in ("W_0", "B", "W_P_0"))
            zeros = (np.zeros(lstm["projection_dim"]), np.zeros(lstm["dim"]))
            h, c = (initial or {}).get((layer, direction), zeros)
            sequence = []
            for x_t in inputs[direction]:
                i, j, f, o = np.split(np.concatenate([x_t, h]) @ W + B, 4)
                c = _sigmoid(f + 1.0) * c + _sigmoid(i) * np.tanh(j)
                clipped["cell"] += int((np.abs(c) > lstm["cell_clip"]).sum())
                c = np.clip(c, -lstm["cell_clip"], lstm["cell_clip"])
                h = (_sigmoid(o) * np.tanh(c)) @ P
                clipped["projection"] += int((np.abs(h) > lstm["proj_clip"]).sum())
                h = np.clip(h, -lstm["proj_clip"], lstm["proj_clip"])
                sequence.append(h)
            finals[layer, direction] = (h, c)
            sequence = np.array(sequence)
            if lstm["use_skip_connections"] and layer > 0:
                sequence = sequence + inputs[direction]
            outputs.append(sequence)
        layers.append(np.concatenate([outputs[0], outputs[1][::-1]], axis=1))
        inputs = outputs
    return np.array(layers)[:, 1:-1], clipped, finals


def _dataset_names(file) -> list[str]:
    names = []
    file.visititems(lambda name, item: names.append(name) if hasattr(item, "shape") else None)
    return names
