"""Model specifications from config and loading of Hugging Face models and tokenizers.

A model is named by a Hugging Face hub id (``bert-base-cased``), a local directory, or
``package:<module>/<dir>`` for weights an installed Python package ships. Loading never
enables remote code unless the model's config says ``trust_remote_code: true``. ELMo
(``loader: elmo``) is named by a published release (``elmo-original``) or a directory
holding its options JSON and weights HDF5, and loaded by `contextuality.elmo`.

A model's *units* are words (the occurrence index's words, each pooled from its subwords)
or its own subword tokens (``units: subword``, as the paper did for BERT's WordPiece).

Layers are numbered as transformers numbers hidden states: 0 is the embedding output (the
input to the first block), L the last block's output. Whether that last state comes after
the model's final normalization (GPT-2's ``ln_f``, Llama's ``norm``) is established when
the model loads and recorded; ``last_layer: before_final_norm`` takes it before.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from contextuality.corpus import resolve_data_path
from contextuality.errors import ConfigError, ModelLoadError

POOLINGS = ("mean", "first", "last")
UNITS = ("word", "subword")
LAST_LAYERS = ("as_returned", "before_final_norm")
FINAL_NORM_NAMES = ("ln_f", "norm", "final_layer_norm", "final_layernorm")
LOADERS = ("transformers", "elmo")
LONG_SENTENCE_MODES = ("truncate", "window")
LSTM_STATES = ("per_sentence", "carried")
WEIGHTS_DTYPES = ("float32", "bfloat16", "float16")
SCHEDULING_KEYS = frozenset({"gpus", "streaming"})
_HUGE_MAX_LENGTH = 1_000_000


@dataclass(frozen=True)
class ModelSpec:
    """One entry of ``models:`` in the config (see workflow/schemas/config.schema.yaml)."""

    name: str
    source: str
    revision: str | None = None
    gguf_file: str | None = None
    loader: str = "transformers"
    units: str = "word"
    layers: tuple[int, ...] | None = None
    last_layer: str = "as_returned"
    pooling: str = "mean"
    add_bos: bool = False
    max_length: int | None = None
    long_sentences: str = "truncate"
    window_overlap: int | None = None
    token_budget: int = 8192
    storage_dtype: str = "auto"
    cuda_dtype: str = "float16"
    device: str = "auto"
    trust_remote_code: bool = False
    lstm_states: str = "per_sentence"
    weights_dtype: str = "float32"
    device_map: str | None = None
    block_words: int | None = None

    @classmethod
    def from_config(cls, name: str, section: dict[str, Any]) -> ModelSpec:
        """Build from a config section (scheduling keys such as ``gpus`` are not settings)."""
        known = {key for key in cls.__dataclass_fields__ if key != "name"}
        unknown = set(section) - known - SCHEDULING_KEYS
        if unknown:
            raise ConfigError(f"model {name}: unknown settings {sorted(unknown)}")
        values = {key: section[key] for key in known if key in section}
        if values.get("layers") is not None:
            values["layers"] = tuple(int(layer) for layer in values["layers"])
        if values.get("pooling", "mean") not in POOLINGS:
            raise ConfigError(f"model {name}: pooling must be one of {POOLINGS}")
        if values.get("long_sentences", "truncate") not in LONG_SENTENCE_MODES:
            raise ConfigError(f"model {name}: long_sentences must be one of {LONG_SENTENCE_MODES}")
        if values.get("loader", "transformers") not in LOADERS:
            raise ConfigError(f"model {name}: loader must be one of {LOADERS}")
        if values.get("units", "word") not in UNITS:
            raise ConfigError(f"model {name}: units must be one of {UNITS}")
        if values.get("last_layer", "as_returned") not in LAST_LAYERS:
            raise ConfigError(f"model {name}: last_layer must be one of {LAST_LAYERS}")
        if values.get("lstm_states", "per_sentence") not in LSTM_STATES:
            raise ConfigError(f"model {name}: lstm_states must be one of {LSTM_STATES}")
        if values.get("weights_dtype", "float32") not in WEIGHTS_DTYPES:
            raise ConfigError(f"model {name}: weights_dtype must be one of {WEIGHTS_DTYPES}")
        spec = cls(name=name, **values)
        if spec.loader == "elmo" and (spec.weights_dtype != "float32" or spec.device_map):
            raise ConfigError(f"model {name}: weights_dtype and device_map are for transformers")
        if spec.loader != "elmo" and spec.lstm_states != "per_sentence":
            raise ConfigError(f"model {name}: lstm_states is ELMo's setting (loader: elmo)")
        if spec.loader == "elmo":
            from contextuality.elmo import check_spec

            check_spec(spec)
        return spec

    def settings(self) -> dict[str, Any]:
        """Every setting that changes the extracted vectors, defaults filled in.

        Recorded in outputs and hashed; ``from_config(name, spec.settings())`` gives back
        an equal spec. Settings added for some models only (ELMo's ``lstm_states``; the
        large-model ``weights_dtype`` and ``device_map``; ``block_words``) appear only when
        they apply or differ from their default, so adding them changed no existing model's hash.
        """
        settings = asdict(self)
        del settings["name"]
        if self.loader != "elmo":
            del settings["lstm_states"]  # ELMo's alone
        if self.weights_dtype == "float32":
            del settings["weights_dtype"]
        if self.device_map is None:
            del settings["device_map"]
        if self.block_words is None:
            del settings["block_words"]
        return settings


def tokenizer_key(spec: ModelSpec) -> str:
    """Name of the subword index of `spec`'s tokenizer, safe as a path component.

    Models with the same source and revision share one subword index.
    """
    key = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.source).strip("_.")
    return f"{key}@{spec.revision}" if spec.revision else key


def model_location(spec: ModelSpec) -> str:
    """What to hand to ``from_pretrained``: a directory path or a hub id.

    A source written as a path (starting with ``/``, ``.`` or ``~``) must be a directory.
    """
    if spec.source.startswith("package:"):
        location = resolve_data_path(spec.source)
    elif spec.source.startswith(("/", ".", "~")):
        location = Path(spec.source).expanduser()
    else:
        return spec.source
    if not location.is_dir():
        raise ModelLoadError(f"model {spec.name}: model directory {spec.source} not found")
    return str(location)


def _require_transformers_loader(spec: ModelSpec) -> None:
    if spec.loader == "elmo":
        raise ModelLoadError(
            f"model {spec.name}: ELMo has no subword tokenizer (it reads each word's "
            "characters); use it with units: word"
        )


def _load_error(spec: ModelSpec, what: str, error: Exception) -> ModelLoadError:
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return ModelLoadError(
        f"model {spec.name}: cannot load the {what} of '{spec.source}' ({first_line}). "
        "A hub id needs the Hugging Face hub to be reachable once (or the files in the local "
        "cache); otherwise set 'source' to a local directory holding config.json and weights."
    )


def _pretrained_options(spec: ModelSpec) -> dict[str, Any]:
    """Options every ``from_pretrained`` call of the model gets: its revision, whether remote
    code may run, and the GGUF file to read (weights dequantized to float32) when set."""
    options = {"revision": spec.revision, "trust_remote_code": spec.trust_remote_code}
    if spec.gguf_file is not None:
        options["gguf_file"] = spec.gguf_file
    return options


def count_hidden_layers(spec: ModelSpec) -> int:
    """Number of transformer layers L, read from the model's config only (no weights).

    Hidden states are numbered 0 (embedding output) to L; for ELMo, L is the number of
    biLSTM layers (read from its options file or the published release's table).
    """
    if spec.loader == "elmo":
        from contextuality.elmo import count_layers

        return count_layers(spec)
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(model_location(spec), **_pretrained_options(spec))
    except (OSError, ValueError) as error:
        raise _load_error(spec, "config", error) from error
    return int(config.num_hidden_layers)


def selected_layers(spec: ModelSpec, n_layers: int | None = None) -> tuple[int, ...]:
    """The hidden-state indices to extract: the config's ``layers`` or all of 0..L."""
    if spec.layers is not None:
        return tuple(sorted(set(spec.layers)))
    n_layers = count_hidden_layers(spec) if n_layers is None else n_layers
    return tuple(range(n_layers + 1))


@dataclass
class LoadedModel:
    """A tokenizer and model ready for extraction, with what is known about them.

    final_norm: the name and module of the model's final normalization, or None.
    returns_after_final_norm: whether transformers' last hidden state comes after it.
    described_layers: what the layers are, where the model is not a transformer (ELMo).
    file_checksums: SHA-256 of the files loaded, where they are not a hub revision.
    blocks: the module holding the model's list of blocks and the list's attribute name,
        where a forward pass can be cut short by running a prefix of that list (see
        `find_blocks`); None where it cannot.
    sequential: whether the model must see the sentences one at a time in corpus order,
        each continuing from the state the previous one left (``model.reset_states()``
        starts a pass): ELMo with ``lstm_states: carried``.
    """

    spec: ModelSpec
    tokenizer: Any
    model: Any
    n_layers: int
    hidden_size: int
    max_length: int
    revision: str | None
    final_norm: tuple[str, Any] | None = None
    returns_after_final_norm: bool = False
    described_layers: dict[str, Any] | None = None
    file_checksums: dict[str, str] | None = None
    sequential: bool = False
    blocks: tuple[Any, str] | None = None

    @property
    def takes_last_layer_before_final_norm(self) -> bool:
        """Whether extraction must replace the last hidden state by the final norm's input."""
        return self.spec.last_layer == "before_final_norm" and self.returns_after_final_norm

    def layer_conventions(self) -> dict[str, Any]:
        """What layer 0, the layers between and the last layer are, as recorded in meta.json
        and the shards."""
        if self.described_layers is not None:
            return self.described_layers
        last = f"output of block {self.n_layers}"
        if self.final_norm is None:
            last += " (the model has no final normalization)"
        elif self.returns_after_final_norm and not self.takes_last_layer_before_final_norm:
            last += f", after the final normalization ({self.final_norm[0]})"
        else:
            last += f", before the final normalization ({self.final_norm[0]})"
        return {
            "layer_0": "embedding output (the input to the first block)",
            "last_layer": last,
            "final_norm": None if self.final_norm is None else self.final_norm[0],
            "last_layer_setting": self.spec.last_layer,
        }


def layer_output(layer: int, n_layers: int, conventions: dict[str, Any]) -> str:
    """What hidden state `layer` is, in words (see `LoadedModel.layer_conventions`)."""
    if layer == 0:
        return conventions["layer_0"]
    if layer == n_layers:
        return conventions["last_layer"]
    return conventions.get("layer", "output of block {layer}").format(layer=layer)


def find_final_norm(model: Any) -> tuple[str, Any] | None:
    """The model's final normalization: a module named as transformers names it (``ln_f``,
    ``norm``, ``final_layer_norm``), at most one level down; None if it has none."""
    for name, module in model.named_modules():
        if name.split(".")[-1] in FINAL_NORM_NAMES and name.count(".") <= 1:
            return name, module
    return None


def _two_token_pass(model: Any) -> Any:
    """The model's output, all hidden states included, for the two-token input [0, 1]:
    the probe that tells what the model returns, before any corpus is read."""
    import torch

    device = next(model.parameters()).device
    with torch.inference_mode():
        return model(input_ids=torch.tensor([[0, 1]], device=device), output_hidden_states=True)


def returns_after(model: Any, norm: Any) -> bool:
    """Whether the model's last hidden state is its final norm's output (not its input),
    found by one forward pass of two tokens."""
    import torch

    seen = {}
    handle = norm.register_forward_hook(lambda module, inputs, output: seen.update(output=output))
    try:
        output = _two_token_pass(model)
    finally:
        handle.remove()
    return "output" in seen and torch.equal(output.hidden_states[-1], seen["output"])


def find_blocks(model: Any, n_layers: int) -> tuple[Any, str] | None:
    """Where the model keeps its `n_layers` blocks: the (parent module, attribute) of its
    first ModuleList of that length at most one level down (BERT's ``encoder.layer``,
    GPT-2's ``h``, Llama's ``layers``), if running a prefix of it gives that many fewer
    hidden states and the whole model gives them all again afterwards (checked with
    forward passes of two tokens); else None."""
    import torch

    def count_hidden_states() -> int:
        return len(_two_token_pass(model).hidden_states)

    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers > 1:
            if name.count(".") > 1:
                continue
            parent_name, _, attribute = name.rpartition(".")
            blocks = (model.get_submodule(parent_name), attribute)
            # The whole pass first: a model may attach the hooks that record its hidden
            # states on its first pass, to the blocks present then (BERT does, under
            # transformers 5).
            whole = count_hidden_states()
            with only_blocks_up_to(blocks, 1):
                cut = count_hidden_states()
            restored = count_hidden_states()
            return blocks if whole == restored == n_layers + 1 and cut == 2 else None
    return None


@contextlib.contextmanager
def only_blocks_up_to(blocks: tuple[Any, str] | None, last: int) -> Iterator[None]:
    """Within the block, the model runs only its first `last` blocks (`blocks` from
    `find_blocks`; None leaves the model whole)."""
    if blocks is None:
        yield
        return
    parent, attribute = blocks
    whole = getattr(parent, attribute)
    setattr(parent, attribute, whole[:last])
    try:
        yield
    finally:
        setattr(parent, attribute, whole)


def load_tokenizer(spec: ModelSpec) -> Any:
    """The model's fast tokenizer, set up as the model's authors ship it: sentences are
    tokenized as running text, and words are aligned to subwords by character offsets."""
    _require_transformers_loader(spec)
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_location(spec), **_pretrained_options(spec))
    except (OSError, ValueError) as error:
        raise _load_error(spec, "tokenizer", error) from error
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"model {spec.name}: needs a fast (Rust) tokenizer for character offsets"
        )
    return tokenizer


