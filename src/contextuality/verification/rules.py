"""Which workflow rule writes a file of a study, read off its path (the layout of
`workflow.paths`), so that a damaged file can be named with the rule that remakes it."""

from __future__ import annotations

import re
from pathlib import Path

from contextuality.figures.specs import GEOMETRY_FIGURES
from contextuality.measures.registry import CENSUSES

_MODEL = r"(?P<model>[^/]+)"
# (pattern of a path relative to the study, rule name: its {model} and {transform}
# filled in from the match), first match wins.
RULES: tuple[tuple[str, str], ...] = (
    (r"resources/sts/.*", "download_sts"),
    (r"resources/elmo/.*", "download_elmo"),
    (r"resources/benchmarks/.*", "download_benchmarks"),
    (r"resources/reference/.*", "download_reference"),
    (r"results/corpus/sentences\.parquet", "sentences"),
    (r"results/corpus/fit_split\.parquet", "fit_split"),
    (r"results/corpus/settings/.*", "settings_record"),
    (r"results/inputs/.*", "input_fingerprint"),
    (r"results/corpus/subwords/.*", "subword_index"),
    (r"results/corpus/(occurrences|vocab)\.parquet|results/corpus/index\.json", "occurrence_index"),
    (rf"results/embeddings/{_MODEL}/.*", "extract_{model}"),
    (rf"results/streaming/{_MODEL}/part_[^/]+/.*", "stream_{model}"),
    (rf"results/streaming/{_MODEL}/.*", "{stream_or_merge}"),
    (rf"results/degeneration/{_MODEL}/special_tokens\.parquet", "special_tokens"),
    (rf"results/(measures|degeneration)/{_MODEL}/.*", "{measure_rule}"),
    (rf"results/embedding_matrices/{_MODEL}/.*", "embedding_matrix"),
    (r"results/geometry/alignment_between_models/.*", "alignment_between_models"),
    (rf"results/geometry/{_MODEL}/[^/]+/dimension/.*", "layer_dimension"),
    (rf"results/geometry/{_MODEL}/.*", "layer_alignment"),
    (r"results/static/.*\.scores\.(tsv|provenance\.json)", "score_static"),
    (r"results/static/.*", "static_vectors"),
    (r"results/reference/.*", "compare_reference"),
    (r"results/figures/reference_.*", "compare_reference"),
    (r"results/(tables|figures)/word_benchmarks\..*", "word_benchmarks_table"),
    (r"results/tables/embedding_matrices\..*", "embedding_matrices"),
    (rf"results/tables/({'|'.join(('measures', 'degeneration', *CENSUSES))})\..*", "{table}_table"),
    (r"results/tables/positions\..*", "degeneration_table"),
    (r"results/tables/(alignment|best_layers)\..*", "alignment_table"),
    (r"results/tables/corpus\..*", "corpus_table"),
    (r"results/tables/dimension_scales\..*", "dimension_scales_table"),
    (r"results/tables/words/.*", "context_specific_words"),
    (r"results/figures/degeneration/.*", "degeneration_figures"),
    (r"results/figures/transforms\..*", "transforms_figure"),
    (r"results/figures/sweeps/.*", "sweep_figure"),
    (r"results/figures/families/.*", "family_figure"),
    (r"results/figures/ablation/.*", "ablation_figure"),
    (rf"results/figures/({'|'.join(GEOMETRY_FIGURES)})\..*", "geometry_figures"),
    (r"results/figures/(?P<transform>[^/.]+)/[^/]+", "figures_{transform}"),
    (r"results/figures/[^/]+", "figures_none"),
)


def rule_of(study: Path, relative: Path) -> str:
    """The name of the rule that writes `relative` (a path inside the study `study`), or
    ``"none (not a file the workflow writes)"``. A streamed model's state files come from
    its merge rule where it streams in parts (its meta.json from the one that merges the
    parts' meta.json files); a measure job's rule is the streamed one
    for a streamed model and the one without the degeneration analysis where the layer
    has no degeneration tables."""
    text = relative.as_posix()
    for expression, rule in RULES:
        match = re.fullmatch(expression, text)
        if match is None:
            continue
        found = match.groupdict()
        if rule == "{stream_or_merge}":
            if not any((study / f"results/streaming/{found['model']}").glob("part_*")):
                return f"stream_{found['model']}"
            merge = "merge_metas" if text.endswith("/meta.json") else "merge_stream"
            return f"{merge}_{found['model']}"
        if rule == "{measure_rule}":
            return _measure_rule(study, found["model"], text)
        if rule == "{table}_table":
            return f"{match[1]}_table"
        return rule.format(**found)
    return "none (not a file the workflow writes)"


def _measure_rule(study: Path, model: str, text: str) -> str:
    """The measure rule that writes `text`, a layer's table of `model`."""
    if (study / f"results/streaming/{model}").is_dir():
        return "measure_streamed_layer"
    if text.startswith("results/degeneration/"):
        return "measure_layer"
    transform = text.split("/")[3]
    if (study / f"results/degeneration/{model}/{transform}").is_dir():
        return "measure_layer"
    return "measure_layer_without_degeneration"
