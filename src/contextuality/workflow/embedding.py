"""The token embedding matrices' part of the workflow (config ``embedding_matrices``): which
models have theirs measured, what each job is given, and where they write."""

from __future__ import annotations

from typing import Any

from contextuality import backends
from contextuality.configuration.schema import setting
from contextuality.workflow.config import model_names, model_settings
from contextuality.workflow.downstream import STS_SENTENCES

# The model settings a token embedding matrix depends on: its weights and its tokenizer,
# none of how the forward pass runs or what it keeps.
MATRIX_SETTINGS = (
    "source",
    "revision",
    "gguf_file",
    "loader",
    "trust_remote_code",
    "random_weights_seed",
)
# Each model's files, by kind: its matrices' rows, their norms by frequency bin, their
# spectra.
MATRIX_FILES = ("measures", "norms", "spectra")


def embedding_matrix_models(config: dict[str, Any]) -> list[str]:
    """The models whose token embedding matrices are measured, in config order: none
    unless ``embedding_matrices.activate``; then every model with an embedding matrix
    (`backends.has_token_embeddings`: not ELMo) and no ``ablation`` (an ablated model has
    the weights of another)."""
    if not setting(config, "embedding_matrices", "activate"):
        return []
    specs = [model_settings(config, model) for model in model_names(config)]
    return [
        spec.name for spec in specs if spec.ablation is None and backends.has_token_embeddings(spec)
    ]


def embedding_matrix_settings(config: dict[str, Any], model: str) -> dict[str, Any]:
    """The settings of `model` its matrix job is given (`MATRIX_SETTINGS`, as
    `backends.recorded_settings` records them), so that choosing other layers, or another
    way to run it, does not measure the matrix again."""
    recorded = backends.recorded_settings(model_settings(config, model))
    return {key: value for key, value in recorded.items() if key in MATRIX_SETTINGS}


def embedding_matrix_frequency_corpora(config: dict[str, Any]) -> dict[str, str]:
    """The sentence tables a matrix job counts tokens in beside the corpus's: the distinct
    STS 2012-2016 sentences (``sts_sentences``) with ``embedding_matrices.sts_counts``,
    none without."""
    if not setting(config, "embedding_matrices", "sts_counts"):
        return {}
    return {"sts_sentences": STS_SENTENCES}


def embedding_matrix_files(config: dict[str, Any], kind: str) -> list[str]:
    """Each measured model's file of `kind` (one of `MATRIX_FILES`):
    ``results/embedding_matrices/<model>/<kind>.parquet``."""
    return [
        f"results/embedding_matrices/{model}/{kind}.parquet"
        for model in embedding_matrix_models(config)
    ]


def embedding_matrix_outputs(config: dict[str, Any]) -> list[str]:
    """The tables gathering every measured model's files, and their figure (png and
    pdf); none where no model is measured."""
    if not embedding_matrix_models(config):
        return []
    return [
        "results/tables/embedding_matrices.tsv",
        "results/tables/embedding_matrix_norms.tsv",
        "results/tables/embedding_matrix_spectra.tsv",
        "results/figures/embedding_matrices.png",
        "results/figures/embedding_matrices.pdf",
    ]
