"""What ``snakemake`` builds by default: every table, figure and summary of the config,
and every file one job writes for another to read (`intermediate_outputs`)."""

from __future__ import annotations

from typing import Any

from contextuality.configuration.schema import setting
from contextuality.workflow.ablation_effects import (
    EFFECT_FILES,
    ablation_effect_files,
    ablation_effect_outputs,
)
from contextuality.workflow.config import (
    ablated_models,
    compared_models,
    degeneration_transforms,
    geometry_models,
    model_layers,
    model_names,
    streamed_models,
)
from contextuality.workflow.downstream import (
    PAIR_FILES,
    SCORE_FILES,
    STS_SENTENCES,
    downstream_files,
    downstream_models,
    downstream_outputs,
)
from contextuality.workflow.embedding import (
    MATRIX_FILES,
    embedding_matrix_files,
    embedding_matrix_frequency_corpora,
    embedding_matrix_outputs,
)
from contextuality.workflow.geometry_paths import (
    alignment_files,
    best_layer_files,
    dimension_curve_files,
    dimension_files,
    geometry_figure_paths,
)
from contextuality.workflow.paths import (
    absent_rows,
    census_tables,
    every_layer_output,
    extraction_metas,
    figure_paths,
    index_files,
    layer_shards,
    special_token_files,
    static_embeddings,
    static_score_paths,
    static_vectors_file,
)
from contextuality.workflow.sensitivity import sensitivity_files, sensitivity_outputs
from contextuality.workflow.sweeps import sweeps
from contextuality.workflow.training import (
    RUN_FILES,
    checkpoints_directory,
    run_files,
    training_outputs,
    training_runs,
)


def intermediate_outputs(config: dict[str, Any]) -> list[str]:
    """Every file one job writes for another to read: asked for by default, so that one
    missing (deleted, or lost to a job killed outright) is rebuilt, never passed over
    because what was made from it still stands (Snakemake rebuilds a missing input only
    for a job that runs anyway)."""
    transforms = config["measures"]["transforms"]
    return [
        *{path for model in model_names(config) for path in index_files(config, model).values()},
        *(["results/corpus/fit_split.parquet"] if set(transforms) - {"none"} else []),
        *[
            path
            for model in model_names(config)
            for layer in model_layers(config, model)
            for files in layer_shards(config, model, layer).values()
            for path in ([files] if isinstance(files, str) else files)
        ],
        *every_layer_output(config, ".parquet"),
        *every_layer_output(config, ".sentences.parquet"),
        *[
            path
            for suffix in (".words.parquet", ".bins.parquet", ".cone.parquet", ".positions.parquet")
            for path in every_layer_output(config, suffix, "degeneration")
        ],
        *special_token_files(config),
        *alignment_files(config),
        *best_layer_files(config),
        *dimension_files(config),
        *dimension_curve_files(config),
        *[path for kind in MATRIX_FILES for path in embedding_matrix_files(config, kind)],
        *[path for kind in SCORE_FILES for path in downstream_files(config, kind)],
        *sensitivity_files(config),
        *(PAIR_FILES if downstream_models(config) else []),
        *[path for kind in EFFECT_FILES for path in ablation_effect_files(config, kind)],
        *(
            [STS_SENTENCES]
            if training_runs(config) or embedding_matrix_frequency_corpora(config)
            else []
        ),
        *[checkpoints_directory(run) for run in training_runs(config)],
        *[path for kind in RUN_FILES for path in run_files(config, kind)],
    ]


def final_outputs(config: dict[str, Any]) -> list[str]:
    """Everything ``snakemake`` builds by default: the tables, figures and summaries, and
    every `intermediate_outputs` file, each TSV table with its provenance sidecar (a lost
    sidecar is rebuilt, as a lost table is: Snakemake runs a job for a missing output only
    where some target names it)."""
    outputs = _tables_figures_and_summaries(config)
    if geometry_models(config):
        outputs.append("results/tables/best_layers.tsv")
    if setting(config, "static", "activate"):
        built = [static_vectors_file(config, name) for name in static_embeddings(config, False)]
        outputs += static_score_paths(config) + built + [f"{path}.json" for path in built]
    sidecars = [
        path[: -len(".tsv")] + ".provenance.json" for path in outputs if path.endswith(".tsv")
    ]
    return outputs + sidecars


def _tables_figures_and_summaries(config: dict[str, Any]) -> list[str]:
    """`final_outputs` without the sidecars."""
    return [
        "results/corpus/sentences.parquet",
        "results/corpus/index.json",
        *intermediate_outputs(config),
        *[path for model in model_names(config) for path in extraction_metas(config, model)],
        *every_layer_output(config, ".json"),
        "results/tables/measures.tsv",
        "results/tables/corpus.tsv",
        *census_tables(config),
        *[
            f"results/tables/words/{model}.{transform}.tsv"
            for model in model_names(config)
            for transform in config["measures"]["transforms"]
        ],
        *(
            ["results/tables/alignment.tsv", "results/tables/dimension_scales.tsv"]
            if geometry_models(config)
            else []
        ),
        *(
            ["results/tables/degeneration.tsv", "results/tables/positions.tsv"]
            if streamed_models(config, streamed=False) and degeneration_transforms(config)
            else []
        ),
        *figure_paths(config),
        *geometry_figure_paths(config),
        *embedding_matrix_outputs(config),
        *downstream_outputs(config),
        *sensitivity_outputs(config),
        *ablation_effect_outputs(config),
        *training_outputs(config),
        *[
            f"results/figures/sweeps/{sweep}.{extension}"
            for sweep in sweeps(config)
            for extension in ("png", "pdf")
        ],
        *[
            f"results/figures/families/{family}.{extension}"
            for family in (config.get("figures") or {}).get("families") or {}
            for extension in ("png", "pdf")
        ],
        *[
            f"results/figures/ablation/{model}.{extension}"
            for model in ablated_models(config)
            for extension in ("png", "pdf")
        ],
        *(
            ["results/tables/word_benchmarks.tsv", "results/figures/word_benchmarks.png"]
            if setting(config, "static", "activate")
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


def measures_in_run(config: dict[str, Any]) -> list[dict[str, str]]:
    """The measures whose rows this run's measures table holds, each its rows and its
    record's caption (the report's caption of the table lists them): none whose rows are
    absent (`paths.absent_rows`: left out, or lacked where every model streams), none
    whose step does not run (the geometry, the degeneration and the rows past the first
    word, which need it)."""
    from contextuality.measures.registry import MEASURES

    absent = absent_rows(config)
    stored = bool(streamed_models(config, streamed=False))
    analysed = stored and bool(degeneration_transforms(config))
    present = {
        "measure_layer": True,
        "degeneration": analysed,
        "layer_dimension": bool(geometry_models(config)),
    }
    return [
        {"rows": ", ".join(record.rows), "caption": record.caption}
        for record in MEASURES
        if not set(record.rows) <= absent
        and present[record.step]
        and (analysed or not record.needs_positions)
    ]
