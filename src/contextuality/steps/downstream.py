"""The steps of workflow/rules/downstream.smk: the STS pairs, one model's STS score by
layer, and every model's scores with each measure's agreement in tables and a figure.

After Skean et al. 2025, "Layer by Layer"."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from contextuality import backends
from contextuality.backends.base import resolved_device
from contextuality.backends.settings import ModelSettings
from contextuality.configuration import random_streams
from contextuality.corpus.sentences import ScoredPairs, read_sts_archive, scored_pairs
from contextuality.errors import InputDataError
from contextuality.files.provenance import provenance_record, sha256_file
from contextuality.files.tables import (
    read_parquet_with_provenance,
    read_tsv,
    write_parquet,
    write_tsv,
)
from contextuality.measures.downstream import (
    TaskScores,
    agreement_rows,
    measures_by_layer,
    pair_cosines,
    task_scores,
)

PathLike = str | os.PathLike

log = logging.getLogger(__name__)

# The columns of a model's scores, in order: a row per sentence pooling and layer.
SCORE_COLUMNS = (
    "model",
    "pooling",
    "layer",
    "n_layers",
    "spearman",
    "low",
    "high",
    "n_pairs",
    "draws",
    "level",
)


@dataclasses.dataclass(frozen=True)
class PairFiles:
    """The task's pairs (``pairs``: left, right, gold, dataset; left and right index
    ``sentences``) and their distinct sentences (``sentences``: text)."""

    pairs: PathLike
    sentences: PathLike


@dataclasses.dataclass(frozen=True)
class ScoreFiles:
    """One model's task scores by sentence pooling and layer (``scores``, `SCORE_COLUMNS`)
    and the score of every layer on each bootstrap draw (``draws``: pooling, draw, layer,
    spearman)."""

    scores: PathLike
    draws: PathLike


@dataclasses.dataclass(frozen=True)
class DownstreamTables:
    """Every model's scores (``scores``) and each geometry measure's agreement with them
    (``agreement``), as TSV tables."""

    scores: PathLike
    agreement: PathLike


def sts_pairs(
    archives: Mapping[int, PathLike],
    count: int | None,
    seed: int,
    verify_checksums: bool,
    outputs: PairFiles,
) -> ScoredPairs:
    """The scored pairs of the STS `archives` (year → archive), `count` of them drawn
    without replacement (stream ``downstream_pairs`` of `seed`; None or more than there
    are: every one), written to `outputs` with their provenance."""
    pairs, checksums = [], {}
    for year, archive in sorted(archives.items()):
        found, members = read_sts_archive(archive, year, verify_checksums)
        pairs += found
        checksums |= members
    scored = [pair for pair in pairs if pair.gold is not None]
    n_scored = len(scored)
    if count is not None and count < len(scored):
        rng = random_streams.generator(seed, "downstream_pairs")
        scored = [scored[i] for i in np.sort(rng.choice(len(scored), count, replace=False))]
    task = scored_pairs(scored)
    provenance = provenance_record(
        step="sts_pairs",
        years=sorted(archives),
        n_scored=n_scored,
        n_pairs=len(task.gold),
        n_sentences=len(task.sentences),
        requested=count,
        seed=seed,
        sts_checksums=checksums,
    )
    frame = pd.DataFrame(
        {"left": task.left, "right": task.right, "gold": task.gold, "dataset": task.dataset}
    )
    write_parquet(frame, outputs.pairs, provenance)
    write_parquet(pd.DataFrame({"text": task.sentences}), outputs.sentences, provenance)
    log.info(
        "%d of %d scored STS pairs, %d sentences", len(task.gold), n_scored, len(task.sentences)
    )
    return task


def _read_pairs(files: PairFiles) -> tuple[ScoredPairs, dict]:
    """The pairs `sts_pairs` wrote, and their provenance."""
    pairs, provenance = read_parquet_with_provenance(files.pairs)
    sentences, _ = read_parquet_with_provenance(files.sentences)
    task = ScoredPairs(
        sentences["text"].tolist(),
        pairs["left"].to_numpy(),
        pairs["right"].to_numpy(),
        pairs["gold"].to_numpy(dtype=np.float64),
        pairs["dataset"].tolist(),
    )
    return task, provenance


def sts_by_layer(
    spec: ModelSettings,
    pair_files: PairFiles,
    outputs: ScoreFiles,
    draws: int,
    seed: int,
    threads: int = 1,
) -> pd.DataFrame:
    """Model `spec`'s STS score at every layer (0 to its last), for each sentence pooling
    of `extraction.sentence_vectors` (``mean``, ``past_first``): Spearman's ρ between the
    gold scores and the cosine of each pair's sentence vectors, with a percentile interval
    over `draws` bootstrap draws of the pairs (stream ``downstream_bootstrap`` of `seed`,
    the same draws for every layer and pooling), written to `outputs`. Every layer is
    scored whatever the config's ``layers`` list: the sentences are few, and the best
    layer is read off every one."""
    import torch

    from contextuality.extraction.sentence_vectors import POOLINGS, sentence_vectors

    torch.set_num_threads(max(1, threads))
    task, pairs_provenance = _read_pairs(pair_files)
    loaded = backends.load_model(spec, resolved_device(spec.device, f"models.{spec.name}.device"))
    layers = tuple(range(loaded.n_layers + 1))
    pooled = sentence_vectors(loaded, task.sentences, layers, POOLINGS)
    scores, per_draw = [], []
    for pooling, vectors in pooled.items():
        cosines = {
            layer: pair_cosines(vectors[position], task.left, task.right)
            for position, layer in enumerate(layers)
        }
        rng = random_streams.generator(seed, "downstream_bootstrap")
        try:
            result = task_scores(cosines, task.gold, draws, rng)
        except ValueError as error:
            raise InputDataError(f"{spec.name}: STS scores by layer: {error}") from error
        scores.append(
            result.table.assign(model=spec.name, n_layers=loaded.n_layers, pooling=pooling)
        )
        drawn = pd.DataFrame(result.draws, columns=list(layers)).rename_axis("draw")
        long = drawn.reset_index().melt(id_vars="draw", var_name="layer", value_name="spearman")
        per_draw.append(long.assign(pooling=pooling)[["pooling", "draw", "layer", "spearman"]])
    table = pd.concat(scores, ignore_index=True)[list(SCORE_COLUMNS)]
    provenance = provenance_record(
        step="sts_by_layer",
        **backends.model_record(spec, loaded),
        pairs=pairs_provenance,
        draws=draws,
        seed=seed,
    )
    write_parquet(table, outputs.scores, provenance)
    draws_table = pd.concat(per_draw, ignore_index=True).astype({"layer": "int64"})
    write_parquet(draws_table, outputs.draws, provenance)
    return table


def _task_scores(scores: pd.DataFrame, draws: pd.DataFrame) -> TaskScores:
    """One model's and pooling's rows of `sts_by_layer`'s files as `TaskScores`."""
    layers = scores["layer"].to_numpy()
    grid = draws.pivot(index="draw", columns="layer", values="spearman")
    return TaskScores(scores.reset_index(drop=True), grid[layers].to_numpy())


