"""The model backends, by the ``loader`` setting that names them: the one place that does.

Each backend (`base.Backend`) checks its settings, counts a model's layers without its
weights, names the files an extraction reads, and loads the model as a `base.LoadedModel`,
whose `base.TextEncoder` turns sentences into its inputs; the extraction needs nothing
else. To add a kind of model, write a module with a ``BACKEND`` and register it here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextuality.backends import elmo, hf, token_embeddings
from contextuality.backends.base import (
    Backend,
    LoadedModel,
    TextEncoder,
    selected_layers,
    source_problem,
    torch_device,
    window_overlap_problem,
)
from contextuality.backends.settings import ModelSettings
from contextuality.backends.token_embeddings import TokenEmbeddings
from contextuality.errors import ConfigError, ContextualityError

BACKENDS: dict[str, Backend] = {"transformers": hf.BACKEND, "elmo": elmo.BACKEND}
LOADERS = tuple(BACKENDS)


def model_settings(name: str, section: dict[str, Any]) -> ModelSettings:
    """The settings of model `name` from its config section (``models.<name>``), checked
    against the schema and the model's backend (ConfigError naming the setting)."""
    settings = ModelSettings.from_config(name, section)
    if settings.device != "auto":  # a typo, wherever the jobs will run
        torch_device(settings.device, f"models.{name}.device")
    BACKENDS[settings.loader].check(settings)
    return settings


def backend_of(spec: ModelSettings) -> Backend:
    """The backend that reads `spec`'s model."""
    return BACKENDS[spec.loader]


def recorded_settings(spec: ModelSettings) -> dict[str, Any]:
    """Every setting that changes `spec`'s vectors, as outputs record and hash them: the
    common ones and those its backend records always. ``model_settings(name, settings)``
    gives back equal settings."""
    settings = spec.common_settings()
    for key in backend_of(spec).recorded_settings:
        settings.setdefault(key, getattr(spec, key))
    order = list(ModelSettings.__dataclass_fields__)
    return dict(sorted(settings.items(), key=lambda item: order.index(item[0])))


def model_record(spec: ModelSettings, loaded: LoadedModel) -> dict[str, Any]:
    """What an output of a model loaded from `spec` records of it: its name, source and
    revision, its files' checksums, its settings (`recorded_settings`) and their hash."""
    from contextuality.files.provenance import config_hash

    recorded = recorded_settings(spec)
    return {
        "model": spec.name,
        "model_id": spec.source,
        "model_revision": loaded.revision,
        "model_file_checksums": loaded.file_checksums,
        "settings": recorded,
        "config_hash": config_hash(recorded),
    }


def vector_settings(spec: ModelSettings) -> dict[str, Any]:
    """Every setting that changes a layer's vectors: `recorded_settings` less ``layers``,
    since which layers are extracted changes none of them. A shard records their hash, so
    a layer extracted alone later is the same extraction as the layers stored beside it."""
    return {key: value for key, value in recorded_settings(spec).items() if key != "layers"}


def count_hidden_layers(spec: ModelSettings) -> int:
    """L, the model's number of layers (hidden states are 0..L), from its config or
    options file alone."""
    return backend_of(spec).count_layers(spec)


def check_planned_layers(spec: ModelSettings) -> None:
    """Refuse, before anything runs, a local model that is not there, and ``layers`` or an
    ablation's block beyond its L, where its files give L without loading it
    (`Backend.known_layer_count`); ConfigError naming the setting."""
    problem = source_problem(spec)
    if problem:
        raise ConfigError(f"models.{spec.name}.source: {problem}")
    try:
        n_layers = backend_of(spec).known_layer_count(spec)
    except ContextualityError as error:
        message = str(error).removeprefix(f"model {spec.name}: ")
        raise ConfigError(f"models.{spec.name}.source: {message}") from error
    beyond = [layer for layer in spec.layers or () if n_layers is not None and layer > n_layers]
    if beyond:
        raise ConfigError(
            f"models.{spec.name}.layers: {beyond} beyond the model's hidden states 0..{n_layers}"
        )
    if spec.ablation is not None and n_layers is not None and spec.ablation.block > n_layers:
        raise ConfigError(
            f"models.{spec.name}.ablation.block: {spec.ablation.block} beyond the model's "
            f"blocks 1..{n_layers}"
        )


def check_planned_window(spec: ModelSettings) -> None:
    """Refuse, before anything runs, a ``window_overlap`` that leaves windowed sentences no
    step in the window the model's tokenizer and config give (ConfigError naming it): the
    extraction would refuse it only after its old shards were removed. Reads the tokenizer
    only for a model whose sentences are windowed with an overlap set."""
    if spec.long_sentences != "window" or spec.window_overlap is None:
        return
    window = backend_of(spec).content_window(spec)
    problem = window and window_overlap_problem(spec, *window)
    if problem:
        raise ConfigError(problem)


def model_layers(spec: ModelSettings) -> tuple[int, ...]:
    """The hidden-state indices to extract: the config's ``layers``, else all of 0..L."""
    if spec.layers is not None:
        return selected_layers(spec, 0)
    return selected_layers(spec, count_hidden_layers(spec))


def model_files(spec: ModelSettings) -> list[Path]:
    """The local files an extraction of `spec` reads, for a workflow to track."""
    return backend_of(spec).files(spec)


def reads_corpus_in_order(spec: ModelSettings) -> bool:
    """Whether the model must read the corpus as one sequence, in order (so it cannot be
    extracted in parts)."""
    return backend_of(spec).sequential(spec)


def load_model(spec: ModelSettings, device: str = "cpu") -> LoadedModel:
    """The model of `spec`, loaded onto `device` in eval mode."""
    return backend_of(spec).load(spec, device)


def load_encoder(spec: ModelSettings) -> TextEncoder:
    """The model's `TextEncoder` alone, without its weights."""
    return backend_of(spec).load_encoder(spec)


def load_language_model(spec: ModelSettings, device: str = "cpu") -> LoadedModel:
    """The model of `spec` with its language-modelling head, attention computed eagerly so
    that it returns its weights: what a perplexity needs. Transformers models only."""
    if spec.loader != "transformers":
        raise ConfigError(
            f"model {spec.name}: a language model's loss needs a transformers model, not "
            f"the {spec.loader} loader"
        )
    return hf.load(spec, device, language_model=True)


def is_decoder(spec: ModelSettings) -> bool:
    """Whether the model predicts the next token (`hf.is_decoder`); ELMo's LSTMs are read
    in both directions, and are not."""
    return spec.loader == "transformers" and hf.is_decoder(spec)


def has_token_embeddings(spec: ModelSettings) -> bool:
    """Whether the model reads its tokens through an embedding matrix, one row per
    vocabulary entry: a transformers model does; ELMo builds each token's input from its
    characters."""
    return spec.loader == "transformers"


def read_token_embeddings(loaded: LoadedModel) -> TokenEmbeddings:
    """The token embedding matrices of a loaded transformers model
    (`token_embeddings.TokenEmbeddings`); ConfigError for a model without them
    (`has_token_embeddings`)."""
    if not has_token_embeddings(loaded.spec):
        raise ConfigError(
            f"model {loaded.spec.name}: the {loaded.spec.loader} loader's model has no token "
            "embedding matrix"
        )
    return token_embeddings.read(loaded)