def _require_accelerate(spec: ModelSpec) -> None:
    import importlib.util

    if importlib.util.find_spec("accelerate") is None:
        raise ModelLoadError(
            f"model {spec.name}: device_map needs the accelerate package "
            "(pip install 'contextuality[large]')"
        )


def load_model(spec: ModelSpec, device: str = "cpu") -> LoadedModel:
    """Load tokenizer and model (eval mode) and read their limits.

    The weights are loaded as ``weights_dtype`` (bfloat16 halves a large model's memory)
    and placed on `device`, or, with ``device_map`` (``auto``, ``balanced``,
    ``sequential``: accelerate's placements), spread over the GPUs and CPU memory, layers
    that fit no GPU offloaded to the CPU; inputs then go to the first layer's device.
    """
    if spec.loader == "elmo":
        from contextuality.elmo import load_elmo

        return load_elmo(spec, device)
    import torch
    from transformers import AutoModel

    tokenizer = load_tokenizer(spec)
    options = {"dtype": getattr(torch, spec.weights_dtype), **_pretrained_options(spec)}
    if spec.device_map is not None:
        _require_accelerate(spec)
        options["device_map"] = spec.device_map
    try:
        model = AutoModel.from_pretrained(model_location(spec), **options)
    except (OSError, ValueError) as error:
        raise _load_error(spec, "weights", error) from error
    model.eval()
    if spec.device_map is None:
        model.to(device)
    config = model.config
    window = getattr(config, "max_position_embeddings", None) or getattr(
        config, "n_positions", None
    )
    limits = [spec.max_length, window]
    if tokenizer.model_max_length and tokenizer.model_max_length < _HUGE_MAX_LENGTH:
        limits.append(tokenizer.model_max_length)
    known = [limit for limit in limits if limit]
    if not known:
        raise ModelLoadError(f"model {spec.name}: no maximum input length known; set max_length")
    final_norm = find_final_norm(model)
    if spec.last_layer == "before_final_norm" and final_norm is None:
        raise ConfigError(
            f"model {spec.name}: last_layer: before_final_norm, but the model has no final "
            "normalization; use as_returned"
        )
    n_layers = int(config.num_hidden_layers)
    return LoadedModel(
        spec=spec,
        tokenizer=tokenizer,
        model=model,
        n_layers=n_layers,
        hidden_size=int(config.hidden_size),
        max_length=int(min(known)),
        revision=spec.revision or getattr(config, "_commit_hash", None),
        final_norm=final_norm,
        returns_after_final_norm=final_norm is not None and returns_after(model, final_norm[1]),
        blocks=find_blocks(model, n_layers),
    )
