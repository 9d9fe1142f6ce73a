"""Where the workflow keeps everything: each rule's paths, and the targets of a run.

The layout: ``resources/`` holds downloads (STS archives, ELMo releases, benchmarks, the
paper's published results); ``results/corpus/`` the sentence table and the occurrence
indexes; ``results/embeddings/<model>/`` a model's shards (``part_K-of-N/`` for a
partitioned one) and ``results/streaming/<model>/`` a streamed model's state files;
``results/measures|degeneration/<model>/<transform>/`` each layer's tables;
``results/tables/``, ``results/figures/`` and ``results/static/`` what gathers them.
"""

from __future__ import annotations

import re
from typing import Any

from contextuality.backends.base import tokenizer_key
from contextuality.configuration.schema import setting
from contextuality.corpus.index import INDEX_FILE_NAMES
from contextuality.errors import ConfigError
from contextuality.measures.summary import Census
from contextuality.workflow.config import (
    degeneration_transforms,
    extraction_partitions,
    figure_transforms,
    geometry_models,
    is_streamed,
    model_layers,
    model_names,
    model_settings,
    special_token_sentences,
    streamed_models,
    subword_tokenizers,
)
from contextuality.workflow.sweeps import sweeps

WORD_INDEX = "results/corpus"
# Partitioned extraction (config ``extraction.partitions``): part K of N of a model is the
# job whose {part} wildcard is "K-of-N" (0-based K), writing under part_K-of-N/.
PART_PATTERN = r"\d+-of-\d+"


def pattern(values: list[str]) -> str:
    """A wildcard constraint matching exactly `values` (nothing when there are none)."""
    return "|".join(map(re.escape, values)) or "(?!)"


def index_directory(config: dict[str, Any], model: str | None = None) -> str:
    """Where the occurrence index that `model`'s rows align with lives: the word index,
    or for ``units: subword`` its tokenizer's subword index (shared by models with the same
    tokenizer source and revision)."""
    if model is None:
        return WORD_INDEX
    spec = model_settings(config, model)
    return WORD_INDEX if spec.units == "word" else f"{WORD_INDEX}/subwords/{tokenizer_key(spec)}"


def index_files(config: dict[str, Any], model: str | None = None) -> dict[str, str]:
    """The occurrences, vocabulary and summary files of `index_directory`, named as
    `index.IndexFiles` names them."""
    directory = index_directory(config, model)
    return {name: f"{directory}/{file}" for name, file in INDEX_FILE_NAMES.items()}


def index_summaries(config: dict[str, Any]) -> list[str]:
    """The summary of the occurrence index each configured model's rows align with
    (`index_directory`), in `model_names`' order: the corpus table's rows."""
    return [index_files(config, model)["summary"] for model in model_names(config)]


def part_label(part: int, n_parts: int) -> str:
    """The {part} wildcard of part `part` (0-based) of `n_parts`: ``"<part>-of-<n_parts>"``."""
    return f"{part}-of-{n_parts}"


def parse_part(label: str | None) -> tuple[int, int]:
    """(part, n_parts) of a {part} wildcard (`part_label`); (0, 1) for none."""
    if label is None:
        return 0, 1
    match = re.fullmatch(r"(\d+)-of-(\d+)", label)
    if match is None or int(match[1]) >= int(match[2]):
        raise ConfigError(f"not a part of a partitioned extraction: {label!r}")
    return int(match[1]), int(match[2])


def extraction_directory(config: dict[str, Any], model: str, part: str = "{part}") -> str:
    """Where `model`'s extraction writes: results/embeddings/<model> (a streamed model's
    results/streaming/<model>), or for a partitioned model the directory of part `part`
    (a label, or the {part} wildcard) inside it."""
    kind = "streaming" if is_streamed(config, model) else "embeddings"
    if extraction_partitions(config, model) == 1:
        return f"results/{kind}/{model}"
    return f"results/{kind}/{model}/part_{part}"


def layer_file(config: dict[str, Any], model: str, layer: int | str) -> str:
    """A layer's file in an extraction directory: a shard, or a streamed layer's state."""
    return f"layer_{layer}.state.h5" if is_streamed(config, model) else f"layer_{layer}.h5"


