"""What workflow/rules/*.smk call: the config's slices, the paths and targets, and how a
rule's script runs its step.

Kept here (not in the .smk files) so that they are unit-tested without Snakemake. Every
Snakemake script imports `run_step` from here, so the plotting and benchmark modules are
imported only by the steps that need them.
"""

from __future__ import annotations

import errno
import gc
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextuality import __version__
from contextuality.corpus.index import IndexFiles, IndexSettings, check_min_contexts
from contextuality.errors import ConfigError, ContextualityError, InputDataError
from contextuality.workflow.config import (
    TOKENIZER_SETTINGS,
    ablated_models,
    check_config,
    compared_models,
    degeneration_settings,
    degeneration_transforms,
    extraction_partitions,
    figure_transforms,
    geometry_models,
    geometry_settings,
    geometry_transforms,
    is_streamed,
    keep_models_named_by,
    measure_settings,
    model_files,
    model_gpus,
    model_layers,
    model_names,
    model_settings,
    model_spec,
    refuse_duplicate_keys,
    special_token_settings,
    static_settings,
    streamed_models,
    streaming_settings,
    subword_index_settings,
    subword_tokenizers,
    transform_fit_settings,
    transforms_without_degeneration,
    word_sample_size,
)
from contextuality.workflow.geometry_paths import (
    alignment_files,
    alignment_model_pairs,
    dimension_curve_files,
    dimension_files,
    pair_shards,
)
from contextuality.workflow.paths import (
    PART_PATTERN,
    WORD_INDEX,
    ablation_alignment,
    benchmark_files,
    corpus_inputs,
    every_layer_output,
    extraction_inputs,
    extraction_log,
    extraction_metas,
    extraction_outputs,
    extraction_rule,
    family_metas,
    family_summaries,
    figure_paths,
    figures_directory,
    geometry_figure_names,
    index_directory,
    index_files,
    layer_outputs,
    layer_shards,
    measure_memory_mb,
    merged_streams,
    model_shards,
    paper_figure_names,
    parse_part,
    part_label,
    pattern,
    positions_table,
    published_files,
    special_token_files,
    special_token_inputs,
    static_labels,
    static_score_paths,
    static_vectors_file,
    stream_merge_inputs,
    stream_merge_outputs,
    sweep_summaries,
    wildcard_constraints,
)
from contextuality.workflow.sweeps import expand_sweeps, sweeps
from contextuality.workflow.targets import final_outputs, intermediate_outputs

__all__ = [
    "PART_PATTERN",
    "TOKENIZER_SETTINGS",
    "WORD_INDEX",
    "ablated_models",
    "ablation_alignment",
    "benchmark_files",
    "alignment_files",
    "check_config",
    "keep_models_named_by",
    "compared_models",
    "corpus_inputs",
    "transform_fit_settings",
    "degeneration_settings",
    "degeneration_transforms",
    "geometry_transforms",
    "special_token_files",
    "special_token_inputs",
    "special_token_settings",
    "dimension_curve_files",
    "dimension_files",
    "every_layer_output",
    "expand_sweeps",
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
    "figures_directory",
    "geometry_figure_names",
    "paper_figure_names",
    "geometry_models",
    "geometry_settings",
    "final_outputs",
    "intermediate_outputs",
    "index_directory",
    "index_files",
    "is_streamed",
    "layer_outputs",
    "layer_shards",
    "measure_memory_mb",
    "measure_settings",
    "merged_streams",
    "model_files",
    "model_shards",
    "model_gpus",
    "model_layers",
    "model_names",
    "model_settings",
    "model_spec",
    "pair_shards",
    "parse_part",
    "part_label",
    "pattern",
    "positions_table",
    "plan_config",
    "check_planned_inputs",
    "published_files",
    "alignment_model_pairs",
    "run_step",
    "static_labels",
    "static_score_paths",
    "static_settings",
    "static_vectors_file",
    "stream_merge_inputs",
    "stream_merge_outputs",
    "streamed_models",
    "streaming_settings",
    "sweep_summaries",
    "sweeps",
    "subword_index_settings",
    "subword_tokenizers",
    "transforms_without_degeneration",
    "wildcard_constraints",
    "word_sample_size",
]


def check_planned_inputs(config: dict[str, Any]) -> None:
    """End the run in one line, before any job removes a good output, where what the
    config asks of the data cannot be met: a text corpus that is not where
    ``corpus.text.path`` says (named with the path looked for and a close match; in
    Snakemake's input function it would fail inside Snakemake's frames), or a
    ``min_contexts`` no word of the index at hand reaches (`index.check_min_contexts`)."""
    try:
        if config["corpus"]["source"] == "text":
            try:
                corpus_inputs(config)
            except InputDataError as error:
                raise ConfigError(f"corpus.text.path: {error}") from error
        check_min_contexts(IndexFiles.of(index_files(config)), IndexSettings(**config["index"]))
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
    (``--configfile``) that names models (`keep_models_named_by`), checked
    (`check_config`), sweeps expanded. A ConfigError ends the run with its message alone,
    exit status 1, without the traceback frames Snakemake prints around an exception in a
    Snakefile."""
    try:
        refuse_duplicate_keys(list(every_configfile))
        keep_models_named_by(config, configfiles)
        check_config(config, schema_path)
        expand_sweeps(config)
    except ContextualityError as error:
        sys.exit(f"error: {error}")


def _fail(message: str) -> None:
    """End a job with `message` on one line: in its log, or on the console where the log
    cannot be written (a full disk), never a traceback or Python's "lost sys.stderr"."""
    try:
        print(f"error: {message}", file=sys.stderr, flush=True)
    except OSError:
        sys.stderr = sys.__stderr__
        print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def run_step(
    log_path: str | Path | None, step: Callable[[], Any], threads: int | None = None
) -> None:
    """Run a step from a Snakemake script with its log file as stderr and logging target,
    and its BLAS and OpenMP pools limited to the job's `threads`.

    Limiting the pools (`steps.limited_threads`) keeps jobs that Snakemake runs side by
    side from each starting a thread per core. A ContextualityError (bad input, unloadable
    model, mismatched shard), running out of memory or a full disk ends the job with one
    line saying what was wrong or ran out, and exit status 1, instead of a traceback
    (`_fail`). After the step, the process's objects are frozen out of the garbage
    collector (`gc.freeze`), as the job ends next.
    """
    from contextuality.steps import limited_threads

    if log_path is not None:
        sys.stderr = open(log_path, "w", buffering=1)  # noqa: SIM115 (kept open for the job)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
    )
    logging.getLogger(__name__).info("contextuality %s", __version__)
    try:
        with limited_threads(threads):
            step()
    except ContextualityError as error:
        _fail(str(error))
    except MemoryError:
        _fail(
            "out of memory: the job needs more than the machine or its scheduler gave it; "
            "give it more (a profile's mem_mb, a larger machine) or run fewer jobs at once "
            "(--cores, --resources mem_mb=...)"
        )
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        _fail(
            f"the disk is full (writing {error.filename or 'an output'}); no output was kept: "
            "free space and rerun"
        )
    # The job's process ends next: leave what it holds out of the garbage collector's passes
    # at interpreter exit: 0.2 s, not 1.0, from an extraction's end to its exit
    # (bench/results/default-run-cpu2.md).
    gc.freeze()
