"""What every model backend shares: its settings, what a loaded model offers, layer numbering.

A model is named by a Hugging Face hub id (``bert-base-cased``), a local directory, or
``package:<module>/<dir>`` for weights an installed Python package ships; a backend
(`contextuality.backends`, chosen by the ``loader`` setting) knows how to read it.

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from contextuality.backends.settings import ModelSettings
from contextuality.errors import ConfigError, ModelLoadError
from contextuality.files.fetch import resolve_data_path

Span = tuple[int, int]


def window_overlap_problem(spec: ModelSettings, room: int, max_length: int) -> str | None:
    """Why `spec`'s windows could not move on, where ``window_overlap`` is not below `room`,
    the content subwords a window of `max_length` holds besides the special tokens; None
    where they can (or sentences are not windowed)."""
    overlap = spec.window_overlap
    if spec.long_sentences != "window" or overlap is None or overlap < room:
        return None
    return (
        f"models.{spec.name}.window_overlap: {overlap} leaves no step in a window of {room} "
        f"content subwords (max_length {max_length} less the special tokens); set it below "
        f"{room}"
    )


def no_content_window(spec: ModelSettings) -> tuple[int, int] | None:
    """For a backend whose windows are not known before its model is loaded."""
    return None


# Padded subwords per forward batch when a model sets no token_budget: a GPU is fastest
# with large batches (BERT-base and GPT-2 shapes on an H100: 1.1-1.3 times the tokens/s
# of 8,192 at 32,768, fewer at 131,072, which pads more; bench/results/extraction-cuda-*);
# on CPU, 2,048 runs MiniLM a fifth faster than 8,192 (its activations stay in cache;
# bench/results/extraction-cpu-budget.md).
DEFAULT_TOKEN_BUDGET = {"cuda": 32768, "cpu": 2048}


def torch_device(requested: Any, setting: str = "device") -> Any:
    """The ``torch.device`` a device setting other than ``auto`` names: any string torch
    parses (``cpu``, ``cuda``, ``cuda:N``, ``mps``, ``xpu``, ``xpu:N``, ...); anything else
    (``tpu``, ``gpu``, ``CUDA``) is a ConfigError naming the `setting`, whatever the
    machine."""
    import torch

    try:
        if not isinstance(requested, str):
            raise TypeError(requested)
        return torch.device(requested)
    except (RuntimeError, TypeError, ValueError):
        raise ConfigError(
            f"{setting}: {requested} is not a device torch knows; use auto (a GPU where there "
            "is one), cpu, cuda, cuda:N, mps, xpu or xpu:N"
        ) from None


def devices_seen(kind: str) -> int:
    """How many devices of `kind` (``cuda``, ``mps``, ``xpu``, ...) torch sees here: 0
    where this torch build or this machine has none (mps on a torch built without MPS)."""
    import torch

    if kind == "cpu":
        return 1
    if kind == "mps":
        return 1 if torch.backends.mps.is_available() else 0
    backend = getattr(torch, kind, None)  # torch.cuda, torch.xpu, torch.mtia, ...
    is_available = getattr(backend, "is_available", None)
    if not callable(is_available) or not is_available():
        return 0
    count = getattr(backend, "device_count", None)
    return count() if callable(count) else 1


def resolved_device(requested: str, setting: str = "device") -> str:
    """The torch device a ``device`` setting names: ``auto`` is a GPU when torch sees one,
    else the CPU; any other value torch parses (`torch_device`) as given, where there is
    one: a device asked for that this torch build or machine does not have (``cuda:1``
    with one GPU, ``mps`` on a torch without MPS) is a ConfigError naming the `setting`."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    device = torch_device(requested, setting)
    visible = devices_seen(device.type)
    if (device.index or 0) >= visible:
        name = "GPU" if device.type == "cuda" else f"{device.type} device"
        seen = f"{visible} {name}{'s' if visible > 1 else ''}" if visible else f"no {name}"
        raise ConfigError(
            f"{setting}: {requested} asked for, but torch sees {seen} here; use auto "
            "(a GPU where there is one) or cpu"
        )
    return requested


def weights_dtype_on(spec: ModelSettings, device_type: str) -> str:
    """The dtype a model's weights are held in on a device of `device_type`: on a GPU its
    ``cuda_dtype``, so that every operation of the forward pass runs in it as the bare
    model runs (unless ``autocast: true``, which keeps ``weights_dtype`` and autocasts the
    matrix products); elsewhere ``weights_dtype``."""
    if device_type == "cuda" and not spec.autocast:
        return spec.cuda_dtype
    return spec.weights_dtype


def token_budget(spec: ModelSettings, device_type: str) -> int:
    """The token budget `spec` runs with on a device of `device_type` (``cuda``, ``cpu``):
    its own, or `DEFAULT_TOKEN_BUDGET` for the device (a GPU's for other accelerators)."""
    if spec.token_budget is not None:
        return spec.token_budget
    return DEFAULT_TOKEN_BUDGET.get(device_type, DEFAULT_TOKEN_BUDGET["cuda"])


def tokenizer_key(spec: ModelSettings) -> str:
    """Name of the subword index of `spec`'s tokenizer, safe as a path component.

    Models with the same source and revision share one subword index.
    """
    key = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.source).strip("_.")
    return f"{key}@{spec.revision}" if spec.revision else key


def is_local(spec: ModelSettings) -> bool:
    """Whether `spec`'s source is on local disk, not a hub id: written as a path (starting
    with ``/``, ``.`` or ``~``), as ``package:<module>/<dir>``, or a relative directory
    that exists (``models/my-bert``, as transformers itself reads it)."""
    if spec.source.startswith(("package:", "/", ".", "~")):
        return True
    return Path(spec.source).is_dir()


