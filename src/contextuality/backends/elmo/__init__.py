"""ELMo (Peters et al. 2018) in plain PyTorch, from the published options and weights.

Layers are the original's. Layer 0 is the character-CNN token representation: each
word's UTF-8 bytes, between begin- and end-of-word markers, embedded, convolved and
max-pooled over characters, passed through highway layers and projected to p dimensions,
then duplicated to [x; x] so that every layer has the biLM's width 2p. Layer l >= 1 is the
l-th biLSTM layer, [forward; backward] (`bilm` gives the cell's equations). From the
second LSTM layer on, a layer's input is added to its output when the options ask for
skip connections. Every sentence is read from zero states between begin- and
end-of-sentence tokens (whose vectors are dropped), so its vectors do not depend on the
other sentences of its batch or of the corpus. AllenNLP's ``ElmoEmbedder``, which the
paper ran one sentence at a time, carries the LSTM states over from one call to the next
instead: ``lstm_states: carried`` does that (sentences one at a time, in corpus order).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from contextuality.backends.base import Backend, LoadedModel
from contextuality.backends.elmo.release import RELEASE_FILES, RELEASES, elmo_files
from contextuality.backends.elmo.weights import ElmoOptions, WordCharacters, read_weights
from contextuality.backends.settings import ModelSettings, model_default
from contextuality.errors import ConfigError, ModelLoadError
from contextuality.files.provenance import sha256_file


def count_layers(spec: ModelSettings) -> int:
    """The number of biLSTM layers (hidden states are 0..n), from the release table or the
    options file."""
    if spec.source in RELEASES:
        return RELEASES[spec.source].n_layers
    return ElmoOptions.read(elmo_files(spec).options).n_layers


def check(spec: ModelSettings) -> None:
    """Refuse the settings that mean nothing for ELMo (its units are words, read as
    characters; it has no BOS token, no final norm, no GGUF file, no remote code)."""
    refused = {
        name: getattr(spec, name) != model_default(name)
        for name in (
            "weights_dtype",
            "device_map",
            "units",
            "add_bos",
            "last_layer",
            "gguf_file",
            "trust_remote_code",
            "random_weights_seed",
        )
    }
    refused["ablation"] = spec.ablation is not None
    wrong = sorted(name for name, is_set in refused.items() if is_set)
    if wrong:
        raise ConfigError(
            f"model {spec.name}: {', '.join(wrong)} cannot be set for loader: elmo (one "
            "token per word, read as characters; no BOS token, final norm or remote code; "
            "weights as published, on one device; no transformer blocks to ablate or to initialise)"
        )


def load(spec: ModelSettings, device: str = "cpu") -> LoadedModel:
    """Load an ELMo's options and weights onto `device`; its revision is the SHA-256 of
    the weights file (compared with ``revision`` when the config pins one)."""
    check(spec)
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
    from contextuality.backends.elmo.bilm import ElmoBiLM

    options = ElmoOptions.read(files.options)
    carried = sequential(spec)
    arrays = read_weights(files.weights, options)
    module = ElmoBiLM(options, arrays, carry_states=carried).eval().to(device)
    p = options.projection_dim
    characters = WordCharacters(options.max_characters)
    return LoadedModel(
        spec=spec,
        tokenizer=characters,
        encoder=characters,
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


def files(spec: ModelSettings) -> list[Path]:
    """The options and weights files an extraction reads (a release's under
    resources/elmo/, fetched by the workflow's download_elmo rule)."""
    found = elmo_files(spec)
    return [found.options, found.weights]


def sequential(spec: ModelSettings) -> bool:
    """With ``lstm_states: carried`` each sentence starts from the states the previous one
    ended in, so the corpus is read as one sequence, in order."""
    return spec.lstm_states == "carried"


def load_encoder(spec: ModelSettings) -> WordCharacters:
    """ELMo's characters, as its options file sets them."""
    check(spec)
    return WordCharacters(ElmoOptions.read(elmo_files(spec).options).max_characters)


BACKEND = Backend(
    check=check,
    count_layers=count_layers,
    known_layer_count=count_layers,
    files=files,
    sequential=sequential,
    load=load,
    load_encoder=load_encoder,
    recorded_settings=("lstm_states",),
)