def downstream_tables(
    inputs: Sequence[ScoreFiles],
    measures_table: PathLike,
    outputs: DownstreamTables,
    figures: Sequence[PathLike],
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every model's scores (`inputs`) in one table, and each geometry measure of the run's
    `measures_table` against them (`downstream.agreement_rows`: Spearman's ρ across the
    layers both have, its interval over the score's draws, its permutation p-value; the
    orderings sampled past 8 layers from stream ``downstream_orderings`` of `seed`), each
    written with its provenance; the figure (`figures.downstream.plot_downstream`) into
    each of `figures`."""
    from contextuality.figures.downstream import plot_downstream

    measures = read_tsv(measures_table)
    tables, agreement, sources, geometry = [], [], [], {}
    for files in inputs:
        scores, source = read_parquet_with_provenance(files.scores)
        draws, _ = read_parquet_with_provenance(files.draws)
        sources.append(source)
        tables.append(scores)
        model = str(scores["model"].iloc[0])
        by_layer = geometry[model] = measures_by_layer(measures, model)
        for pooling, rows in scores.groupby("pooling", sort=False):
            result = _task_scores(rows, draws[draws["pooling"] == pooling])
            rng = random_streams.generator(seed, "downstream_orderings")
            found = agreement_rows(by_layer, result, rng)
            agreement += [{"model": model, "pooling": pooling} | row for row in found]
        if by_layer.empty:
            log.info(
                "%s: no geometry measure of the measures table to set against its score", model
            )
    table = pd.concat(tables, ignore_index=True)
    agreed = pd.DataFrame(
        agreement,
        columns=["model", "pooling", "measure", "rho", "low", "high", "p_value", "n_layers"],
    )
    provenance = provenance_record(step="downstream_tables", sources=sources, seed=seed)
    write_tsv(table, outputs.scores, provenance)
    write_tsv(agreed, outputs.agreement, provenance)
    source = ", ".join(
        f"{Path(path).name} sha256 {sha256_file(path)}" for path in (outputs.scores, measures_table)
    )
    plot_downstream(table, geometry, list(figures), source)
    return table, agreed
