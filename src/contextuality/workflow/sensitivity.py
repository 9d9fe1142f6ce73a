"""The alignment sensitivity's part of the workflow (config ``alignment_sensitivity``):
which pairs of models are aligned at every sample, seed and k, what each job is given, and
where they write."""

from __future__ import annotations

from typing import Any

from contextuality.configuration.schema import setting
from contextuality.workflow.config import geometry_models, model_names
from contextuality.workflow.paths import index_directory

SENSITIVITY = "results/geometry/alignment_sensitivity"
# The three tables of every pair's rows: the rows, each setting's best matches, the seeds'
# spread.
SENSITIVITY_TABLES = (
    "results/tables/alignment_sensitivity.tsv",
    "results/tables/alignment_sensitivity_matches.tsv",
    "results/tables/alignment_sensitivity_seeds.tsv",
)


def sensitivity_problems(config: dict[str, Any]) -> list[str]:
    """One line per pair of ``alignment_sensitivity.pairs`` that cannot be aligned: a
    model the config does not name, one whose vectors are not stored (a streamed model),
    a model with itself, two models whose rows are not the same occurrences."""
    names, stored = model_names(config), set(geometry_models(config))
    problems = []
    for position, (left, right) in enumerate(sensitivity_pairs(config)):
        where = f"alignment_sensitivity.pairs.{position}"
        unknown = [model for model in (left, right) if model not in names]
        if unknown:
            problems.append(f"{where}: no model named {unknown[0]!r} under models")
        elif left == right:
            problems.append(f"{where}: {left} with itself (its layers' alignment is geometry's)")
        elif not {left, right} <= stored:
            problems.append(f"{where}: {left} and {right} need stored vectors and geometry on")
        elif index_directory(config, left) != index_directory(config, right):
            problems.append(f"{where}: {left} and {right} index different occurrences")
    return problems


def sensitivity_pairs(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The pairs of models aligned at every setting, in config order."""
    return [(left, right) for left, right in setting(config, "alignment_sensitivity", "pairs")]


def sensitivity_settings(config: dict[str, Any]) -> dict[str, Any]:
    """What a pair's job is given: config ``alignment_sensitivity`` but its pairs, and the
    geometry stage's own setting, the reference (sample size, seed, k)."""
    section = {
        key: value for key, value in config["alignment_sensitivity"].items() if key != "pairs"
    }
    geometry = config["geometry"]
    reference = [geometry["sample_size"], config["measures"]["seed"], geometry["alignment"]["k"]]
    return {**section, "reference": reference}


def sensitivity_files(config: dict[str, Any]) -> list[str]:
    """Each pair's rows: ``results/geometry/alignment_sensitivity/<a>~<b>.parquet``."""
    return [f"{SENSITIVITY}/{left}~{right}.parquet" for left, right in sensitivity_pairs(config)]


def sensitivity_outputs(config: dict[str, Any]) -> list[str]:
    """The three tables and their figure (png and pdf); none without a pair."""
    if not sensitivity_pairs(config):
        return []
    figure = "results/figures/alignment_sensitivity"
    return [*SENSITIVITY_TABLES, f"{figure}.png", f"{figure}.pdf"]
