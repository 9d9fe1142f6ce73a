"""Hugging Face transformers models: tokenizer, weights, final normalization and blocks.

Any model ``AutoModel`` loads, from a hub id, a local directory or a GGUF file
(``gguf_file``, dequantized to float32). Remote code never runs unless the model's config
says ``trust_remote_code: true``. Sentences are tokenized as running text by the model's
fast tokenizer, whose character offsets align subwords to words whatever the tokenizer
family (WordPiece, byte-level BPE, SentencePiece).
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import re
from pathlib import Path
from typing import Any

from contextuality.backends.base import (
    Backend,
    LoadedModel,
    RunningTextEncoding,
    Span,
    is_local,
    model_location,
    only_blocks_up_to,
    weights_dtype_on,
)
from contextuality.backends.hub import endpoint, hub_unreachable
from contextuality.backends.settings import ModelSettings, model_default
from contextuality.errors import ConfigError, ModelLoadError
from contextuality.files.provenance import sha256_file

FINAL_NORM_NAMES = ("ln_f", "norm", "final_layer_norm", "final_layernorm")
_HUGE_MAX_LENGTH = 1_000_000  # what a tokenizer reports when it sets no limit


def check(spec: ModelSettings) -> None:
    """Refuse ELMo's own setting on a transformers model."""
    if spec.lstm_states != model_default("lstm_states"):
        raise ConfigError(f"model {spec.name}: lstm_states is ELMo's setting (loader: elmo)")


def _load_error(spec: ModelSettings, what: str, error: Exception) -> ModelLoadError:
    """What to say when transformers cannot load a part of the model: that the model ships
    code of its own, refused without ``trust_remote_code`` (transformers' message names that
    argument), that a pickled weights file holds more than tensors, or else how a hub id
    must be reachable, or a local directory's files whole."""
    if "trust_remote_code" in str(error) and not spec.trust_remote_code:
        return ModelLoadError(
            f"model {spec.name}: '{spec.source}' ships code of its own, needed to load its "
            f"{what}, which runs only when allowed: after reading that code, set "
            f"models.{spec.name}.trust_remote_code: true"
        )
    if isinstance(error, pickle.UnpicklingError):
        return ModelLoadError(
            f"model {spec.name}: the pickled {what} of '{spec.source}' hold objects other than "
            "tensors, which could run code when loaded, so they are refused; use the model's "
            "safetensors weights, or convert a copy you trust"
        )
    if not is_local(spec) and hub_unreachable():
        return _offline_error(spec)
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    advice = (
        "its files may be damaged or incomplete: save or download them again"
        if is_local(spec)
        else "a hub id needs the Hugging Face hub to be reachable once (or the files in the "
        "local cache); otherwise set 'source' to a local directory holding config.json and "
        "weights"
    )
    return ModelLoadError(
        f"model {spec.name}: cannot load the {what} of '{spec.source}' ({first_line}); {advice}"
    )


def _offline_error(spec: ModelSettings) -> ModelLoadError:
    """A hub id that the local cache lacks, where the hub cannot be reached."""
    return ModelLoadError(
        f"model {spec.name}: '{spec.source}' is not in the local Hugging Face cache, and the "
        f"hub ({endpoint()}) cannot be reached from here ({hub_unreachable()}); check the "
        "id, fetch it once where the hub is reachable, or set 'source' to a local directory "
        "holding config.json and weights"
    )


def _pretrained_options(spec: ModelSettings) -> dict[str, Any]:
    """Options every ``from_pretrained`` call of the model gets: its revision, whether remote
    code may run, and the GGUF file to read (weights dequantized to float32) when set; a
    hub id where the hub cannot be reached is read from the local cache alone."""
    options = {"revision": spec.revision, "trust_remote_code": spec.trust_remote_code}
    if not is_local(spec) and hub_unreachable():
        options["local_files_only"] = True
    if spec.gguf_file is not None:
        options["gguf_file"] = spec.gguf_file
    return options


