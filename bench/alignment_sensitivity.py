"""How mutual k-NN between two models' layers, and the best-matching layer it picks, move
with k, the sample of occurrences and its seed.

On the shards of the three-families run (`bench/geometry.py`'s work directory, after
``snakemake --configfile config/families.yaml``), for one pair of models: the rows the
geometry step samples (`alignment.sample_rows`, stream ``geometry_sample``) for each sample
size and seed, those with a vector in every layer of both, each layer's neighbours
searched once at the largest k (the k nearest are its first k: the search sorts them by
cosine, ties to the lower row), then mutual k-NN between every two layers for each k,
its permutation null (one seeded pairing, as the workflow draws it), and for each layer of
the first model the best-matching layer of the second.

    python bench/alignment_sensitivity.py --models smollm2 gemma3

Writes ``bench/results/alignment-sensitivity-<a>-<b>.{tsv,md}``: one row per sample size,
seed, k and pair of layers, and the summary of how far each conclusion moves.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from contextuality.configuration.random_streams import generator
from contextuality.geometry.alignment import sample_rows
from contextuality.geometry.neighbours import Neighbours, cosine_neighbours, mutual_knn
from contextuality.rows import rows_with_vectors

from workdir import REPO, write_report

WORK = REPO / "bench" / "work" / "geometry-families" / "results" / "embeddings"
RESULTS = REPO / "bench" / "results"
KS = (5, 10, 20, 50)
SIZES = (2_500, 5_000, 10_000, 20_000)
SEEDS = (0, 1, 2, 3, 4)
REFERENCE = (10_000, 0, 10)  # the workflow's default: sample size, seed, k


def layer_files(model: str) -> dict[int, Path]:
    """The model's layer shards by layer, in order."""
    files = {int(path.stem.split("_")[1]): path for path in WORK.glob(f"{model}/layer_*.h5")}
    if not files:
        raise SystemExit(f"no shards of {model} under {WORK}: run the families config first")
    return dict(sorted(files.items()))


def sampled_layers(files: dict[int, Path], rows: np.ndarray) -> dict[int, np.ndarray]:
    """The sampled rows of every layer (float16 as stored)."""
    layers = {}
    for layer, path in files.items():
        with h5py.File(path, "r") as shard:
            layers[layer] = shard["vectors"][rows]
    return layers


def n_occurrences(files: dict[int, Path]) -> int:
    with h5py.File(next(iter(files.values())), "r") as shard:
        return len(shard["vectors"])


def first(neighbours: Neighbours, k: int) -> Neighbours:
    """The k nearest of a search made for more."""
    return Neighbours(neighbours.indices[:, :k], neighbours.cosines[:, :k])


def one_sample(models: tuple[str, str], size: int, seed: int) -> pd.DataFrame:
    """Mutual k-NN and its null between every two layers of the two models, for each k,
    on the sample of `size` rows of `seed`."""
    files = [layer_files(model) for model in models]
    rows = sample_rows(n_occurrences(files[0]), size, seed)
    layers = [sampled_layers(found, rows) for found in files]
    keep = np.logical_and.reduce(
        [rows_with_vectors(vectors) for side in layers for vectors in side.values()]
    )
    kept = np.flatnonzero(keep)
    searched = [
        {layer: cosine_neighbours(vectors[kept], max(KS)) for layer, vectors in side.items()}
        for side in layers
    ]
    pairing = generator(seed, "alignment_null").permutation(len(kept))
    records = []
    for k in KS:
        left = {layer: first(found, k) for layer, found in searched[0].items()}
        right = {layer: first(found, k) for layer, found in searched[1].items()}
        for layer_a, one in left.items():
            for layer_b, two in right.items():
                records.append(
                    {
                        "sample_size": size,
                        "seed": seed,
                        "k": k,
                        "n_rows": len(kept),
                        "layer_a": layer_a,
                        "layer_b": layer_b,
                        "mutual_knn": mutual_knn(one, two),
                        "null_mutual_knn": mutual_knn(one, two.paired(pairing)),
                    }
                )
    return pd.DataFrame(records)