def layer_of_file(path: str) -> int:
    """The layer whose file (`layer_file`) `path` is: how an extraction or merge job knows
    its own layers, which its outputs name (`stored.layers_to_write`)."""
    match = re.fullmatch(r"layer_(\d+)(\.state)?\.h5", path.rsplit("/", 1)[-1])
    if match is None:
        raise ConfigError(f"{path}: not a layer's file of an extraction")
    return int(match[1])


def extraction_rule(config: dict[str, Any], model: str) -> str:
    """The name of `model`'s extraction rule: ``stream_<model>`` for a streamed model,
    else ``extract_<model>``."""
    return f"{'stream' if is_streamed(config, model) else 'extract'}_{model}"


def extraction_inputs(config: dict[str, Any], model: str) -> dict[str, Any]:
    """What `model`'s extraction reads besides the model's own files (which the rules add,
    workflow/rules/common.smk's ``model_file_inputs``): the sentence table and its
    occurrence index."""
    return {"sentences": "results/corpus/sentences.parquet", **index_files(config, model)}


def extraction_log(config: dict[str, Any], model: str, kind: str = "logs") -> str:
    """The extraction rule's log (`kind` ``logs``) or benchmark (``benchmarks``) file."""
    extension = "log" if kind == "logs" else "tsv"
    step = "stream" if is_streamed(config, model) else "extract"
    if extraction_partitions(config, model) == 1:
        return f"{kind}/{step}/{model}.{extension}"
    return f"{kind}/{step}/{model}/part_{{part}}.{extension}"


def part_directories(config: dict[str, Any], model: str, merged: bool = True) -> list[str]:
    """Every directory `model`'s extraction writes: one, or one per part; for a streamed
    model the one its parts are merged into, unless not `merged`."""
    n_parts = extraction_partitions(config, model)
    if merged and is_streamed(config, model):
        return [f"results/streaming/{model}"]
    if n_parts == 1:
        return [extraction_directory(config, model)]
    return [
        extraction_directory(config, model, part_label(part, n_parts)) for part in range(n_parts)
    ]


def merged_streams(config: dict[str, Any]) -> list[str]:
    """The streamed models extracted in parts, whose parts a merge rule merges."""
    return [model for model in streamed_models(config) if extraction_partitions(config, model) > 1]


def extraction_metas(config: dict[str, Any], model: str) -> list[str]:
    """`model`'s meta.json files: one, one per part, or a streamed model's."""
    return [f"{directory}/meta.json" for directory in part_directories(config, model)]


def layer_shards(config: dict[str, Any], model: str, layer: int | str) -> dict[str, Any]:
    """What holds layer `layer` of `model`, as a rule's named input: ``shard``, its one
    shard or its parts' in order (the steps gather them, `storage.shards.load_shards`), or
    ``state``, a streamed layer's state file."""
    files = [
        f"{directory}/{layer_file(config, model, layer)}"
        for directory in part_directories(config, model)
    ]
    return {"state": files[0]} if is_streamed(config, model) else {"shard": files}


def model_shards(config: dict[str, Any], model: str) -> dict[str, list[str]]:
    """Every layer's shards of stored model `model`, as a rule's named inputs
    ``layer_<L>`` (`layer_shards`)."""
    return {
        f"layer_{layer}": layer_shards(config, model, layer)["shard"]
        for layer in model_layers(config, model)
    }


def measure_memory_mb(wildcards: Any, input: Any, attempt: int = 1) -> int:
    """Memory (MB) to ask a scheduler for a measure job: 3 × its inputs (the float16 shard,
    mostly) plus 500 MB for the interpreter, above the peaks `bench/measure_memory.py`
    measures, as a test checks; doubled on each retry."""
    return int(500 + 3 * input.size_mb) * 2 ** (attempt - 1)


def layer_outputs(
    config: dict[str, Any], model: str, transform: str, suffix: str, step: str = "measures"
) -> list[str]:
    """One output of a measure job for every layer of `model` under `transform`: for step
    ``measures`` the ``.json`` summaries or ``.parquet`` per-word tables, for step
    ``degeneration`` the ``.words.parquet``, ``.bins.parquet``, ``.cone.parquet`` or
    ``.positions.parquet`` tables."""
    return [
        f"results/{step}/{model}/{transform}/layer_{layer}{suffix}"
        for layer in model_layers(config, model)
    ]


