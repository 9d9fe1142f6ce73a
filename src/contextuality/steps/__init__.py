"""The workflow's steps as functions of paths and settings, one module per rule file.

Each step reads its inputs, calls the library, and writes its outputs atomically with a
provenance record. A step is named as the rule that runs it (workflow/rules/<module>.smk);
the Snakemake scripts and the ``contextuality`` command line both call these, so a step
behaves the same inside and outside the workflow. Plotting, benchmark scoring, streaming
and the reference comparison are imported by the steps that use them, so that a measure
job does not pay for loading matplotlib and scipy.stats.
"""

from contextuality.steps.ablation_effects import (
    EffectFiles,
    ablation_effects,
    ablation_effects_tables,
)
from contextuality.steps.corpus import (
    corpus_table,
    distinct_sts_sentences,
    download_sts,
    fit_split,
    occurrence_index,
    sentences,
    settings_record,
    subword_index,
)
from contextuality.steps.downstream import (
    DownstreamTables,
    PairFiles,
    ScoreFiles,
    downstream_tables,
    sts_by_layer,
    sts_pairs,
)
from contextuality.steps.embedding import MatrixFiles, embedding_matrices, embedding_matrix
from contextuality.steps.extract import (
    LayerOutputs,
    download_elmo,
    extract,
    merge_stream,
    merge_stream_layer,
    merge_stream_metas,
    special_tokens,
    stream,
)
from contextuality.steps.figures import (
    ablation_figure,
    degeneration_figures,
    family_figure,
    figure,
    figures,
    geometry_figures,
    sweep_figure,
    transforms_figure,
)
from contextuality.steps.geometry import (
    GeometryTransform,
    ModelLayers,
    alignment_between_models,
    alignment_sensitivity,
    alignment_sensitivity_tables,
    alignment_table,
    baseline_alignment,
    dimension_scales_table,
    layer_alignment,
    layer_dimension,
    layer_geometry,
    paired_layer_alignment,
)
from contextuality.steps.measures import (
    DegenerationOutputs,
    MeasureOutputs,
    census_table,
    context_specific_words,
    degeneration_table,
    measure_layer,
    measure_streamed_layer,
    measures_table,
    positions_table,
)
from contextuality.steps.reference import compare_reference, download_reference
from contextuality.steps.static import (
    download_benchmarks,
    score_static,
    score_static_protocols,
    static_vectors,
    word_benchmarks_table,
)
from contextuality.steps.training import (
    RunFiles,
    train_run,
    training_losses_table,
    training_probes_table,
)

__all__ = [
    "corpus_table",
    "alignment_sensitivity",
    "alignment_sensitivity_tables",
    "RunFiles",
    "training_probes_table",
    "train_run",
    "training_losses_table",
    "DegenerationOutputs",
    "distinct_sts_sentences",
    "DownstreamTables",
    "EffectFiles",
    "LayerOutputs",
    "GeometryTransform",
    "ModelLayers",
    "MatrixFiles",
    "MeasureOutputs",
    "PairFiles",
    "ScoreFiles",
    "ablation_effects",
    "ablation_effects_tables",
    "ablation_figure",
    "alignment_between_models",
    "alignment_table",
    "baseline_alignment",
    "compare_reference",
    "context_specific_words",
    "degeneration_figures",
    "degeneration_table",
    "dimension_scales_table",
    "download_benchmarks",
    "download_elmo",
    "download_reference",
    "download_sts",
    "downstream_tables",
    "embedding_matrices",
    "embedding_matrix",
    "extract",
    "family_figure",
    "figure",
    "figures",
    "fit_split",
    "geometry_figures",
    "layer_alignment",
    "layer_dimension",
    "layer_geometry",
    "measure_layer",
    "measure_streamed_layer",
    "merge_stream",
    "merge_stream_layer",
    "merge_stream_metas",
    "census_table",
    "measures_table",
    "occurrence_index",
    "paired_layer_alignment",
    "positions_table",
    "score_static",
    "score_static_protocols",
    "sentences",
    "settings_record",
    "special_tokens",
    "static_vectors",
    "stream",
    "sts_by_layer",
    "sts_pairs",
    "subword_index",
    "sweep_figure",
    "transforms_figure",
    "word_benchmarks_table",
]
