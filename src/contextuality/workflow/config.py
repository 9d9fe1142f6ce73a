"""The workflow's config: checked as a whole, and sliced into what each rule is given.

A rule is given only the part of the config it depends on (Snakemake reruns a job whose
params change), so that editing one model's settings reruns only that model's jobs.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
from pathlib import Path
from typing import Any

from contextuality import backends
from contextuality.backends.base import tokenizer_key
from contextuality.backends.settings import ModelSettings
from contextuality.configuration.schema import (
    ANY_MODEL,
    SCHEMA_PATH,
    default,
    read_yaml,
    setting,
    with_defaults,
)
from contextuality.errors import ConfigError
from contextuality.transforms.fitting import TRANSFORMS
from contextuality.workflow.sweeps import expand_sweeps
from contextuality.workflow.training import expand_trained_sources, trained_run

# The settings a subword index depends on: the tokenizer's, not the model's others.
TOKENIZER_SETTINGS = ("source", "revision", "trust_remote_code", "units")
# Config keys that were renamed: (section, old key) → new key, refused with the new name.
RENAMED_KEYS = {
    ("measures", "correction"): "transform_fit",
    ("geometry", "between_models"): "alignment_between_models",
    ("geometry", "cka_between_models"): "alignment_between_models",
}
# Keys of config ``measures`` that are not the measure step's settings.
_NOT_MEASURE_SETTINGS = ("transforms", "top_words", "transform_fit")


def _did_you_mean(error: Any) -> str:
    """For a key the schema does not know, the known keys it is closest to (a misspelt
    ``split_sentence``: did you mean split_sentences?), else ""."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return ""
    known = list(error.schema.get("properties") or {})
    unknown = [key for key in error.instance if key not in known]
    close = [match for key in unknown for match in difflib.get_close_matches(key, known, n=1)]
    return f"; did you mean {', '.join(close)}?" if close else ""


def check_config(config: dict[str, Any], schema_path: str | Path = SCHEMA_PATH) -> None:
    """Raise ConfigError listing every problem of the config as ``<key path>: <problem>``:
    schema violations (a sweep's included, before it is expanded); then, of the models as
    planned (sweeps expanded), keys that name a model the config does not have, and
    settings that cannot go together.

    One line per problem, instead of the schema dump a bare validation error prints.
    """
    import jsonschema

    schema = read_yaml(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    renamed = [
        f"{section}.{old}: renamed {section}.{new}"
        for (section, old), new in RENAMED_KEYS.items()
        if old in (config.get(section) or {})
    ]
    if renamed:
        raise ConfigError("invalid config:\n  " + "\n  ".join(renamed))
    problems = [
        f"{'.'.join(str(part) for part in error.absolute_path) or '(top level)'}: "
        f"{error.message}{_did_you_mean(error)}"
        for error in sorted(validator.iter_errors(config), key=lambda error: list(error.path))
    ]
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
    config = with_defaults(copy.deepcopy(config))
    expand_sweeps(config)  # the models as planned: each checkpoint of a sweep is one
    expand_trained_sources(config)
    models = config.get("models") or {}
    reference = config.get("reference") or {}
    for model in reference.get("models") or {}:
        if model not in models:
            problems.append(
                f"reference.models.{model}: no model named '{model}' under models "
                f"(configured: {', '.join(models) or 'none'})"
            )
    for family, members in ((config.get("figures") or {}).get("families") or {}).items():
        problems += [
            f"figures.families.{family}: no model named '{model}' under models"
            for model in members
            if model not in models
        ]
    problems += _model_problems(models)
    problems += _ablation_problems(config)
    problems += _unknown_transforms(config, schema)
    problems += _unmeasured_transforms(config)
    problems += _unstreamable(config)
    problems += _neighbour_problems(config)
    problems += _unknown_left_out(config)
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))


def _model_problems(models: dict[str, Any]) -> list[str]:
    """Problems of each model's settings and local files (`backends.check_planned_layers`,
    `backends.check_planned_window`): a misspelt path, a layer out of range, windows that
    could not move on, found while the workflow plans."""
    problems = []
    for name, section in models.items():
        if not isinstance(section, dict) or trained_run(section):
            continue  # a trained checkpoint is made by the workflow, checked as planned
        try:
            spec = backends.model_settings(name, section)
            backends.check_planned_layers(spec)
            backends.check_planned_window(spec)
        except ConfigError as error:
            problems.append(str(error))
    return problems


def _ablation_problems(config: dict[str, Any]) -> list[str]:
    """An ablation to a calibrated mean in a partitioned extraction: each part would
    calibrate on its own first sentences, and its parts would not be one model."""
    partitions = int(config["extraction"]["partitions"])
    if partitions <= 1:
        return []
    problems = []
    for name, section in (config.get("models") or {}).items():
        ablation = section.get("ablation") if isinstance(section, dict) else None
        if ablation and ablation["value"] == "mean":
            problems.append(
                f"models.{name}.ablation: value mean needs one extraction job "
                f"(extraction.partitions is {partitions}); use value: zero or partitions: 1"
            )
    return problems


