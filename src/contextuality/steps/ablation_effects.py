"""The steps of workflow/rules/ablation_effects.smk: one decoder's perplexity and attention
with its massive activations ablated, and every decoder's in tables and a figure.

After Sun et al. 2024, "Massive Activations in Large Language Models", §3–4."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from contextuality import backends
from contextuality.backends.base import resolved_device
from contextuality.backends.settings import ModelSettings
from contextuality.configuration import random_streams
from contextuality.errors import InputDataError
from contextuality.files.provenance import provenance_record, sha256_file
from contextuality.files.tables import read_parquet_with_provenance, write_parquet, write_tsv

PathLike = str | os.PathLike

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class EffectFiles:
    """One decoder's tables, or every decoder's: a row per condition (``perplexity``) and
    per condition, block and head (``attention``)."""

    perplexity: PathLike
    attention: PathLike


def ablation_effects(
    spec: ModelSettings,
    sentences_path: PathLike,
    outputs: EffectFiles,
    sentences: int,
    calibration_sentences: int,
    draws: int,
    seed: int,
    threads: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Decoder `spec` (with its language-modelling head) on the first
    `calibration_sentences` + `sentences` sentences of the sentence table: the first block
    where a massive activation appears in the calibration sentences, then the held-out
    loss and attention under each condition of `extraction.ablation_effects.CONDITIONS`
    (`draws` bootstrap draws over sentences from stream ``ablation_effects_bootstrap`` of
    `seed`), written to `outputs` with their provenance. A model without a massive
    activation gets the unablated condition alone, and the console says so."""
    import torch

    from contextuality.extraction.ablation_effects import ablation_effects as measure
    from contextuality.extraction.ablation_effects import first_massive_block

    torch.set_num_threads(max(1, threads))
    table, corpus = read_parquet_with_provenance(sentences_path)
    texts = table["text"].tolist()[: calibration_sentences + sentences]
    if len(texts) <= calibration_sentences:
        raise InputDataError(
            f"{spec.name}: the corpus's {len(texts):,} sentences leave none to measure after "
            f"the {calibration_sentences:,} that calibrate the means "
            "(ablation_effects.calibration_sentences)"
        )
    loaded = backends.load_language_model(
        spec, resolved_device(spec.device, f"models.{spec.name}.device")
    )
    block = first_massive_block(loaded, texts[:calibration_sentences])
    if block is None:
        log.warning(
            "%s: no block carries a massive activation in the calibration sentences: the "
            "unablated condition alone",
            spec.name,
        )
    rng = random_streams.generator(seed, "ablation_effects_bootstrap")
    perplexity, attention = measure(loaded, texts, block, calibration_sentences, draws, rng)
    provenance = provenance_record(
        step="ablation_effects",
        **backends.model_record(spec, loaded),
        corpus=corpus.get("corpus"),
        corpus_checksum=corpus.get("corpus_checksum"),
        calibration_sentences=calibration_sentences,
        sentences=len(texts) - calibration_sentences,
        detection_block=block,
        draws=draws,
        seed=seed,
    )
    attention = attention.astype({"head": "float64"})
    write_parquet(perplexity, outputs.perplexity, provenance)
    write_parquet(attention, outputs.attention, provenance)
    return perplexity, attention


def ablation_effects_tables(
    inputs: Sequence[EffectFiles], outputs: EffectFiles, figures: Sequence[PathLike]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every decoder's files (`inputs`) gathered into the TSV tables `outputs`, each with
    the provenance of the files it gathers, and the figure
    (`figures.ablation_effects.plot_ablation_effects`) into each of `figures`."""
    from contextuality.figures.ablation_effects import plot_ablation_effects

    gathered = {}
    for kind in ("perplexity", "attention"):
        read = [read_parquet_with_provenance(getattr(files, kind)) for files in inputs]
        table = pd.concat([frame for frame, _ in read], ignore_index=True)
        sources = [source for _, source in read]
        write_tsv(
            table,
            getattr(outputs, kind),
            provenance_record(step="ablation_effects_tables", sources=sources),
        )
        gathered[kind] = table
    source = ", ".join(
        f"{Path(path).name} sha256 {sha256_file(path)}"
        for path in (outputs.perplexity, outputs.attention)
    )
    plot_ablation_effects(gathered["perplexity"], gathered["attention"], list(figures), source)
    return gathered["perplexity"], gathered["attention"]
