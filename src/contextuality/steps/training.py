"""The steps of workflow/rules/training.smk: one run's checkpoints, loss curve and probes,
and every run's curves and probes in tables and figures."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from contextuality.configuration import random_streams
from contextuality.errors import InputDataError
from contextuality.files.provenance import provenance_record, sha256_file
from contextuality.files.tables import (
    gather_parquet,
    read_parquet_with_provenance,
    write_parquet,
    write_tsv,
)
from contextuality.training import ProbeSettings, RunSettings, TrainingSettings

PathLike = str | os.PathLike

log = logging.getLogger(__name__)

# The loss curve's columns, in the order of the tables.
CURVE_COLUMNS = ["step", "tokens_seen", "train_loss", "held_out_loss", "unigram_loss", "seconds"]
# A probed layer's columns after its step and layer.
PROBE_COLUMNS = [
    "anisotropy",
    "cos_mean_unigram",
    "cos_pc1_unigram",
    "words",
    "held_out_loss",
    "unigram_loss",
]


@dataclasses.dataclass(frozen=True)
class RunFiles:
    """One run's outputs: its checkpoints directory, its loss curve and its probes."""

    checkpoints: PathLike
    losses: PathLike
    probes: PathLike


def _probe_sentences(texts: list[str], probes: ProbeSettings) -> list[str]:
    """`probes.sentences` of the corpus's `texts`, drawn from stream ``training_probes``
    of the probes' seed, in corpus order (all of them, with a WARNING, where fewer)."""
    if len(texts) <= probes.sentences:
        if len(texts) < probes.sentences:
            log.warning(
                "training.probes.sentences: the corpus has %d sentences, not %d: all probed",
                len(texts),
                probes.sentences,
            )
        return texts
    rng = random_streams.generator(probes.seed, "training_probes")
    chosen = np.sort(rng.choice(len(texts), probes.sentences, replace=False))
    return [texts[index] for index in chosen]


def _actions(saved: Sequence[int], directory: Path, probes: ProbeSettings, texts: list[str]):
    """The action at each step `train` stops at (the saved steps and the probed ones), and
    the probe rows it gathers: a checkpoint saved at `saved`, the model probed at
    ``probes.steps`` on `_probe_sentences` (`api.probes.probe_layers`)."""
    import torch

    from contextuality.api.probes import probe_batches, probe_layers
    from contextuality.training.loop import saver

    save, rows, kept = saver(directory), [], {}

    def act(record: dict, model, tokenizer, data) -> None:
        if record["step"] in probes.steps:
            if not kept:  # the tokenizer and the training blocks are the run's from step 0
                kept["batches"] = probe_batches(tokenizer, _probe_sentences(texts, probes))
                counts = torch.bincount(data.reshape(-1), minlength=len(tokenizer))
                kept["counts"] = counts.numpy()
            losses = {key: record[key] for key in ("held_out_loss", "unigram_loss")}
            for layer in probe_layers(model, kept["batches"], kept["counts"]):
                rows.append({"step": record["step"], **layer, **losses})
        if record["step"] in saved:
            save(record, model, tokenizer, data)

    return act, rows


def _labelled(table: pd.DataFrame, name: str, run: RunSettings) -> pd.DataFrame:
    """`table` with the run's name, architecture, seed and warm-up as its first columns."""
    labels = {"run": name, "architecture": run.architecture, "seed": run.seed}
    return pd.DataFrame({**labels, "warmup": run.warmup}, index=table.index).join(table)