def ablated_models(config: dict[str, Any]) -> dict[str, str]:
    """Each ablated model (one with an ``ablation``) → the model it ablates: the first in
    config order with the same settings but the ablation and the layers; ablated models
    without one are left out."""
    specs = {name: model_settings(config, name) for name in model_names(config)}

    def unablated(spec: ModelSettings) -> ModelSettings:
        return dataclasses.replace(spec, name="", ablation=None, layers=None)

    found = {}
    for name, spec in specs.items():
        if spec.ablation is None:
            continue
        bases = [
            other
            for other, candidate in specs.items()
            if candidate.ablation is None and unablated(candidate) == unablated(spec)
        ]
        if bases:
            found[name] = bases[0]
    return found


def refuse_duplicate_keys(paths: list[str | Path]) -> None:
    """Refuse (ConfigError naming the file, line and key) a config file in which a mapping
    holds one key twice: YAML lets the last silently win, so a model written twice (or a
    setting) would be planned as only one of them."""
    import yaml

    class _Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise ConfigError(
                        f"{self.name}, line {key_node.start_mark.line + 1}: {key!r} is "
                        f"given twice in one mapping (first on line {seen[key] + 1})"
                    )
                seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep=deep)

    for path in paths:
        if Path(path).is_file():
            with open(path) as handle:
                yaml.load(handle, Loader=_Loader)  # a SafeLoader that refuses repeated keys


def keep_models_named_by(config: dict[str, Any], configfiles: list[str | Path]) -> None:
    """Plan exactly the models the last of `configfiles` (``snakemake --configfile``) that
    names ``models:`` names, each as merged: Snakemake merges every config file onto the
    workflow's config/config.yaml, which would otherwise add the default's models to them."""
    import yaml

    named = None
    for path in configfiles:
        loaded = yaml.safe_load(Path(path).read_text()) or {}
        if isinstance(loaded, dict) and isinstance(loaded.get("models"), dict):
            named = list(loaded["models"])
    if named is not None and isinstance(config.get("models"), dict):
        config["models"] = {name: config["models"][name] for name in named}


def _unknown_transforms(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Problems of every section's ``transforms`` (the sections of `schema` that have the
    key) naming no transform: ``none`` or a correction (`transforms.fitting.CORRECTIONS`)."""
    return [
        f"{section}.transforms: '{name}' is not a transform; the transforms: "
        f"{', '.join(TRANSFORMS)}"
        for section, node in schema["properties"].items()
        if "transforms" in node.get("properties", {})
        for name in setting(config, section, "transforms")
        if name not in TRANSFORMS
    ]


def _unmeasured_transforms(config: dict[str, Any]) -> list[str]:
    """Problems of figures.transforms, static.transforms and degeneration.transforms naming
    a transform that measures.transforms (or its default) does not measure, and of
    geometry.transforms without none (what its figures draw). The geometry's corrections
    are its own: it fits them itself, on the same split."""
    measured = config["measures"]["transforms"]
    problems = [
        f"{section}.transforms: '{transform}' is not in measures.transforms ({', '.join(measured)})"
        for section in ("figures", "static", "degeneration")
        for transform in config[section]["transforms"]
        if transform not in measured
    ]
    if "none" not in config["geometry"]["transforms"]:
        problems.append(
            "geometry.transforms: must include none, the stored vectors that the geometry "
            "figures draw and the corrections are compared with"
        )
    return problems


def _neighbour_problems(config: dict[str, Any]) -> list[str]:
    """geometry.alignment.k at or above geometry.sample_size (or its default): no
    occurrence would have that many neighbours, and every mutual k-NN and CKNNA would be
    NaN."""
    sample, k = config["geometry"]["sample_size"], config["geometry"]["alignment"]["k"]
    if sample is None or not isinstance(k, int) or not isinstance(sample, int) or k < sample:
        return []
    return [
        f"geometry.alignment.k: {k} is not below geometry.sample_size {sample}, so no "
        "occurrence has that many neighbours and every mutual k-NN and CKNNA would be NaN; "
        "set it lower"
    ]


def _unknown_left_out(config: dict[str, Any]) -> list[str]:
    """The problem of ``measures.leave_out`` naming no optional measure: the optional
    measures are the records' (`registry.check_left_out`), not a list in the schema."""
    from contextuality.measures.registry import check_left_out

    try:
        check_left_out(setting(config, "measures", "leave_out"))
    except ConfigError as error:
        return [str(error)]
    return []