def _config(spec: ModelSettings) -> Any:
    """The model's transformers config, read alone (no weights)."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(model_location(spec), **_pretrained_options(spec))
    except (OSError, ValueError) as error:
        raise _load_error(spec, "config", error) from error


def count_layers(spec: ModelSettings) -> int:
    """Number of transformer layers L, read from the model's config only (no weights)."""
    return int(_config(spec).num_hidden_layers)


def is_decoder(spec: ModelSettings) -> bool:
    """Whether the model is a decoder trained to predict the next token: its architecture
    has a causal language-modelling head in transformers and no masked one (BERT and its
    kin have both, the causal head being untrained)."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    model_type = _config(spec).model_type
    return (
        model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    )


def language_model_from_files(spec: ModelSettings) -> tuple[Any, list[str]] | None:
    """The model with its causal language-modelling head (``AutoModelForCausalLM``), read
    from its files in float32 on the CPU, and the names of its weights the files lack (a
    head an encoder was shipped without); None for an architecture with no such head in
    transformers, or a model of random weights (built without a head)."""
    import torch
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if spec.random_weights_seed is not None:
        return None
    if _config(spec).model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return None
    options = {"dtype": torch.float32, **_pretrained_options(spec)}
    try:
        model, loading = AutoModelForCausalLM.from_pretrained(
            model_location(spec), output_loading_info=True, **options
        )
    except (OSError, ValueError, SafetensorError, pickle.UnpicklingError) as error:
        raise _load_error(spec, "language-modelling head", error) from error
    return model, list(loading["missing_keys"])


def known_layer_count(spec: ModelSettings) -> int | None:
    """L as the config.json on local disk gives it (a local directory's, or the hub cache's
    for a hub id), read as JSON without importing transformers; None where there is none
    (a hub id not cached, a GGUF file) or it names no layer count. A local source that is
    missing, or lacks its config.json or GGUF file, is a ModelLoadError."""
    if not is_local(spec):
        config_file = _cached_hub_file(spec, "config.json")
    else:
        directory = Path(model_location(spec))
        config_file = directory / "config.json"
        expected = directory / (spec.gguf_file or "config.json")
        if not expected.is_file():
            raise ModelLoadError(f"model {spec.name}: {spec.source} has no {expected.name}")
        if spec.gguf_file is not None:
            return None
    if config_file is None:
        return None
    try:
        config = json.loads(config_file.read_text())
    except ValueError as error:
        raise ModelLoadError(f"model {spec.name}: {config_file} is not JSON ({error})") from error
    counts = [config.get(key) for key in ("num_hidden_layers", "n_layer", "num_layers")]
    return next((int(count) for count in counts if isinstance(count, int)), None)


def _cached_hub_file(spec: ModelSettings, filename: str) -> Path | None:
    """Where the local Hugging Face cache holds `filename` of hub model `spec` at its
    revision (a snapshot directory named by the commit), or None where it does not."""
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(spec.source, filename, revision=spec.revision)
    except ValueError as error:  # huggingface_hub's HFValidationError: not a repo id
        raise ModelLoadError(
            f"model {spec.name}: '{spec.source}' is not a hub id; a local directory is "
            "written as a path starting with ./, / or ~, or as package:<module>/<dir>"
        ) from error
    return Path(cached) if isinstance(cached, str) else None


def resolved_revision(spec: ModelSettings) -> str | None:
    """The commit a hub model's files were loaded from, read from the cache snapshot that
    holds them (transformers no longer records it), else the configured ``revision``;
    None for a local source, whose files' checksums are recorded instead."""
    if is_local(spec):
        return None
    cached = _cached_hub_file(spec, spec.gguf_file or "config.json")
    found = re.search(r"/snapshots/([0-9a-f]{40})/", cached.as_posix()) if cached else None
    return found.group(1) if found else spec.revision