def train_run(
    name: str,
    run: RunSettings,
    settings: TrainingSettings,
    steps: Sequence[int],
    probes: ProbeSettings,
    sentences: tuple[PathLike, PathLike],
    outputs: RunFiles,
    threads: int = 1,
) -> pd.DataFrame:
    """Train run `name` on the training sentences (``sentences[0]``), judged on the
    corpus's (``sentences[1]``, which it never sees), saving each of `steps` to
    ``<outputs.checkpoints>/step_<N>`` and probing each of ``probes.steps`` in memory;
    the loss curve and the probes written to `outputs` with the run's settings, seed and
    thread count as provenance. The checkpoints are written into a temporary directory
    beside their place and renamed into place when every one is."""
    import torch
    from transformers.utils import logging as transformers_logging

    from contextuality.training.loop import train

    torch.set_num_threads(max(1, threads))
    transformers_logging.disable_progress_bar()  # a bar per checkpoint saved: the log says it
    train_table, train_source = read_parquet_with_provenance(sentences[0])
    held_out_table, held_out_source = read_parquet_with_provenance(sentences[1])
    corpora = (train_table["text"].tolist(), held_out_table["text"].tolist())
    overlap = len(set(corpora[0]) & set(corpora[1]))
    if overlap:
        log.warning(
            "training %s: %s of the corpus's %s sentences are also training sentences; "
            "its held-out loss is not on unseen text alone",
            name,
            f"{overlap:,}",
            f"{len(corpora[1]):,}",
        )
    final = Path(outputs.checkpoints)
    final.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    act, probed = _actions(set(steps), temporary, probes, corpora[1])
    try:
        curve = train(run, sorted(set(steps) | set(probes.steps)), corpora, settings, act)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    shutil.rmtree(final, ignore_errors=True)
    os.replace(temporary, final)
    provenance = provenance_record(
        step="train_model",
        run=name,
        settings=dataclasses.asdict(settings),
        run_settings=dataclasses.asdict(run),
        probes=dataclasses.asdict(probes),
        saved_steps=sorted(set(steps)),
        training_table=train_source,
        held_out_table=held_out_source,
        overlapping_sentences=overlap,
        trained=curve[-1]["config"],
    )
    losses = pd.DataFrame([{key: record[key] for key in CURVE_COLUMNS} for record in curve])
    probes_table = pd.DataFrame(probed, columns=["step", "layer", *PROBE_COLUMNS])
    write_parquet(_labelled(probes_table, name, run), outputs.probes, provenance)
    write_parquet(_labelled(losses, name, run), outputs.losses, provenance)
    return losses


def training_losses_table(
    inputs: Sequence[PathLike], output: PathLike, figures: Sequence[PathLike]
) -> pd.DataFrame:
    """Every run's loss curve (`inputs`, `train_run`'s) gathered into the TSV table
    `output` with their provenance, and drawn (`figures.training.plot_training_losses`)
    into each of `figures`."""
    from contextuality.figures.training import plot_training_losses

    if not inputs:
        raise InputDataError("training: no run's loss curve to gather (training.runs is empty)")
    table, provenance = gather_parquet(inputs, "training_losses_table")
    write_tsv(table, output, provenance)
    plot_training_losses(table, list(figures), f"{Path(output).name} sha256 {sha256_file(output)}")
    return table


def training_probes_table(
    inputs: Sequence[PathLike],
    outputs: tuple[PathLike, PathLike],
    figures: Mapping[str, Sequence[PathLike]],
    corpus: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every run's probes (`inputs`, `train_run`'s) gathered into the TSV table
    ``outputs[0]`` and each layer's events (`training.events.probe_events`) into
    ``outputs[1]``, with their provenance, and each architecture's drawn
    (`figures.early_steps.plot_early_steps`, a column per warm-up) into its `figures`,
    titled as measured on held-out sentences of `corpus`."""
    from contextuality.figures.early_steps import plot_early_steps
    from contextuality.training.events import probe_events

    table, provenance = gather_parquet(inputs, "training_probes_table")
    events = probe_events(table)
    write_tsv(table, outputs[0], provenance)
    write_tsv(events, outputs[1], provenance)
    source = ", ".join(f"{Path(path).name} sha256 {sha256_file(path)}" for path in outputs)
    for architecture, paths in figures.items():
        name = f"tiny {architecture}"
        plot_early_steps(table, events, architecture, name, corpus, list(paths), source)
    return table, events
