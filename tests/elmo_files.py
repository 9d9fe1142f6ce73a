"""An independent ELMo forward pass for the tests, written step by step from bilm-tf's
definitions, in float64, one sentence at a time, on files that
`contextuality.backends.elmo.synthetic` writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


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
    direction), computed independently of contextuality.backends.elmo: explicit loops over
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
