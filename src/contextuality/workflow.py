"""Pure helpers behind workflow/rules/common.smk: config access, targets, script running.

Kept here (not in the .smk files) so they are unit-tested without Snakemake. Every
Snakemake script imports `run_step` from here, so the plotting and benchmark modules are
imported only by the helpers that need them.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextuality import __version__
from contextuality.corpus import resolve_data_path, sts_archive_name, text_corpus_files
from contextuality.errors import ConfigError, ContextualityError
from contextuality.models import ModelSpec, selected_layers, tokenizer_key


def check_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Raise ConfigError listing every problem of the config as ``<key path>: <problem>``:
    schema violations, and keys that name a model the config does not have.

    One line per problem, instead of the schema dump a bare validation error prints.
    """
    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    problems = [
        f"{'.'.join(str(part) for part in error.absolute_path) or '(top level)'}: {error.message}"
        for error in sorted(validator.iter_errors(config), key=lambda error: list(error.path))
    ]
    models = config.get("models") or {}
    reference = config.get("reference") or {}
    for model in reference.get("models") or {}:
        if model not in models:
            problems.append(
                f"reference.models.{model}: no model named '{model}' under models "
                f"(configured: {', '.join(models) or 'none'})"
            )
    problems += _unmeasured_transforms(config, schema)
    problems += _unstreamable(config, schema)
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))


