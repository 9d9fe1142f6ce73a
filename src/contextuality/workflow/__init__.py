"""What workflow/rules/*.smk call: the config's slices, the paths and targets, the checks
made while the workflow plans.

Kept here (not in the .smk files) so that they are unit-tested without Snakemake. How a
Snakemake script runs its step is `contextuality.jobs.process.run_job`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from contextuality.configuration.schema import with_defaults
from contextuality.corpus.index import IndexFiles, IndexSettings, check_min_contexts
from contextuality.errors import ConfigError, ContextualityError, InputDataError
from contextuality.workflow.ablation_effects import (
    ablation_effect_files,
    ablation_effect_models,
    ablation_effect_outputs,
    ablation_effect_settings,
)
from contextuality.workflow.config import (
    TOKENIZER_SETTINGS,
    ablated_models,
    check_config,
    compared_models,
    degeneration_settings,
    degeneration_transforms,
    extraction_partitions,
    figure_transforms,
    forward_settings,
    geometry_models,
    geometry_settings,
    geometry_transforms,
    is_streamed,
    keep_models_named_by,
    measure_settings,
    model_gpus,
    model_layers,
    model_names,
    model_settings,
    refuse_duplicate_keys,
    special_token_settings,
    static_settings,
    streamed_models,
    streaming_settings,
    subword_index_settings,
    subword_tokenizers,
    transform_fit_settings,
    transforms_without_degeneration,
    vector_settings,
    word_sample_size,
)
from contextuality.workflow.downstream import (
    downstream_files,
    downstream_models,
    downstream_outputs,
    task_archives,
    task_pair_settings,
)
from contextuality.workflow.embedding import (
    embedding_matrix_files,
    embedding_matrix_frequency_corpora,
    embedding_matrix_models,
    embedding_matrix_settings,
)
from contextuality.workflow.geometry_paths import (
    alignment_files,
    alignment_model_pairs,
    best_layer_files,
    dimension_curve_files,
    dimension_files,
    geometry_figure_names,
    pair_shards,
)
from contextuality.workflow.geometry_resources import geometry_memory_mb, geometry_runtime_minutes
from contextuality.workflow.inputs import (
    COMPARE_SOURCE,
    MODEL_SOURCE,
    corpus_archives,
    downloaded_model_files,
    input_checksums,
    input_record,
    outside_files,
)
from contextuality.workflow.paths import (
    PART_PATTERN,
    WORD_INDEX,
    ablation_alignment,
    benchmark_files,
    censuses,
    every_layer_output,
    extraction_inputs,
    extraction_log,
    extraction_metas,
    extraction_rule,
    family_metas,
    family_summaries,
    figure_paths,
    figures_directory,
    index_directory,
    index_files,
    index_summaries,
    layer_of_file,
    layer_outputs,
    layer_shards,
    measure_memory_mb,
    merged_streams,
    model_shards,
    paper_figure_names,
    parse_part,
    part_label,
    pattern,
    positions_table_files,
    published_files,
    special_token_files,
    special_token_inputs,
    static_labels,
    static_score_paths,
    static_vectors_file,
    sweep_summaries,
    wildcard_constraints,
)
from contextuality.workflow.report import record_caption, report_section
from contextuality.workflow.sensitivity import (
    sensitivity_files,
    sensitivity_outputs,
    sensitivity_pairs,
    sensitivity_problems,
    sensitivity_settings,
)
from contextuality.workflow.stored import (
    extraction_outputs,
    layers_to_write,
    stream_merge_inputs,
    stream_merge_output,
    stream_meta_inputs,
    warn_unnamed_layers,
)
from contextuality.workflow.study import check_devices
from contextuality.workflow.study_files import (
    SUBWORD_STAGE,
    check_extractions,
    check_index_files,
    check_partitions,
    check_stage_settings,
    settings_record,
    stage_settings,
)
from contextuality.workflow.sweeps import expand_sweeps, sweeps
from contextuality.workflow.targets import final_outputs, intermediate_outputs, measures_in_run
from contextuality.workflow.training import (
    expand_trained_sources,
    probe_figures,
    run_files,
    run_settings,
    trained_model_inputs,
    training_outputs,
    training_runs,
)

__all__ = [
    "index_summaries",
    "sensitivity_files",
    "sensitivity_outputs",
    "sensitivity_pairs",
    "sensitivity_problems",
    "sensitivity_settings",
    "PART_PATTERN",
    "SUBWORD_STAGE",
    "TOKENIZER_SETTINGS",
    "WORD_INDEX",
    "ablated_models",
    "ablation_effect_files",
    "ablation_effect_models",
    "ablation_effect_outputs",
    "ablation_effect_settings",
    "record_caption",
    "report_section",
    "settings_record",
    "stage_settings",
    "ablation_alignment",
    "benchmark_files",
    "censuses",
    "alignment_files",
    "best_layer_files",
    "check_config",
    "keep_models_named_by",
    "compared_models",
    "corpus_archives",
    "downloaded_model_files",
    "input_record",
    "input_checksums",
    "outside_files",
    "MODEL_SOURCE",
    "COMPARE_SOURCE",
    "transform_fit_settings",
    "degeneration_settings",
    "degeneration_transforms",
    "geometry_transforms",
    "special_token_files",
    "special_token_inputs",
    "special_token_settings",
    "dimension_curve_files",
    "downstream_files",
    "downstream_models",
    "downstream_outputs",
    "embedding_matrix_files",
    "embedding_matrix_frequency_corpora",
    "embedding_matrix_models",
    "embedding_matrix_settings",
    "dimension_files",
    "every_layer_output",
    "expand_sweeps",
    "expand_trained_sources",
    "extraction_inputs",
    "extraction_log",
    "extraction_metas",
    "extraction_outputs",
    "extraction_partitions",
    "extraction_rule",
    "family_metas",
    "family_summaries",
    "figure_paths",
    "figure_transforms",
    "forward_settings",
    "figures_directory",
    "geometry_figure_names",
    "geometry_memory_mb",
    "geometry_runtime_minutes",
    "paper_figure_names",
    "geometry_models",
    "geometry_settings",
    "final_outputs",
    "intermediate_outputs",
    "index_directory",
    "index_files",
    "is_streamed",
    "layer_of_file",
    "layer_outputs",
    "layers_to_write",
    "warn_unnamed_layers",
    "layer_shards",
    "measure_memory_mb",
    "measures_in_run",
    "measure_settings",
    "merged_streams",
    "model_shards",
    "model_gpus",
    "model_layers",
    "model_names",
    "model_settings",
    "vector_settings",
    "pair_shards",
    "parse_part",
    "part_label",
    "pattern",
    "positions_table_files",
    "plan_config",
    "check_planned_inputs",
    "check_run_devices",
    "published_files",
    "alignment_model_pairs",
    "static_labels",
    "static_score_paths",
    "static_settings",
    "static_vectors_file",
    "stream_merge_inputs",
    "stream_merge_output",
    "stream_meta_inputs",
    "streamed_models",
    "streaming_settings",
    "sweep_summaries",
    "sweeps",
    "subword_index_settings",
    "subword_tokenizers",
    "task_archives",
    "probe_figures",
    "run_files",
    "run_settings",
    "trained_model_inputs",
    "training_outputs",
    "training_runs",
    "task_pair_settings",
    "transforms_without_degeneration",
    "wildcard_constraints",
    "word_sample_size",
]


def check_planned_inputs(config: dict[str, Any], dry_run: bool = False) -> None:
    """End the run in one line, before any job removes a good output, where what the
    config asks of the data cannot be met: a text corpus that is not where
    ``corpus.text.path`` says (named with the path looked for and a close match; in
    Snakemake's input function it would fail inside Snakemake's frames), or a
    ``min_contexts`` no word of the index at hand reaches (`index.check_min_contexts`), or
    a corpus file another study made, whatever subset of its files was copied in
    (`study_files.check_stage_settings`, `study_files.check_index_files`), or an
    extraction of another index (`study_files.check_extractions`), or more
    ``extraction.partitions`` than the corpus is known to hold sentences
    (`study_files.check_partitions`). A dry run
    (`dry_run`) also warns of a device asked for that torch does not see here (a GPU
    where there is none, mps on a torch without MPS): whether the jobs will run here is
    known only once the run starts (`check_run_devices`)."""
    try:
        if config["corpus"]["source"] == "text":
            try:
                outside_files(config, "corpus")
            except InputDataError as error:
                raise ConfigError(f"corpus.text.path: {error}") from error
        check_stage_settings(config)
        check_index_files(config)
        check_extractions(config)
        check_partitions(config)
        if dry_run:
            try:
                check_devices(config)
            except ConfigError as error:
                print(
                    f"WARNING: {error}; a run whose jobs run here will refuse it (a "
                    "cluster's jobs each check their own node)",
                    file=sys.stderr,
                )
        check_min_contexts(IndexFiles.of(index_files(config)), IndexSettings(**config["index"]))
    except ContextualityError as error:
        sys.exit(f"error: {error}")


def check_run_devices(config: dict[str, Any], local_run: bool) -> None:
    """For a run whose jobs run here (`local_run`: Snakemake's ``workflow.local_exec``, known
    once the run starts), end it in one line before any job removes an output where a
    device is asked for that torch does not see (`study.check_devices`)."""
    if not local_run:
        return
    try:
        check_devices(config)
    except ContextualityError as error:
        sys.exit(f"error: {error}")


def plan_config(
    config: dict[str, Any],
    configfiles: list[str | Path],
    schema_path: str | Path,
    every_configfile: list[str | Path] = (),
) -> None:
    """Make the Snakefile's `config` the one planned, in place: `every_configfile` free of
    keys given twice (`refuse_duplicate_keys`), the models of the last of `configfiles`
    (``--configfile``) that names models (`keep_models_named_by`), the schema's defaults
    filled in (`schema.with_defaults`), checked (`check_config`), sweeps expanded, the
    alignment sensitivity's pairs checked (`sensitivity_problems`), and
    each model's layers known (read from its config where ``layers`` is not given). A
    refusal ends the run with its message alone, exit status 1, without the traceback
    frames Snakemake prints around an exception in a Snakefile: a hub id the local cache
    lacks, where the hub cannot be reached, among them."""
    try:
        refuse_duplicate_keys(list(every_configfile))
        keep_models_named_by(config, configfiles)
        with_defaults(config)  # what check_config and every slice read: the schema's defaults
        check_config(config, schema_path)
        expand_sweeps(config)
        expand_trained_sources(config)
        problems = sensitivity_problems(config)  # of the models as planned
        if problems:
            raise ConfigError("invalid config:\n  " + "\n  ".join(problems))
        for model in model_names(config):
            model_layers(config, model)  # what the rules' outputs need, asked here first
    except ContextualityError as error:
        sys.exit(f"error: {error}")
