"""Layers against a downstream task (Skean et al. 2025): does a layer's geometry rank the
layers as their semantic textual similarity does?

For every model of a config (by default config/instruments.yaml's MiniLM, SmolLM2 and
Gemma-3; ablated variants skipped) and every layer: Spearman's ρ between the gold scores
of STS 2012–2016 pairs and the cosine of the two sentences' mean-pooled vectors
(`contextuality.extraction.sentence_vectors`, `contextuality.measures.downstream`), with a
bootstrap interval over pairs; beside it the same score with each sentence's first token
left out of its mean (``past_first``), which in SmolLM2 carries the massive activation.
Then, per model, Spearman's ρ across the layers measured
between each geometry measure of the committed tables (the config's run,
``bench/results/instruments-measures.tsv``, and the intrinsic dimension of
``bench/results/geometry-corrections-measures.tsv``, both on the Lee corpus) and that
score, with an interval over the score's draws and an exact permutation p-value. Writes
``bench/results/downstream{,-agreement}.tsv``, ``downstream.md`` and ``downstream.png``.

    python bench/downstream.py [config/instruments.yaml] [--sts DIR] [--pairs 2000]
        [--draws 1000] [--seed 0] [--threads 2]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

from contextuality.backends import load_model, model_settings  # noqa: E402
from contextuality.corpus.sentences import read_sts_archive, scored_pairs  # noqa: E402
from contextuality.errors import ConfigError  # noqa: E402
from contextuality.extraction.sentence_vectors import POOLINGS, sentence_vectors  # noqa: E402
from contextuality.files.provenance import atomic_path  # noqa: E402
from contextuality.measures.downstream import (  # noqa: E402
    AGREEMENT_MEASURES,
    layer_agreement,
    measures_by_layer,
    pair_cosines,
    task_scores,
)

from arguments import (  # noqa: E402
    config_file,
    configured_models,
    input_directory,
    nonnegative_int,
    positive_int,
)
from workdir import short_commit, write_report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
MEASURE_TABLES = ("instruments-measures.tsv", "geometry-corrections-measures.tsv")


def sampled_pairs(sts: Path, count: int, seed: int):
    """`count` of the scored STS 2012–2016 pairs, drawn without replacement (all of them
    if `count` is 0 or more than there are), as `ScoredPairs` over their sentences."""
    pairs = []
    for year in range(2012, 2017):
        pairs += read_sts_archive(sts / f"STS{year}-en-test.zip", year, verify_checksums=True)[0]
    scored = [pair for pair in pairs if pair.gold is not None]
    if 0 < count < len(scored):
        chosen = np.sort(np.random.default_rng(seed).choice(len(scored), count, replace=False))
        scored = [scored[i] for i in chosen]
    return scored_pairs(scored), len([pair for pair in pairs if pair.gold is not None])


def geometry_by_layer(model: str) -> pd.DataFrame:
    """The geometry measures of `model`'s layers (raw vectors), a column per label."""
    tables = [pd.read_csv(RESULTS / name, sep="\t") for name in MEASURE_TABLES]
    rows = pd.concat(tables, ignore_index=True)
    return measures_by_layer(rows, model)


def write_table(table: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as temporary:
        table.to_csv(temporary, sep="\t", index=False, float_format="%.6g")


def draw(scores: pd.DataFrame, geometry: dict[str, pd.DataFrame], path: Path) -> None:
    """Top left: each model's STS score by relative depth (dashed: past the first token).
    Then one panel per geometry measure: the measure against the STS score (mean pooling),
    a point per layer, joined in depth order, the first layer labelled."""
    labels = [label for label, _, _ in AGREEMENT_MEASURES]
    columns = 3
    rows = int(np.ceil((len(labels) + 1) / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows))
    axes = axes.ravel()
    colours = {}
    for (model, pooling), table in scores.groupby(["model", "pooling"], sort=False):
        depth = table["layer"] / table["n_layers"]
        style = {"linestyle": "--", "color": colours[model]} if model in colours else {}
        label = model if pooling == "mean" else f"{model}, past the first token"
        (line,) = axes[0].plot(depth, table["spearman"], marker=".", label=label, **style)
        colours.setdefault(model, line.get_color())
        axes[0].fill_between(depth, table["low"], table["high"], alpha=0.2, color=colours[model])
    scores = scores[scores["pooling"] == "mean"]
    axes[0].set_xlabel("relative depth (layer / number of blocks)")
    axes[0].set_ylabel("STS Spearman ρ (mean-pooled cosine)")
    axes[0].set_title("STS score by layer, 95 % bootstrap band")
    axes[0].legend(fontsize=8)
    for axis, label in zip(axes[1:], labels, strict=False):
        for model, table in scores.groupby("model", sort=False):
            if label not in geometry[model]:
                continue
            measured = geometry[model][label].dropna()
            score = table.set_index("layer")["spearman"].reindex(measured.index)
            axis.plot(measured.to_numpy(), score.to_numpy(), marker="o", markersize=3, label=model)
            axis.annotate(f"{measured.index[0]}", (measured.iloc[0], score.iloc[0]), fontsize=7)
        axis.set_xlabel(label)
        axis.set_ylabel("STS Spearman ρ")
        axis.set_title(f"{label} against the STS score", fontsize=10)
    for axis in axes[len(labels) + 1 :]:
        axis.set_visible(False)
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=100, format="png")
    plt.close(figure)


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before any model loads: a config with a model that is
    not an ablation, the STS mirror, counts of at least 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "config", type=config_file, nargs="?", default=REPO / "config/instruments.yaml"
    )
    parser.add_argument(
        "--sts", type=input_directory, default=REPO.parent / "shared" / "data" / "sts"
    )
    parser.add_argument("--pairs", type=positive_int, default=2000)
    parser.add_argument("--draws", type=positive_int, default=1000)
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument("--threads", type=positive_int, default=2)
    args = parser.parse_args(argv)
    try:
        models = configured_models(args.config)
    except ConfigError as error:
        parser.error(f"{args.config}: {error}")
    if all("ablation" in (section or {}) for section in models.values()):
        parser.error(f"{args.config}: every model is an ablation (nothing to score)")
    return args