def every_layer_output(
    config: dict[str, Any], suffix: str, step: str = "measures", transform: str | None = None
) -> list[str]:
    """`layer_outputs` of every model and transform of `step`: the summary JSON files the
    measures table reads (every measured transform), or the frequency-bin tables the
    degeneration table reads (`config.degeneration_transforms`; stored models only, as it
    needs every vector). With `transform`, that transform's alone."""
    models = model_names(config)
    if step == "degeneration":
        transforms = degeneration_transforms(config)
        models = streamed_models(config, streamed=False)
    else:
        transforms = config["measures"]["transforms"]
    if transform is not None:
        transforms = [transform]
    return [
        path
        for model in models
        for transform in transforms
        for path in layer_outputs(config, model, transform, suffix, step)
    ]


def special_token_inputs(config: dict[str, Any], model: str) -> dict[str, Any]:
    """What `model`'s special-token job reads: what its extraction reads, and its
    extraction's meta.json (of every part), so that the model is loaded by one job at a
    time and a model that cannot be loaded fails its extraction first."""
    return {**extraction_inputs(config, model), "metas": extraction_metas(config, model)}


def special_token_files(config: dict[str, Any]) -> list[str]:
    """Each stored model's special-token rows of the position profile, which the
    positions table gathers (none where no transform has the degeneration analysis, or
    where ``degeneration.special_token_sentences`` is 0)."""
    if not degeneration_transforms(config) or not special_token_sentences(config):
        return []
    return [
        f"results/degeneration/{model}/special_tokens.parquet"
        for model in streamed_models(config, streamed=False)
    ]


def figures_directory(transform: str) -> str:
    """Where the paper's figures under `transform` go: results/figures/ for none."""
    return "results/figures" if transform == "none" else f"results/figures/{transform}"


def figure_paths(config: dict[str, Any], extensions: tuple[str, ...] = ("png", "pdf")) -> list[str]:
    """Every figure in every format: figures 1–4 of the paper and the word views under each
    of figures.transforms, the degeneration figures of each stored model under each of
    degeneration.transforms, and, with two or more transforms, the comparison of the
    corrections."""
    from contextuality.figures.specs import DEGENERATION_FIGURES

    names = [
        f"{figures_directory(transform)}/{name}"
        for transform in figure_transforms(config)
        for name in paper_figure_names(config)
    ]
    names += [
        f"results/figures/degeneration/{model}.{transform}.{kind}"
        for model in streamed_models(config, streamed=False)
        for transform in degeneration_transforms(config)
        for kind in DEGENERATION_FIGURES
    ]
    if len(config["measures"]["transforms"]) > 1:
        names.append("results/figures/transforms")
    return [f"{name}.{extension}" for name in names for extension in extensions]


def absent_rows(config: dict[str, Any]) -> set[str]:
    """The summary rows no layer of the run has: those ``measures.leave_out`` leaves out
    and, where every model streams, those a streamed layer lacks (`registry.not_streamed`)."""
    from contextuality.measures.registry import left_out_rows, not_streamed

    absent = set(left_out_rows(setting(config, "measures", "leave_out")))
    if not streamed_models(config, streamed=False):
        absent |= set(not_streamed())
    return absent


def paper_figure_names(config: dict[str, Any]) -> list[str]:
    """The figures of the measures (`figures.specs.FIGURES`) that have a measure to draw:
    not those whose every series is an absent row (`absent_rows`)."""
    from contextuality.figures.specs import FIGURES

    absent = absent_rows(config)
    return [
        name
        for name, spec in FIGURES.items()
        if any(series.measure not in absent for series in spec.series)
    ]


def censuses(config: dict[str, Any]) -> list[Census]:
    """The tables the measures' rows gather across layers (`record.Measure.census`), of
    the rows some layer of the run has (not `absent_rows`), in the catalogue's order."""
    from contextuality.measures.registry import MEASURES

    absent = absent_rows(config)
    return [
        record.census
        for record in MEASURES
        if record.census is not None and record.census.row not in absent
    ]


def census_tables(config: dict[str, Any]) -> list[str]:
    """The census tables of the run (`censuses`), ``results/tables/<name>.tsv``."""
    return [f"results/tables/{census.name}.tsv" for census in censuses(config)]


def ablation_alignment(config: dict[str, Any]) -> list[str]:
    """The alignment table, for the ablation figures, where the geometry runs."""
    return ["results/tables/alignment.tsv"] if geometry_models(config) else []


def positions_table_files(config: dict[str, Any]) -> list[str]:
    """The position profiles' table, where some transform has the degeneration analysis."""
    return ["results/tables/positions.tsv"] if degeneration_transforms(config) else []


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


