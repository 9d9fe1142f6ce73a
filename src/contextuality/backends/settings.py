"""A model's settings (config ``models.<name>``) as one typed record, `ModelSettings`.

The schema (`contextuality.configuration.schema`) holds every setting's default, choices
and bounds; `ModelSettings.from_config` checks a section against it and fills in what the
section leaves out, so that the steps and the backends take the record as it is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass
from typing import Any

from contextuality.configuration.schema import ANY_MODEL, default, properties, schema
from contextuality.errors import ConfigError

# Config keys of a model that choose where and how its jobs run, not what they compute.
SCHEDULING_KEYS = frozenset({"gpus", "streaming"})
# Settings that only some models have: recorded only where they differ from the schema's
# defaults (or where a backend records them always), so adding them changed no existing
# settings.
OPTIONAL_SETTINGS = (
    "lstm_states",
    "weights_dtype",
    "device_map",
    "segment_words",
    "ablation",
    "autocast",
    "parity_sentences",
)


def model_default(*path: str) -> Any:
    """The schema's default of the model setting at `path` (``model_default("pooling")``,
    ``model_default("ablation", "value")``)."""
    return default("models", ANY_MODEL, *path)


def model_choices(setting: str) -> tuple[str, ...] | None:
    """The values the schema allows a model `setting`, None where it takes any."""
    choices = properties("models", ANY_MODEL)[setting].get("enum")
    return None if choices is None else tuple(choices)


POOLINGS = model_choices("pooling")


@dataclass(frozen=True)
class Ablation:
    """An intervention in the forward pass (Sun et al. 2024, "Massive Activations in Large
    Language Models"): at the output of block `block` (hidden state `block`), set the
    `target` activations to `value`, before the next block reads them.

    target: ``massive``, each activation above both 100 and 1,000 times its sequence's
    median magnitude at that block; ``first_token``, the whole state of each sequence's
    first token (a BOS where the model adds one). value: ``zero``, or ``mean``, their mean
    over the first `calibration_sentences` sentences of the corpus, found by a forward pass
    before the extraction (per dimension for ``massive``).
    """

    block: int
    target: str = model_default("ablation", "target")
    value: str = model_default("ablation", "value")
    calibration_sentences: int = model_default("ablation", "calibration_sentences")


# One item of numbers written as a string: a number, an inclusive range, or every step-th
# number of one ("6", "0-12", "0-32/4").
_NUMBERS_ITEM = re.compile(r"(\d+)(?:-(\d+)(?:/([1-9]\d*))?)?")


def spelled_numbers(key: str, text: str, noun: str) -> tuple[int, ...]:
    """Setting `key` written as a string of `noun` (layers, steps): comma-separated numbers
    and inclusive ranges, ``A-B/S`` every S-th of them (``"0-32/4"``: 0, 4, …, 32), in
    order; ConfigError where it is no such list or names a number twice."""
    numbers: list[int] = []
    for item in text.split(","):
        match = _NUMBERS_ITEM.fullmatch(item.strip())
        first = int(match[1]) if match else 0
        last = int(match[2] or first) if match else 0
        if match is None or last < first:
            raise ConfigError(
                f"{key}: {text!r} is neither a list of {noun} nor {noun} and "
                "ranges such as '0-12' or '0-32/4' (every fourth of 0 to 32)"
            )
        numbers.extend(range(first, last + 1, int(match[3] or 1)))
    twice = sorted({number for number in numbers if numbers.count(number) > 1})
    if twice:
        raise ConfigError(f"{key}: {text!r} names {noun} {twice} twice")
    return tuple(sorted(numbers))


def spelled_layers(name: str, text: str) -> tuple[int, ...]:
    """The layers of ``models.<name>.layers`` written as a string (`spelled_numbers`)."""
    return spelled_numbers(f"models.{name}.layers", text, "layers")


@functools.cache
def _validator() -> Any:
    """A validator of one model's section (the schema's ``models.<model>``), which takes a
    tuple for a list (``layers`` as `ModelSettings` holds them)."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "array", lambda _, instance: isinstance(instance, list | tuple)
    )
    return jsonschema.validators.extend(base, type_checker=checker)(
        schema()["properties"]["models"]["additionalProperties"]
    )


