"""The ablation's effects' part of the workflow (config ``ablation_effects``): which
decoders have their massive activations ablated and their perplexity and attention
measured, and where they write."""

from __future__ import annotations

from typing import Any

from contextuality import backends
from contextuality.configuration.schema import setting
from contextuality.workflow.config import model_names, model_settings

EFFECTS = "results/ablation_effects"
# Each decoder's files, by kind: a row per condition, and per condition, block and head.
EFFECT_FILES = ("perplexity", "attention")


def ablation_effect_models(config: dict[str, Any]) -> list[str]:
    """The decoders measured, in config order: none unless ``ablation_effects.activate``;
    then every transformers decoder (`backends.is_decoder`: a causal language-modelling
    head to give its loss) without an ``ablation`` of its own (the stage ablates it)."""
    if not setting(config, "ablation_effects", "activate"):
        return []
    specs = [model_settings(config, model) for model in model_names(config)]
    return [spec.name for spec in specs if spec.ablation is None and backends.is_decoder(spec)]


def ablation_effect_settings(config: dict[str, Any]) -> dict[str, Any]:
    """What each decoder's job is given besides its own settings: the sentences measured,
    the calibration sentences before them, the bootstrap draws and the seed (the config
    with the schema's defaults filled in)."""
    section = config["ablation_effects"]
    return {
        "sentences": section["sentences"],
        "calibration_sentences": section["calibration_sentences"],
        "draws": section["draws"],
        "seed": config["measures"]["seed"],
    }


def ablation_effect_files(config: dict[str, Any], kind: str) -> list[str]:
    """Each measured decoder's file of `kind` (one of `EFFECT_FILES`):
    ``results/ablation_effects/<model>/<kind>.parquet``."""
    return [f"{EFFECTS}/{model}/{kind}.parquet" for model in ablation_effect_models(config)]


def ablation_effect_outputs(config: dict[str, Any]) -> list[str]:
    """The tables of every measured decoder and their figure (png and pdf); none where no
    decoder is measured."""
    if not ablation_effect_models(config):
        return []
    return [
        "results/tables/ablation_effects_perplexity.tsv",
        "results/tables/ablation_effects_attention.tsv",
        "results/figures/ablation_effects.png",
        "results/figures/ablation_effects.pdf",
    ]
