"""The downstream task's part of the workflow (config ``downstream``): which models have
their layers scored on STS, what each job is given, and where they write."""

from __future__ import annotations

from typing import Any

from contextuality.configuration.schema import default, setting
from contextuality.corpus.sentences import sts_archive_name
from contextuality.workflow.config import model_names, model_settings

DOWNSTREAM = "results/downstream"
# The STS years every model is scored on: all of them, whatever the corpus reads.
TASK_YEARS = tuple(default("corpus", "sts", "years"))
# The distinct sentences of every STS year (rule sts_sentences): what a training run trains
# on, and a frequency corpus of the token embedding matrices.
STS_SENTENCES = "results/corpus/sts_sentences.parquet"
# The pairs every model is scored on, and their sentences.
PAIR_FILES = (f"{DOWNSTREAM}/sts_pairs.parquet", f"{DOWNSTREAM}/sts_sentences.parquet")
# Each model's files, by kind: its scores and the scores of each bootstrap draw.
SCORE_FILES = ("scores", "draws")


def downstream_models(config: dict[str, Any]) -> list[str]:
    """The models whose layers are scored, in config order: none unless
    ``downstream.activate``; then every model without an ``ablation`` (whose intervention
    is calibrated on the corpus, not on the task's sentences)."""
    if not setting(config, "downstream", "activate"):
        return []
    return [
        model for model in model_names(config) if model_settings(config, model).ablation is None
    ]


def task_archives() -> dict[str, str]:
    """The STS archives the pairs are read from, by year (``sts_<year>``)."""
    return {f"sts_{year}": f"resources/sts/{sts_archive_name(year)}" for year in TASK_YEARS}


def task_pair_settings(config: dict[str, Any]) -> dict[str, Any]:
    """What the pairs job is given: how many pairs, the seed, and whether the archives'
    checksums are checked (the config with the schema's defaults filled in)."""
    return {
        "pairs": config["downstream"]["pairs"],
        "seed": config["measures"]["seed"],
        "verify_checksums": config["corpus"]["sts"]["verify_checksums"],
    }


def downstream_files(config: dict[str, Any], kind: str) -> list[str]:
    """Each scored model's file of `kind` (one of `SCORE_FILES`):
    ``results/downstream/<model>/<kind>.parquet``."""
    return [f"{DOWNSTREAM}/{model}/{kind}.parquet" for model in downstream_models(config)]


def downstream_outputs(config: dict[str, Any]) -> list[str]:
    """The tables of every scored model and their figure (png and pdf); none where no
    model is scored."""
    if not downstream_models(config):
        return []
    return [
        "results/tables/downstream.tsv",
        "results/tables/downstream_agreement.tsv",
        "results/figures/downstream.png",
        "results/figures/downstream.pdf",
    ]
