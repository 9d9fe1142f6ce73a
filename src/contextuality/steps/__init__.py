"""The workflow's steps as functions of paths and settings, one module per rule file.

Each step reads its inputs, calls the library, and writes its outputs atomically with a
provenance record. A step is named as the rule that runs it (workflow/rules/<module>.smk);
the Snakemake scripts and the ``contextuality`` command line both call these, so a step
behaves the same inside and outside the workflow. A step's module is imported when one of
its names is first asked for (``steps.measure_layer``), so that a job loads its own step
alone: a job is a process of its own, and loading every step (plotting, scipy.stats, the
backends) cost each one about 2 s, a measure job's whole work on a small corpus.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

# Each step module's public names.
STEP_NAMES = {
    "ablation_effects": (
        "EffectFiles",
        "ablation_effects",
        "ablation_effects_tables",
    ),
    "corpus": (
        "corpus_table",
        "distinct_sts_sentences",
        "download_sts",
        "fit_split",
        "occurrence_index",
        "sentences",
        "settings_record",
        "subword_index",
    ),
    "downstream": (
        "DownstreamTables",
        "PairFiles",
        "ScoreFiles",
        "downstream_tables",
        "sts_by_layer",
        "sts_pairs",
    ),
    "embedding": (
        "MatrixFiles",
        "embedding_matrices",
        "embedding_matrix",
    ),
    "extract": (
        "LayerOutputs",
        "download_elmo",
        "extract",
        "merge_stream",
        "merge_stream_layer",
        "merge_stream_metas",
        "special_tokens",
        "stream",
    ),
    "figures": (
        "ablation_figure",
        "degeneration_figures",
        "family_figure",
        "figure",
        "figures",
        "geometry_figures",
        "sweep_figure",
        "transforms_figure",
    ),
    "geometry": (
        "GeometryTransform",
        "ModelLayers",
        "alignment_between_models",
        "alignment_sensitivity",
        "alignment_sensitivity_tables",
        "alignment_table",
        "baseline_alignment",
        "dimension_scales_table",
        "layer_alignment",
        "layer_dimension",
        "layer_geometry",
        "paired_layer_alignment",
    ),
    "measures": (
        "DegenerationOutputs",
        "MeasureOutputs",
        "census_table",
        "context_specific_words",
        "degeneration_table",
        "measure_layer",
        "measure_streamed_layer",
        "measures_table",
        "positions_table",
    ),
    "reference": (
        "compare_reference",
        "download_reference",
    ),
    "static": (
        "download_benchmarks",
        "score_static",
        "score_static_protocols",
        "static_vectors",
        "word_benchmarks_table",
    ),
    "training": (
        "RunFiles",
        "train_run",
        "training_losses_table",
        "training_probes_table",
    ),
}
# The module each public name is found in.
_MODULE_OF = {name: module for module, names in STEP_NAMES.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    """The step `name`, from its module, imported on first use (PEP 562)."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    globals()[name] = found
    return found


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


class _Steps(types.ModuleType):
    """This package, whose steps keep their names when a module of the same name is
    imported (`figures` and `extract` are each a step and its module): importing a
    submodule binds it on its package, which would hide the step."""

    def __setattr__(self, name: str, value: Any) -> None:
        if not (isinstance(value, types.ModuleType) and name in _MODULE_OF):
            super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Steps