def _unstreamable(config: dict[str, Any]) -> list[str]:
    """Problems of a streamed model (``models.<name>.streaming``): its vectors are never
    stored, so it is measured under transform none alone and has no published-results
    comparison (those need every vector)."""
    streamed = streamed_models(config)
    if not streamed:
        return []
    problems = []
    transforms = list(config["measures"]["transforms"])
    if transforms != ["none"]:
        problems.append(
            f"measures.transforms: {transforms}, but {', '.join(streamed)} stream (their "
            "vectors are not stored to be corrected); set it to [none]"
        )
    for model in (config.get("reference") or {}).get("models") or {}:
        if model in streamed:
            problems.append(
                f"reference.models.{model}: a streamed model has none of the paper's "
                "sampled estimators to compare"
            )
    return problems


def model_names(config: dict[str, Any]) -> list[str]:
    """The configured model keys, in config order."""
    return list(config["models"])


def is_streamed(config: dict[str, Any], model: str) -> bool:
    """Whether `model` is measured while it runs, without shards
    (``models.<name>.streaming``: true or a mapping)."""
    return bool(config["models"][model].get("streaming"))


def streamed_models(config: dict[str, Any], streamed: bool = True) -> list[str]:
    """The streamed models (`is_streamed`), in config order; with ``streamed=False``,
    the others."""
    return [model for model in config.get("models") or {} if is_streamed(config, model) == streamed]


def model_settings(config: dict[str, Any], model: str) -> ModelSettings:
    """`model`'s settings as its backend checks them (`backends.model_settings`)."""
    return backends.model_settings(model, config["models"][model])


def vector_settings(config: dict[str, Any], model: str) -> dict[str, Any]:
    """Every setting of `model` that changes a layer's vectors, defaults filled in: what
    its shards record the hash of (`backends.vector_settings`), and what its jobs are given.
    Its ``layers`` are not among them, so that listing more, fewer, or the same layers in
    another order reruns no job of a layer already extracted (a job's own layers are
    those of its outputs, `paths.layer_of_file`)."""
    return backends.vector_settings(model_settings(config, model))


# The model settings that do not change its forward pass: how its word vectors are pooled,
# stored and checked.
WORD_VECTOR_SETTINGS = ("units", "pooling", "storage_dtype", "segment_words", "parity_sentences")


def forward_settings(config: dict[str, Any], model: str) -> dict[str, Any]:
    """The settings of `model` that change its forward pass (`vector_settings` less
    `WORD_VECTOR_SETTINGS`): what a job running the model on sentences of its own (the
    downstream task, the ablation's effects) is given, so that another layer list or word
    pooling does not run it again."""
    settings = vector_settings(config, model)
    return {key: value for key, value in settings.items() if key not in WORD_VECTOR_SETTINGS}


def model_layers(config: dict[str, Any], model: str) -> list[int]:
    """Layers to extract for `model`: its ``layers`` list, else all, read from its config."""
    return list(backends.model_layers(model_settings(config, model)))


def model_gpus(config: dict[str, Any], model: str) -> int:
    """GPUs a scheduler gives `model`'s extraction (``models.<name>.gpus``)."""
    return int(config["models"][model]["gpus"])


def word_sample_size(config: dict[str, Any], model: str) -> int:
    """Occurrences kept per indexed word of a streamed model, for MEV and static vectors."""
    streaming = config["models"][model]["streaming"]
    if isinstance(streaming, dict):  # its default filled in, as the schema fills it
        return int(streaming["word_sample_size"])
    return default("models", ANY_MODEL, "streaming", 1, "word_sample_size")


def streaming_settings(config: dict[str, Any], model: str) -> dict[str, Any] | None:
    """What a streamed model's job is given besides its settings (the measures' settings,
    which fix its samples, and its word sample size); None for a stored model."""
    if not is_streamed(config, model):
        return None
    return {
        "measures": measure_settings(config),
        "word_sample_size": word_sample_size(config, model),
    }


def extraction_partitions(config: dict[str, Any], model: str) -> int:
    """How many jobs extract `model`: ``extraction.partitions`` (default 1), except 1 for a
    model that must read the corpus as one sequence (ELMo with ``lstm_states: carried``)."""
    partitions = int(setting(config, "extraction", "partitions"))
    if partitions < 1:
        raise ConfigError(f"extraction.partitions must be at least 1, not {partitions}")
    return 1 if backends.reads_corpus_in_order(model_settings(config, model)) else partitions