def files(spec: ModelSettings) -> list[Path]:
    """The local files an extraction reads, so that changing any of them (re-saved weights,
    an edited config or tokenizer) re-extracts: every file at the top of a local model
    directory, or the GGUF file named (which holds the tokenizer too); none for a hub id,
    whose resolved commit is recorded instead."""
    if not is_local(spec):
        return []
    directory = Path(model_location(spec))
    if spec.gguf_file is not None:
        return [directory / spec.gguf_file]
    return sorted(path for path in directory.iterdir() if path.is_file())


def sequential(spec: ModelSettings) -> bool:
    """A transformer reads each input on its own."""
    return False


def encode_running_text(tokenizer: Any, sentences: list[str]) -> list[RunningTextEncoding]:
    """Tokenize whole sentences once, as running text (no truncation), splitting the special
    tokens from the content. A special token between content subwords is an error: a
    sentence's subwords must be contiguous."""
    if not sentences:  # an empty part of a partitioned extraction
        return []
    encoding = tokenizer(
        sentences,
        add_special_tokens=True,
        return_special_tokens_mask=True,
        return_offsets_mapping=True,
    )
    result = []
    for sentence, ids, special, offsets in zip(
        sentences,
        encoding["input_ids"],
        encoding["special_tokens_mask"],
        encoding["offset_mapping"],
        strict=True,
    ):
        content = [position for position, flag in enumerate(special) if not flag]
        first, last = (content[0], content[-1] + 1) if content else (len(ids), len(ids))
        if last - first != len(content):
            raise ModelLoadError(f"special tokens inside the subwords of {sentence!r}")
        spans = [(int(start), int(end)) for start, end in offsets[first:last]]
        result.append(RunningTextEncoding(ids[:first], ids[first:last], ids[last:], spans))
    return result


class RunningTextEncoder:
    """A `TextEncoder` over a fast tokenizer: sentences read as running text, as the
    model's authors set the tokenizer up."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.pad_token_id = tokenizer.pad_token_id
        self.bos_token_id = tokenizer.bos_token_id

    def encode(
        self, sentences: list[str], spans: list[list[Span]] | None = None
    ) -> list[RunningTextEncoding]:
        return encode_running_text(self.tokenizer, sentences)

    def subword_strings(self, encodings: list[RunningTextEncoding]) -> list[list[str]]:
        return [self.tokenizer.convert_ids_to_tokens(encoding.content) for encoding in encodings]


def load_tokenizer(spec: ModelSettings) -> Any:
    """The model's fast tokenizer, set up as the model's authors ship it: sentences are
    tokenized as running text, and words are aligned to subwords by character offsets."""
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


def load_encoder(spec: ModelSettings) -> RunningTextEncoder:
    """The model's `RunningTextEncoder`, without its weights."""
    return RunningTextEncoder(load_tokenizer(spec))


def content_window(spec: ModelSettings) -> tuple[int, int]:
    """(content subwords, max_length) of one of the model's windows: its longest input
    less the special tokens its tokenizer adds to a sentence (and the BOS of ``add_bos``),
    from the tokenizer and config alone, as `extraction.units` counts them."""
    tokenizer = load_tokenizer(spec)
    length = _max_length(spec, _config(spec), tokenizer)
    encoding = encode_running_text(tokenizer, ["a"])[0]
    return length - int(spec.add_bos) - len(encoding.prefix) - len(encoding.suffix), length


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


def _require_accelerate(spec: ModelSettings) -> None:
    if importlib.util.find_spec("accelerate") is None:
        raise ModelLoadError(
            f"model {spec.name}: device_map needs the accelerate package "
            "(pip install 'contextuality[large]')"
        )


def _max_length(spec: ModelSettings, config: Any, tokenizer: Any) -> int:
    """The longest input the model takes: the least of the ``max_length`` setting, the
    model's position window and the tokenizer's limit, whichever are known."""
    window = getattr(config, "max_position_embeddings", None) or getattr(
        config, "n_positions", None
    )
    limits = [spec.max_length, window]
    if tokenizer.model_max_length and tokenizer.model_max_length < _HUGE_MAX_LENGTH:
        limits.append(tokenizer.model_max_length)
    known = [limit for limit in limits if limit]
    if not known:
        raise ModelLoadError(f"model {spec.name}: no maximum input length known; set max_length")
    return int(min(known))


