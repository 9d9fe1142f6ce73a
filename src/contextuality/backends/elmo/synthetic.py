"""ELMo files with random values in the published layout: to check an installation or
measure speed without the published weights (speed does not depend on the values).

`TINY_OPTIONS` is a small architecture; `published_size_options` gives a published
release's sizes (its filters, highways and LSTM widths).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np

from contextuality.backends.elmo.weights import CHARACTER_VOCABULARY, lstm_cell_group

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


def write_random_files(
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
        weights["char_embed"] = normal(CHARACTER_VOCABULARY, dim)
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
                cell = lstm_cell_group(direction, layer)
                weights[f"{cell}/W_0"] = normal(2 * p, 4 * c, scale=(2 * p) ** -0.5)
                bias = normal(4 * c, scale=0.1)
                bias[: 3 * c] += 2.0  # input gate, new content, forget gate (TF order i, j, f, o)
                weights[f"{cell}/B"] = bias
                weights[f"{cell}/W_P_0"] = normal(c, p, scale=2 * c**-0.5)
    return options_path, weights_path