def subword_tokenizers(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each subword index key → the tokenizer settings (`TOKENIZER_SETTINGS`) of the first
    model that uses it; only these, so that editing another setting of a model does not
    rebuild its index."""
    tokenizers: dict[str, dict[str, Any]] = {}
    for model in model_names(config):
        spec = model_settings(config, model)
        if spec.units == "subword":
            settings = backends.recorded_settings(spec)
            tokenizers.setdefault(
                tokenizer_key(spec), {name: settings[name] for name in TOKENIZER_SETTINGS}
            )
    return tokenizers


def subword_index_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The ``index`` settings a subword index takes (its units are the tokenizer's own, so
    neither the word tokenizer nor lowercasing)."""
    return {
        key: config["index"][key] for key in ("min_contexts", "exclude_punctuation", "count_by")
    }


def measure_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The measure step's settings (`settings.MeasureSettings`) from config ``measures``."""
    return {
        key: value for key, value in config["measures"].items() if key not in _NOT_MEASURE_SETTINGS
    }


def transform_fit_settings(config: dict[str, Any], transform: str) -> dict[str, Any]:
    """How a correction is fitted (``measures.transform_fit`` and the seed); none for ``none``."""
    if transform == "none":
        return {}
    return {**config["measures"]["transform_fit"], "seed": config["measures"]["seed"]}


# The geometry's two studies, each its jobs and its settings block (config ``geometry``).
GEOMETRY_STUDIES = ("intrinsic_dimension", "alignment")


def check_geometry_study(study: str) -> None:
    """Refuse a geometry study that is not one of `GEOMETRY_STUDIES`."""
    if study not in GEOMETRY_STUDIES:
        raise ValueError(f"geometry study {study!r}: one of {', '.join(GEOMETRY_STUDIES)}")


def geometry_settings(config: dict[str, Any], study: str | None = None) -> dict[str, Any]:
    """The geometry steps' settings: config ``geometry`` (but ``activate``,
    ``alignment_between_models`` and ``transforms``, which choose jobs), with the measures'
    seed and confidence. With `study` (``intrinsic_dimension`` or ``alignment``), without
    the other study's block: a change of one study's settings reruns its jobs alone."""
    if study is not None:
        check_geometry_study(study)
    choosing_jobs = ("activate", "alignment_between_models", "transforms")
    others = [other for other in GEOMETRY_STUDIES if study not in (None, other)]
    left_out = {*choosing_jobs, *others}
    geometry = {key: value for key, value in config["geometry"].items() if key not in left_out}
    return {
        **geometry,
        "seed": config["measures"]["seed"],
        "confidence": config["measures"]["confidence"],
    }


def geometry_models(config: dict[str, Any]) -> list[str]:
    """The stored models whose geometry (intrinsic dimension, CKA) is computed: every one,
    unless config ``geometry.activate`` is false."""
    if not setting(config, "geometry", "activate"):
        return []
    return streamed_models(config, streamed=False)


def geometry_transforms(config: dict[str, Any]) -> list[str]:
    """The transforms the geometry is computed under (``geometry.transforms``)."""
    return list(setting(config, "geometry", "transforms"))


def degeneration_transforms(config: dict[str, Any]) -> list[str]:
    """The transforms whose measure jobs also compute the degeneration analysis."""
    return list(setting(config, "degeneration", "transforms"))


def degeneration_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The degeneration analysis's settings (`degeneration.DegenerationSettings`, but the
    seed) from config ``degeneration``."""
    chosen = config["degeneration"].items()
    return {key: value for key, value in chosen if key not in SPECIAL_TOKEN_KEYS}


# Keys of config ``degeneration`` that are not the analysis's settings.
SPECIAL_TOKEN_KEYS = ("transforms", "special_token_sentences")


def special_token_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The special-token rows' settings (`steps.special_tokens`): how many sentences they
    are measured on (config ``degeneration.special_token_sentences``) and the seed."""
    return {"sample_size": special_token_sentences(config), "seed": config["measures"]["seed"]}


def special_token_sentences(config: dict[str, Any]) -> int:
    """Sentences the special tokens are measured on (config
    ``degeneration.special_token_sentences``; 0: none)."""
    return setting(config, "degeneration", "special_token_sentences")


def transforms_without_degeneration(config: dict[str, Any]) -> list[str]:
    """The measured transforms whose measure jobs skip the degeneration analysis."""
    return [
        transform
        for transform in config["measures"]["transforms"]
        if transform not in degeneration_transforms(config)
    ]


def figure_transforms(config: dict[str, Any]) -> list[str]:
    """The transforms the paper's figures are drawn under (``figures.transforms``)."""
    return list(setting(config, "figures", "transforms"))


def static_settings(config: dict[str, Any]) -> dict[str, Any]:
    """What the scoring of static vectors takes of config ``static``."""
    return {key: config["static"][key] for key in ("benchmarks", "lowercase", "oov")}


def compared_models(config: dict[str, Any]) -> dict[str, str]:
    """Configured models that have published results: model name → published set
    (`check_config` refuses an entry naming no configured model)."""
    return dict(config.get("reference", {}).get("models", {}))