def source_problem(spec: ModelSettings) -> str | None:
    """What is wrong with a source that is neither a local directory nor plausibly a hub
    id: a relative path whose first folder exists here but not the directory itself (a
    typo in a local path, which would otherwise be looked up on the hub); None if fine."""
    if is_local(spec):
        return None
    path = Path(spec.source)
    if len(path.parts) > 1 and Path(path.parts[0]).is_dir():
        return (
            f"no directory {spec.source} here (its folder {path.parts[0]}/ exists): a "
            "local model is a directory that exists, a hub id is written org/name"
        )
    return None


def model_location(spec: ModelSettings) -> str:
    """What to hand to a loader: a directory path or a hub id.

    A source written as a path (starting with ``/``, ``.`` or ``~``) or as
    ``package:<module>/<dir>`` must be a directory.
    """
    if not is_local(spec):
        return spec.source
    location = resolve_data_path(spec.source).expanduser()
    if not location.is_dir():
        raise ModelLoadError(f"model {spec.name}: model directory {spec.source} not found")
    return str(location)


def selected_layers(spec: ModelSettings, n_layers: int) -> tuple[int, ...]:
    """The hidden-state indices to extract: the config's ``layers`` or all of 0..`n_layers`."""
    if spec.layers is not None:
        return tuple(sorted(set(spec.layers)))
    return tuple(range(n_layers + 1))


@dataclass(frozen=True)
class RunningTextEncoding:
    """One sentence tokenized as running text: the ids of its content tokens (a subword id,
    or for ELMo a row of character ids per word), the special tokens the tokenizer puts
    before and after it (e.g. ``[CLS]`` and ``[SEP]``), and the character span
    [start, end) of each content token in the sentence."""

    prefix: list[Any]
    content: Sequence[Any]
    suffix: list[Any]
    offsets: list[Span]


class TextEncoder(Protocol):
    """How a model reads sentences: its padding and BOS token ids, and each sentence's
    tokens with their character spans."""

    pad_token_id: int | None
    bos_token_id: int | None

    def encode(
        self, sentences: list[str], spans: list[list[Span]] | None = None
    ) -> list[RunningTextEncoding]:
        """Each sentence's tokens; `spans`, the words' character spans, for a model that
        reads words (ELMo), unused by one that reads running text."""
        ...

    def subword_strings(self, encodings: list[RunningTextEncoding]) -> list[list[str]]:
        """The content tokens of each encoding as the tokenizer writes them (``##s``)."""
        ...


@dataclass
class LoadedModel:
    """A model ready for extraction, with what is known about it.

    tokenizer: the backend's own tokenizer (a transformers tokenizer, ELMo's characters).
    encoder: how sentences become the model's inputs (`TextEncoder`).
    final_norm: the name and module of the model's final normalization, or None.
    returns_after_final_norm: whether the last hidden state returned comes after it.
    described_layers: what the layers are, where the model is not a transformer (ELMo).
    file_checksums: SHA-256 of the files loaded, where they are not a hub revision.
    blocks: the module holding the model's list of blocks and the list's attribute name,
        where a forward pass can be cut short by running a prefix of that list
        (`only_blocks_up_to`); None where it cannot.
    sequential: whether the model must see the sentences one at a time in corpus order,
        each continuing from the state the previous one left (``model.reset_states()``
        starts a pass): ELMo with ``lstm_states: carried``.
    holds_forward_dtype: whether the weights are held in the forward pass's dtype
        (`weights_dtype_on`), so that the pass runs without autocast.
    """

    spec: ModelSettings
    tokenizer: Any
    encoder: TextEncoder
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
    holds_forward_dtype: bool = False

    @property
    def n_parameters(self) -> int | None:
        """The model's number of parameters (None for a model that does not list them)."""
        parameters = getattr(self.model, "parameters", None)
        return None if parameters is None else sum(int(p.numel()) for p in parameters())

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


@contextlib.contextmanager
def only_blocks_up_to(blocks: tuple[Any, str] | None, last: int) -> Iterator[None]:
    """Within the block, the model runs only its first `last` blocks (`blocks` as
    `LoadedModel.blocks`; None leaves the model whole)."""
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


@dataclass(frozen=True)
class Backend:
    """One kind of model, as `contextuality.backends` registers it.

    check(spec): refuse the settings that mean nothing for this kind (ConfigError).
    recorded_settings: `settings.OPTIONAL_SETTINGS` this kind records even at their defaults.
    count_layers(spec): L, the number of layers, read without loading the weights.
    known_layer_count(spec): L where local files give it without loading any library (the
        workflow checks ``layers`` with it while it plans), None where they cannot.
    files(spec): the local files an extraction reads, so that a workflow can track them.
    sequential(spec): whether the model must read the corpus as one sequence, in order.
    load(spec, device): the model on `device`, ready to extract.
    load_encoder(spec): its `TextEncoder` alone (for an index of its subwords).
    content_window(spec): (content subwords, max_length) of a window, from the tokenizer and
        config alone, so that the workflow checks ``window_overlap`` while it plans; None
        where that is not known without loading the model.
    """

    check: Callable[[ModelSettings], None]
    count_layers: Callable[[ModelSettings], int]
    known_layer_count: Callable[[ModelSettings], int | None]
    files: Callable[[ModelSettings], list[Path]]
    sequential: Callable[[ModelSettings], bool]
    load: Callable[[ModelSettings, str], LoadedModel]
    load_encoder: Callable[[ModelSettings], TextEncoder]
    recorded_settings: tuple[str, ...] = ()
    content_window: Callable[[ModelSettings], tuple[int, int] | None] = no_content_window