def main() -> None:
    args = parse_arguments()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)
    config = yaml.safe_load(args.config.read_text())
    pairs, n_scored = sampled_pairs(args.sts, args.pairs, args.seed)
    scores, agreement, geometry, timings = [], [], {}, []
    for name, section in config["models"].items():
        if "ablation" in section:
            continue
        started = time.perf_counter()
        loaded = load_model(model_settings(name, section))
        layers = tuple(range(loaded.n_layers + 1))
        pooled = sentence_vectors(loaded, pairs.sentences, layers, POOLINGS)
        geometry[name] = geometry_by_layer(name).reindex(list(layers))
        for pooling, vectors in pooled.items():
            cosines = {
                layer: pair_cosines(vectors[layer], pairs.left, pairs.right) for layer in layers
            }
            result = task_scores(cosines, pairs.gold, args.draws, np.random.default_rng(args.seed))
            scores.append(
                result.table.assign(model=name, n_layers=loaded.n_layers, pooling=pooling)
            )
            for label in geometry[name]:
                found = layer_agreement(
                    geometry[name][label].to_numpy(), result, np.random.default_rng(args.seed)
                )
                agreement.append({"model": name, "pooling": pooling, "measure": label} | found)
        timings.append(f"{name} {time.perf_counter() - started:.0f} s")
    scores = pd.concat(scores, ignore_index=True)
    scores = scores[["model", "pooling", "layer", "n_layers", *scores.columns[1:-3]]]
    agreement = pd.DataFrame(agreement)
    write_table(scores, RESULTS / "downstream.tsv")
    write_table(agreement, RESULTS / "downstream-agreement.tsv")
    draw(scores, geometry, RESULTS / "downstream.png")
    commit = short_commit()
    header = [
        "# Layers against a downstream task: STS by layer",
        f"Written by `bench/downstream.py {args.config.name}` ({time.strftime('%Y-%m-%d')}, "
        f"commit {commit}; {', '.join(timings)} on {args.threads} CPU threads). "
        f"{len(pairs.gold):,} of the {n_scored:,} scored STS 2012–2016 pairs (drawn with seed "
        f"{args.seed}), {len(pairs.sentences):,} distinct sentences; a layer's score is "
        "Spearman's ρ between the gold scores and the cosine of the sentences' mean-pooled "
        f"vectors (special tokens left out; `past_first`: the first content token too), with "
        f"a 95 % interval from {args.draws} "
        "bootstrap draws over pairs. The agreement of a geometry measure with the score is "
        "Spearman's ρ across the layers both are measured at (the geometry on the Lee "
        "corpus: `instruments-measures.tsv`, `geometry-corrections-measures.tsv`), its "
        "interval over the score's draws, its p-value over every ordering of the layers. "
        "Tables beside this file: `downstream.tsv`, `downstream-agreement.tsv`; figure "
        "`downstream.png`.",
        "## STS score by layer\n\n" + scores.to_markdown(index=False, floatfmt=".3f"),
        "## Agreement of each geometry measure with the STS score across layers\n\n"
        + agreement.to_markdown(index=False, floatfmt=".3f"),
    ]
    write_report(RESULTS / "downstream.md", header)


if __name__ == "__main__":
    main()