def section_problems(name: str, section: dict[str, Any]) -> list[str]:
    """Each way `section` breaks the schema, one line each, named by its key path
    (``models.<name>.pooling: 'max' is not one of [...]``)."""
    errors = sorted(_validator().iter_errors(section), key=lambda error: str(error.path))
    return [
        ".".join(["models", name, *map(str, error.absolute_path)]) + f": {error.message}"
        for error in errors
    ]


@dataclass(frozen=True)
class ModelSettings:
    """One entry of ``models:`` in the config (see workflow/schemas/config.schema.yaml),
    the schema's defaults filled in; the field order is the order outputs record them in.

    Build it from a config section with `contextuality.backends.model_settings`, which
    also checks the settings against the model's backend.
    """

    name: str
    source: str
    revision: str | None = model_default("revision")
    gguf_file: str | None = model_default("gguf_file")
    loader: str = model_default("loader")
    units: str = model_default("units")
    layers: tuple[int, ...] | None = model_default("layers")
    last_layer: str = model_default("last_layer")
    pooling: str = model_default("pooling")
    add_bos: bool = model_default("add_bos")
    max_length: int | None = model_default("max_length")
    long_sentences: str = model_default("long_sentences")
    window_overlap: int | None = model_default("window_overlap")
    token_budget: int | None = model_default("token_budget")
    storage_dtype: str = model_default("storage_dtype")
    cuda_dtype: str = model_default("cuda_dtype")
    device: str = model_default("device")
    trust_remote_code: bool = model_default("trust_remote_code")
    lstm_states: str = model_default("lstm_states")
    weights_dtype: str = model_default("weights_dtype")
    device_map: str | None = model_default("device_map")
    segment_words: int | None = model_default("segment_words")
    ablation: Ablation | None = None  # none where the section has no ``ablation``
    autocast: bool = model_default("autocast")
    random_weights_seed: int | None = model_default("random_weights_seed")
    parity_sentences: int = model_default("parity_sentences")

    @classmethod
    def from_config(cls, name: str, section: dict[str, Any]) -> ModelSettings:
        """From a config section, checked against the schema (ConfigError, a line per
        problem naming the key); scheduling keys such as ``gpus`` are not settings."""
        problems = section_problems(name, section)
        if problems:
            raise ConfigError("; ".join(problems))
        values = {key: value for key, value in section.items() if key not in SCHEDULING_KEYS}
        if isinstance(values.get("layers"), str):
            values["layers"] = spelled_layers(name, values["layers"])
        if values.get("layers") is not None:  # in order, once each: the same extraction
            values["layers"] = tuple(sorted(values["layers"]))
        if values.get("ablation") is not None:
            values["ablation"] = Ablation(**values["ablation"])
        settings = cls(name=name, **values)
        settings.check_effective()
        return settings

    def check_effective(self) -> None:
        """Refuse (ConfigError naming the key) settings that could not take effect: an
        ablation after every layer extracted (the forward pass stops at the last one, so
        nothing extracted would change), or windows that overlap by their whole length."""
        ablation = self.ablation
        if ablation is not None and self.layers is not None and ablation.block > max(self.layers):
            raise ConfigError(
                f"models.{self.name}.ablation.block: {ablation.block}, after the last layer "
                f"extracted ({max(self.layers)}), so no layer would change; extract a layer "
                f"from {ablation.block} on (models.{self.name}.layers)"
            )
        overlap, length = self.window_overlap, self.max_length
        if self.long_sentences == "window" and None not in (overlap, length) and overlap >= length:
            raise ConfigError(
                f"models.{self.name}.window_overlap: {overlap} is not below max_length "
                f"{length}, so consecutive windows could not move on; set it below the "
                "window's content (max_length less the special tokens)"
            )

    def common_settings(self) -> dict[str, Any]:
        """Every setting that changes the extracted vectors, less the `OPTIONAL_SETTINGS`
        at their defaults; `contextuality.backends.recorded_settings` adds what a backend
        records always. ``from_config(name, settings)`` gives back equal settings."""
        settings = asdict(self)
        del settings["name"]
        for key in OPTIONAL_SETTINGS:
            if settings[key] == self.__dataclass_fields__[key].default:
                del settings[key]
        return settings