def _unmeasured_transforms(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Problems of figures.transforms and static.transforms naming a transform that
    measures.transforms (or its default) does not measure."""
    measures = config.get("measures") or {}
    default = schema["properties"]["measures"]["properties"]["transforms"]["default"]
    measured = measures.get("transforms", default)
    return [
        f"{section}.transforms: '{transform}' is not in measures.transforms ({', '.join(measured)})"
        for section in ("figures", "static", "degeneration")
        for transform in (config.get(section) or {}).get("transforms", [])
        if transform not in measured
    ]


def _unstreamable(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Problems of a streamed model (``models.<name>.streaming``): its vectors are never
    stored, so it is measured under transform none alone, in one job, and has no
    published-results comparison (those need every vector)."""
    streamed = streamed_models(config)
    if not streamed:
        return []
    problems = []
    default = schema["properties"]["measures"]["properties"]["transforms"]["default"]
    transforms = (config.get("measures") or {}).get("transforms", default)
    if list(transforms) != ["none"]:
        problems.append(
            f"measures.transforms: {transforms}, but {', '.join(streamed)} stream (their "
            "vectors are not stored to be corrected); set it to [none]"
        )
    if int((config.get("extraction") or {}).get("partitions", 1)) > 1:
        problems.append(
            f"extraction.partitions: streamed models ({', '.join(streamed)}) run in one job"
        )
    for model in (config.get("reference") or {}).get("models") or {}:
        if model in streamed:
            problems.append(
                f"reference.models.{model}: a streamed model has none of the paper's "
                "sampled estimators to compare"
            )
    return problems


def streamed_models(config: dict[str, Any], streamed: bool = True) -> list[str]:
    """The models measured while they run, without shards (``models.<name>.streaming``:
    true or a mapping), in config order; with ``streamed=False``, the others."""
    return [
        model
        for model, section in (config.get("models") or {}).items()
        if bool((section or {}).get("streaming")) == streamed
    ]


def word_sample_size(config: dict[str, Any], model: str) -> int:
    """Occurrences kept per indexed word of a streamed model, for MEV and static vectors."""
    streaming = config["models"][model].get("streaming")
    return int(streaming.get("word_sample_size", 1000)) if isinstance(streaming, dict) else 1000


def state_paths(config: dict[str, Any], model: str) -> list[str]:
    """A streamed model's state files, one per layer (`streaming.StreamingAccumulator`)."""
    return [
        f"results/streaming/{model}/layer_{layer}.state.h5" for layer in model_layers(config, model)
    ]


def model_pattern(models: list[str]) -> str:
    """A wildcard constraint matching exactly `models` (nothing when it is empty)."""
    return "|".join(map(re.escape, models)) or "(?!)"


def model_names(config: dict[str, Any]) -> list[str]:
    """The configured model keys, in config order."""
    return list(config["models"])


def model_layers(config: dict[str, Any], model: str) -> list[int]:
    """Layers to extract for `model`: its ``layers`` list, else all, read from its config."""
    return list(selected_layers(ModelSpec.from_config(model, config["models"][model])))


def model_files(config: dict[str, Any], model: str) -> list[str]:
    """Files an extraction of `model` reads besides the corpus: an ELMo's options and
    weights (a published release's under resources/elmo/, fetched by rule download_elmo);
    none for transformers models, which load from a directory or the hub's cache."""
    spec = ModelSpec.from_config(model, config["models"][model])
    if spec.loader != "elmo":
        return []
    from contextuality.elmo import elmo_files

    files = elmo_files(spec)
    return [str(files.options), str(files.weights)]


def elmo_releases() -> str:
    """The published ELMo release names, as a wildcard pattern."""
    from contextuality.elmo import RELEASES

    return "|".join(re.escape(release) for release in RELEASES)


def corpus_inputs(config: dict[str, Any]) -> list[str]:
    """Files the sentence table is built from: STS archives under resources/, or the text
    file or the matching files of the text directory (so adding one rebuilds the table)."""
    corpus = config["corpus"]
    if corpus["source"] == "sts":
        return [f"resources/sts/{sts_archive_name(year)}" for year in corpus["sts"]["years"]]
    text = corpus["text"]
    return [
        str(path) for path in text_corpus_files(resolve_data_path(text["path"]), text["pattern"])
    ]


WORD_INDEX = "results/corpus"
INDEX_FILES = {
    "occurrences": "occurrences.parquet",
    "vocab": "vocab.parquet",
    "index": "index.json",
}
TOKENIZER_SETTINGS = ("source", "revision", "trust_remote_code", "units")


def index_directory(config: dict[str, Any], model: str | None = None) -> str:
    """Where the occurrence index that `model`'s shards align with lives: the word index,
    or for ``units: subword`` its tokenizer's subword index (shared by models with the same
    tokenizer source and revision)."""
    if model is None:
        return WORD_INDEX
    spec = ModelSpec.from_config(model, config["models"][model])
    return WORD_INDEX if spec.units == "word" else f"{WORD_INDEX}/subwords/{tokenizer_key(spec)}"


def index_files(config: dict[str, Any], model: str | None = None) -> dict[str, str]:
    """The occurrences, vocabulary and summary (``index``) files of `index_directory`."""
    directory = index_directory(config, model)
    return {name: f"{directory}/{file}" for name, file in INDEX_FILES.items()}


def subword_tokenizers(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each subword index key → the tokenizer settings (source, revision, remote code) of the
    first model that uses it; only these settings, so that editing another setting of a
    model does not rebuild its index."""
    tokenizers: dict[str, dict[str, Any]] = {}
    for model in model_names(config):
        spec = ModelSpec.from_config(model, config["models"][model])
        if spec.units == "subword":
            settings = spec.settings()
            tokenizers.setdefault(
                tokenizer_key(spec), {name: settings[name] for name in TOKENIZER_SETTINGS}
            )
    return tokenizers


def shard_paths(config: dict[str, Any], model: str) -> list[str]:
    """One HDF5 shard per extracted layer of `model`."""
    return [f"results/embeddings/{model}/layer_{layer}.h5" for layer in model_layers(config, model)]


# Partitioned extraction (config ``extraction.partitions``): part K of N of a model is the
# job whose {part} wildcard is "K-of-N" (0-based K), writing under part_K-of-N/.
PART_PATTERN = r"\d+-of-\d+"


def extraction_partitions(config: dict[str, Any], model: str) -> int:
    """How many jobs extract `model`: ``extraction.partitions`` (default 1), except 1 for a
    model that must see the corpus as one sequence (ELMo with ``lstm_states: carried``)."""
    partitions = int((config.get("extraction") or {}).get("partitions", 1))
    if partitions < 1:
        raise ConfigError(f"extraction.partitions must be at least 1, not {partitions}")
    spec = ModelSpec.from_config(model, config["models"][model])
    return 1 if spec.loader == "elmo" and spec.lstm_states == "carried" else partitions


def part_label(part: int, n_parts: int) -> str:
    """The {part} wildcard of part `part` (0-based) of `n_parts`: ``"<part>-of-<n_parts>"``."""
    return f"{part}-of-{n_parts}"


def parse_part(label: str) -> tuple[int, int]:
    """(part, n_parts) of a {part} wildcard (`part_label`)."""
    match = re.fullmatch(r"(\d+)-of-(\d+)", label)
    if match is None or int(match[1]) >= int(match[2]):
        raise ConfigError(f"not a part of a partitioned extraction: {label!r}")
    return int(match[1]), int(match[2])


def _extraction_directory(config: dict[str, Any], model: str, part: str | None = None) -> str:
    """Where `model`'s shards go: results/embeddings/<model>, or for a partitioned model the
    directory of part `part` (a label; None: the {part} wildcard)."""
    if extraction_partitions(config, model) == 1:
        return f"results/embeddings/{model}"
    return f"results/embeddings/{model}/part_{'{part}' if part is None else part}"


def extraction_outputs(config: dict[str, Any], model: str) -> dict[str, Any]:
    """The extraction rule's outputs for `model`: its shards (one per layer) and meta.json,
    those of part {part} (a wildcard) when it is partitioned. Unpartitioned, exactly
    `shard_paths` and results/embeddings/<model>/meta.json."""
    directory = _extraction_directory(config, model)
    return {
        "shards": [f"{directory}/layer_{layer}.h5" for layer in model_layers(config, model)],
        "meta": f"{directory}/meta.json",
    }


def extraction_log(config: dict[str, Any], model: str, kind: str = "logs") -> str:
    """The extraction rule's log (`kind` ``logs``) or benchmark (``benchmarks``) file."""
    extension = "log" if kind == "logs" else "tsv"
    if extraction_partitions(config, model) == 1:
        return f"{kind}/extract/{model}.{extension}"
    return f"{kind}/extract/{model}/part_{{part}}.{extension}"


def partitioned_models(config: dict[str, Any], partitioned: bool = True) -> list[str]:
    """The models extracted in parts (`extraction_partitions` > 1), in config order; with
    ``partitioned=False``, the others that store shards (not `streamed_models`). (Their
    rules differ in their script, which Snakemake takes for the rule's code: the
    unpartitioned rule keeps today's, so that existing results are not rerun.)"""
    return [
        model
        for model in streamed_models(config, streamed=False)
        if (extraction_partitions(config, model) > 1) == partitioned
    ]


def extraction_metas(config: dict[str, Any], model: str) -> list[str]:
    """`model`'s meta.json files: one, one per part, or a streamed model's."""
    if model in streamed_models(config):
        return [f"results/streaming/{model}/meta.json"]
    n_parts = extraction_partitions(config, model)
    if n_parts == 1:
        return [f"results/embeddings/{model}/meta.json"]
    return [
        f"{_extraction_directory(config, model, part_label(part, n_parts))}/meta.json"
        for part in range(n_parts)
    ]


def layer_shards(config: dict[str, Any], model: str, layer: int | str) -> list[str]:
    """The shards that hold layer `layer` of `model`: its one shard, or its parts' in order,
    which the measure and static-vector steps gather (`shards.load_shards`)."""
    n_parts = extraction_partitions(config, model)
    if n_parts == 1:
        return [f"results/embeddings/{model}/layer_{layer}.h5"]
    return [
        f"{_extraction_directory(config, model, part_label(part, n_parts))}/layer_{layer}.h5"
        for part in range(n_parts)
    ]


def measure_memory_mb(wildcards: Any, input: Any, attempt: int = 1) -> int:
    """Memory (MB) to ask a scheduler for a measure job: 3 × its inputs (the float16 shard,
    mostly) plus 500 MB, as the job peaks at 1.3–1.4 × its layer in float32, i.e. 2.6–2.8 ×
    the float16 shard (bench/results/measure-memory-cpu.md), over an interpreter of about
    200 MB; doubled on each retry."""
    return int(500 + 3 * input.size_mb) * 2 ** (attempt - 1)


def layer_outputs(
    config: dict[str, Any], model: str, transform: str, suffix: str, step: str = "measures"
) -> list[str]:
    """One output of a measure job for every layer of `model` under `transform`: for step
    ``measures`` the ``.json`` summaries or ``.parquet`` per-word tables, for step
    ``degeneration`` the ``.words.parquet``, ``.bins.parquet`` or ``.cone.parquet`` tables."""
    return [
        f"results/{step}/{model}/{transform}/layer_{layer}{suffix}"
        for layer in model_layers(config, model)
    ]


def degeneration_transforms(config: dict[str, Any]) -> list[str]:
    """The transforms whose measure jobs also compute the degeneration analysis."""
    return list(config.get("degeneration", {}).get("transforms", ["none"]))


def transform_pattern(transforms: list[str]) -> str:
    """A wildcard constraint matching exactly `transforms` (nothing when it is empty)."""
    return "|".join(transforms) or "(?!)"


def every_layer_output(config: dict[str, Any], suffix: str, step: str = "measures") -> list[str]:
    """`layer_outputs` of every model and transform of `step`: the summary JSON files the
    summary table reads (every measured transform), or the frequency-bin tables the
    degeneration table reads (`degeneration_transforms`)."""
    models = model_names(config)
    if step == "degeneration":
        transforms = degeneration_transforms(config)
        models = streamed_models(config, streamed=False)  # it needs every vector
    else:
        transforms = config["measures"]["transforms"]
    return [
        path
        for model in models
        for transform in transforms
        for path in layer_outputs(config, model, transform, suffix, step)
    ]


def figure_paths(config: dict[str, Any], extensions: tuple[str, ...] = ("png", "pdf")) -> list[str]:
    """Every figure in every format: figures 1–4 of the paper and the word views under each
    of figures.transforms (none's in results/figures/, others' in a folder of their own),
    the degeneration figures of each model and of degeneration.transforms, and, with two or
    more transforms,
    the comparison of the corrections."""
    from contextuality.degeneration_figures import DEGENERATION_FIGURES
    from contextuality.figures import FIGURES

    folders = {
        transform: "results/figures" if transform == "none" else f"results/figures/{transform}"
        for transform in config.get("figures", {}).get("transforms", ["none"])
    }
    names = [f"{folder}/{name}" for folder in folders.values() for name in FIGURES]
    names += [
        f"results/figures/degeneration/{model}.{transform}.{kind}"
        for model in streamed_models(config, streamed=False)
        for transform in degeneration_transforms(config)
        for kind in DEGENERATION_FIGURES
    ]
    if len(config["measures"]["transforms"]) > 1:
        names.append("results/figures/transforms")
    return [f"{name}.{extension}" for name in names for extension in extensions]


def compared_models(config: dict[str, Any]) -> dict[str, str]:
    """Configured models that have published results: model name → published set
    (`check_config` refuses an entry naming no configured model)."""
    return dict(config.get("reference", {}).get("models", {}))


def published_files(published: str) -> list[str]:
    """Where the workflow keeps the published files of one of the paper's models."""
    from contextuality.reference import FILES

    return [f"resources/reference/ethayarajh2019/{published}/{file}" for file in FILES]


def benchmark_files(config: dict[str, Any]) -> list[str]:
    """The word-benchmark files the configured benchmarks read, under resources/."""
    from contextuality.benchmarks import BENCHMARKS

    names = config["static"]["benchmarks"]
    files = dict.fromkeys(path for name in names for path in BENCHMARKS[name].files)
    return [f"resources/benchmarks/{path}" for path in files]


def static_score_paths(config: dict[str, Any]) -> list[str]:
    """Score tables of every static embedding under every configured protocol: each model,
    method and layer, and each comparison embedding named in config."""
    static = config["static"]
    return [
        f"results/static/{model}/{transform}/{method}/layer_{layer}.{protocol}.scores.tsv"
        for protocol in static["protocols"]
        for model in model_names(config)
        for transform in static["transforms"]
        for method in static["methods"]
        for layer in model_layers(config, model)
    ] + [
        f"results/static/compare/{name}.{protocol}.scores.tsv"
        for protocol in static["protocols"]
        for name in static["compare"]
    ]


def static_labels(wildcards: dict[str, str]) -> dict[str, Any]:
    """Label columns of a score table, from the wildcards of its rule."""
    if "name" in wildcards:
        labels = {
            "source": "compare",
            "model": wildcards["name"],
            "transform": "",
            "method": "",
            "layer": None,
        }
    else:
        labels = {
            "source": "this run",
            "model": wildcards["model"],
            "transform": wildcards["transform"],
            "method": wildcards["method"],
            "layer": int(wildcards["layer"]),
        }
    return {**labels, "protocol": wildcards["protocol"]}


def final_outputs(config: dict[str, Any]) -> list[str]:
    """Everything ``snakemake`` builds by default."""
    return [
        "results/corpus/sentences.parquet",
        "results/corpus/index.json",
        *[path for model in model_names(config) for path in extraction_metas(config, model)],
        *every_layer_output(config, ".json"),
        "results/tables/measures.tsv",
        *[
            f"results/tables/words/{model}.{transform}.tsv"
            for model in model_names(config)
            for transform in config["measures"]["transforms"]
        ],
        "results/tables/degeneration.tsv",
        *figure_paths(config),
        *(
            ["results/tables/word_benchmarks.tsv", "results/figures/word_benchmarks.png"]
            if config.get("static", {}).get("activate", False)
            else []
        ),
        *[
            path
            for model in compared_models(config)
            for path in (
                f"results/reference/{model}.tsv",
                f"results/figures/reference_{model}.png",
            )
        ],
    ]


def run_step(log_path: str | Path | None, step: Callable[[], Any]) -> None:
    """Run a step from a Snakemake script with its log file as stderr and logging target.

    A ContextualityError (bad input, unloadable model, mismatched shard) ends the job with
    its message and exit status 1 instead of a traceback.
    """
    if log_path is not None:
        sys.stderr = open(log_path, "w", buffering=1)  # noqa: SIM115 (kept open for the job)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
    )
    logging.getLogger(__name__).info("contextuality %s", __version__)
    try:
        step()
    except ContextualityError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