def _randomly_initialised(spec: ModelSettings, options: dict[str, Any], auto_class: Any) -> Any:
    """The model's architecture (its config) with transformers' own initialisation of the
    weights, seeded with ``random_weights_seed``: the untrained baseline."""
    import torch
    from transformers import AutoConfig

    config_options = {key: value for key, value in options.items() if key != "dtype"}
    config_options.pop("device_map", None)
    config = AutoConfig.from_pretrained(model_location(spec), **config_options)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.random_weights_seed)
        return auto_class.from_config(
            config, dtype=options["dtype"], trust_remote_code=spec.trust_remote_code
        )


def load(spec: ModelSettings, device: str = "cpu", language_model: bool = False) -> LoadedModel:
    """Load tokenizer and model (eval mode) and read their limits.

    The weights are loaded in the dtype they are held in on the device (`weights_dtype_on`:
    on a GPU the forward pass's ``cuda_dtype``, read straight into it, so that no float32
    copy is made; elsewhere ``weights_dtype``) and placed on `device`, or, with
    ``device_map`` (``auto``, ``balanced``, ``sequential``: accelerate's placements),
    spread over the GPUs and CPU memory, layers that fit no GPU offloaded to the CPU;
    inputs then go to the first layer's device.

    With `language_model`, the model with its language-modelling head
    (``AutoModelForCausalLM``), its attention computed eagerly so that it can return its
    attention weights (`extraction.ablation_effects`).
    """
    import torch
    from safetensors import SafetensorError
    from transformers import AutoModel, AutoModelForCausalLM

    tokenizer = load_tokenizer(spec)
    on_gpu = torch.device(device).type == "cuda" or (
        spec.device_map is not None and torch.cuda.is_available()
    )
    held_in = weights_dtype_on(spec, "cuda" if on_gpu else torch.device(device).type)
    options = {"dtype": getattr(torch, held_in), **_pretrained_options(spec)}
    if spec.device_map is not None:
        _require_accelerate(spec)
        options["device_map"] = spec.device_map
    auto_class = AutoModelForCausalLM if language_model else AutoModel
    if language_model:
        options["attn_implementation"] = "eager"
    try:
        model = (
            auto_class.from_pretrained(model_location(spec), **options)
            if spec.random_weights_seed is None
            else _randomly_initialised(spec, options, auto_class)
        )
    except (OSError, ValueError, SafetensorError, pickle.UnpicklingError) as error:
        raise _load_error(spec, "weights", error) from error
    model.eval()
    if spec.device_map is None:
        model.to(device)
    max_length = _max_length(spec, model.config, tokenizer)
    final_norm = find_final_norm(model)
    if spec.last_layer == "before_final_norm" and final_norm is None:
        raise ConfigError(
            f"model {spec.name}: last_layer: before_final_norm, but the model has no final "
            "normalization; use as_returned"
        )
    n_layers = int(model.config.num_hidden_layers)
    return LoadedModel(
        spec=spec,
        tokenizer=tokenizer,
        encoder=RunningTextEncoder(tokenizer),
        model=model,
        n_layers=n_layers,
        hidden_size=int(model.config.hidden_size),
        max_length=max_length,
        revision=(
            resolved_revision(spec)
            if spec.random_weights_seed is None
            else f"random initialisation, seed {spec.random_weights_seed}"
        ),
        file_checksums={path.name: sha256_file(path) for path in files(spec)} or None,
        final_norm=final_norm,
        returns_after_final_norm=final_norm is not None and returns_after(model, final_norm[1]),
        blocks=find_blocks(model, n_layers),
        holds_forward_dtype=on_gpu and not spec.autocast,
    )


BACKEND = Backend(
    check=check,
    count_layers=count_layers,
    known_layer_count=known_layer_count,
    files=files,
    sequential=sequential,
    load=load,
    load_encoder=load_encoder,
    content_window=content_window,
)