def static_embeddings(config: dict[str, Any], compared: bool = True) -> list[str]:
    """Every static embedding this run builds: each model, transform, method and layer
    (``<model>/<transform>/<method>/layer_<L>``), and, where `compared`, each comparison
    embedding named in config (``compare/<name>``)."""
    static = config["static"]
    built = [
        f"{model}/{transform}/{method}/layer_{layer}"
        for model in model_names(config)
        for transform in static["transforms"]
        for method in static["methods"]
        for layer in model_layers(config, model)
    ]
    return built + ([f"compare/{name}" for name in static["compare"]] if compared else [])


def static_score_paths(config: dict[str, Any]) -> list[str]:
    """Score tables of every static embedding (`static_embeddings`) under every configured
    protocol (``results/static/<embedding>.<protocol>.scores.tsv``)."""
    return [
        f"results/static/{embedding}.{protocol}.scores.tsv"
        for protocol in config["static"]["protocols"]
        for embedding in static_embeddings(config)
    ]


def static_vectors_file(config: dict[str, Any], embedding: str) -> str:
    """The word2vec text file of static embedding `embedding` (`static_embeddings`): one
    this run builds, or a comparison embedding's file from config."""
    if embedding.startswith("compare/"):
        return config["static"]["compare"][embedding.removeprefix("compare/")]
    return f"results/static/{embedding}.txt"


def static_labels(embedding: str, protocol: str) -> dict[str, Any]:
    """Label columns of a score table: what static embedding `embedding` is
    (`static_score_paths`) and the scoring protocol."""
    if embedding.startswith("compare/"):
        labels = {
            "source": "compare",
            "model": embedding.removeprefix("compare/"),
            "transform": "",
            "method": "",
            "layer": None,
        }
    else:
        model, transform, method, layer = embedding.split("/")
        labels = {
            "source": "this run",
            "model": model,
            "transform": transform,
            "method": method,
            "layer": int(layer.removeprefix("layer_")),
        }
    return {**labels, "protocol": protocol}


def _raw_summaries(config: dict[str, Any], models: list[str]) -> list[str]:
    """The layer summaries (transform ``none``) of every layer of each of `models`."""
    return [path for model in models for path in layer_outputs(config, model, "none", ".json")]


def sweep_summaries(config: dict[str, Any], sweep: str) -> list[str]:
    """The layer summaries (transform ``none``) of every checkpoint of `sweep`."""
    return _raw_summaries(config, list(sweeps(config)[sweep]))


def family_summaries(config: dict[str, Any], family: str) -> list[str]:
    """The layer summaries (transform ``none``) of every model of `family`
    (``figures.families``)."""
    return _raw_summaries(config, config["figures"]["families"][family])


def family_metas(config: dict[str, Any], family: str) -> list[str]:
    """The meta.json of each model of `family` (of its first part, for a partitioned one)."""
    return [extraction_metas(config, model)[0] for model in config["figures"]["families"][family]]


def wildcard_constraints(config: dict[str, Any]) -> dict[str, str]:
    """The pattern of every wildcard of the rules, from the config and from the package's
    own lists of choices, so that no list is typed twice."""
    from contextuality.backends.elmo.release import RELEASES
    from contextuality.measures.static import METHODS
    from contextuality.reference import MODELS

    static = config.get("static") or {}
    layer_embedding = "/".join(
        f"({part})"
        for part in (
            pattern(model_names(config)),
            pattern(list(static.get("transforms", []))),
            pattern(list(METHODS)),
            r"layer_\d+",
        )
    )
    compared = pattern(list(static.get("compare") or {}))
    return {
        "model": pattern(model_names(config)),
        "model_a": pattern(geometry_models(config)),
        "model_b": pattern(geometry_models(config)),
        "tokenizer": pattern(list(subword_tokenizers(config))),
        "transform": pattern(config["measures"]["transforms"]),
        "sweep": pattern(list(sweeps(config))),
        "family": pattern(list((config.get("figures") or {}).get("families") or {})),
        "layer": r"\d+",
        "year": r"\d{4}",
        "part": PART_PATTERN,
        "method": pattern(list(METHODS)),
        "published": pattern(list(MODELS)),
        "release": pattern(list(RELEASES)),
        "embedding": f"compare/({compared})|({layer_embedding})",
    }