def best_layers(table: pd.DataFrame) -> pd.DataFrame:
    """For each sample, seed, k and layer of the first model, the layer of the second with
    the largest mutual k-NN."""
    keys = ["sample_size", "seed", "k", "layer_a"]
    best = table.loc[table.groupby(keys)["mutual_knn"].idxmax(), [*keys, "layer_b"]]
    return best.rename(columns={"layer_b": "best_layer"}).reset_index(drop=True)


def summary(table: pd.DataFrame, models: tuple[str, str]) -> list[str]:
    """The report: the best-layer map per setting, how often it is the reference's, and
    the spread of mutual k-NN over seeds and its ratio to the null by k."""
    best = best_layers(table)
    size, seed, k = REFERENCE
    reference = best[(best["sample_size"] == size) & (best["seed"] == seed) & (best["k"] == k)]
    reference = reference.set_index("layer_a")["best_layer"]
    best["settings"] = [
        f"n={row.sample_size:,} seed={row.seed} k={row.k}" for row in best.itertuples()
    ]
    grid = best.pivot(index="settings", columns="layer_a", values="best_layer")
    order = best.drop_duplicates("settings").set_index("settings").index
    grid = grid.loc[order]
    agrees = (grid == reference).mean(axis=1)
    lines = [
        f"| settings | {' | '.join(str(layer) for layer in grid.columns)} | as the reference |"
    ]
    lines.append("|---" * (len(grid.columns) + 2) + "|")
    for name, row in grid.iterrows():
        cells = " | ".join(str(int(value)) for value in row)
        lines.append(f"| {name} | {cells} | {agrees[name]:.0%} |")
    at_size = table[table["sample_size"] == size]
    spread = at_size.groupby(["k", "layer_a", "layer_b"])["mutual_knn"].agg(["mean", "std"])
    null = at_size.groupby("k")[["mutual_knn", "null_mutual_knn"]].mean()
    by_k = [
        "| k | mean mutual k-NN | mean null | k/(n−1) | largest sd over seeds |",
        "|---|---|---|---|---|",
    ]
    n_rows = int(at_size["n_rows"].median())
    for k_value, row in null.iterrows():
        largest = spread.loc[k_value, "std"].max()
        by_k.append(
            f"| {k_value} | {row['mutual_knn']:.4f} | {row['null_mutual_knn']:.5f} "
            f"| {k_value / (n_rows - 1):.5f} | {largest:.4f} |"
        )
    agreement = best.merge(reference.rename("reference"), left_on="layer_a", right_index=True)
    share = (agreement["best_layer"] == agreement["reference"]).mean()
    return [
        f"# Mutual k-NN between {models[0]} and {models[1]}: k, sample and seed",
        f"Written by `bench/alignment_sensitivity.py` from the three-families run's shards: "
        f"every layer of {models[0]} against every layer of {models[1]}, for sample sizes "
        f"{', '.join(f'{s:,}' for s in SIZES)} (seed 0) and seeds {', '.join(map(str, SEEDS))} "
        f"(at {size:,}), k in {', '.join(map(str, KS))}. The reference is the workflow's "
        f"default: {size:,} rows, seed {seed}, k = {k}.",
        f"Best-matching {models[1]} layer for each {models[0]} layer (columns), by setting; "
        f"the last column is the share of {models[0]}'s layers whose match is the "
        f"reference's. Over all settings, {share:.0%} of the matches are the reference's.",
        "\n".join(lines),
        f"Mutual k-NN by k over the seeds at {size:,} rows (mean over layer pairs and "
        "seeds; the null pairs rows at random), and the largest standard deviation over "
        "the five seeds of one pair's value:",
        "\n".join(by_k),
    ]


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs=2, default=["smollm2", "gemma3"])
    return parser.parse_args(argv)


def main() -> None:
    arguments = parse_arguments()
    models = tuple(arguments.models)
    settings = [(size, 0) for size in SIZES] + [(REFERENCE[0], seed) for seed in SEEDS[1:]]
    frames = []
    for size, seed in settings:
        print(f"sample {size:,}, seed {seed}", flush=True)
        frames.append(one_sample(models, size, seed))
    table = pd.concat(frames, ignore_index=True)
    stem = RESULTS / f"alignment-sensitivity-{models[0]}-{models[1]}"
    table.to_csv(f"{stem}.tsv", sep="\t", index=False, float_format="%.6f")
    write_report(Path(f"{stem}.md"), summary(table, models))


if __name__ == "__main__":
    main()
