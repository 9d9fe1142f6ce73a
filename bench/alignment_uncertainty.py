"""What the alignment values of a shipped config are worth, as a results file.

Runs the workflow with `config` (an overlay on config/config.yaml, by default
config/full.yaml) in `bench/work/alignment-<config>` as far as the alignment tables and
the geometry figures, and writes ``bench/results/alignment-<config>.md``: per pair of
models, the bootstrap intervals' widths and biases and how many values clear their
permutation null; each layer's alignment with the word baselines beside its best match in
another model (a random-initialised copy, where the config has one); each best match with
its interval, margin, share of draws it stays best and the null of choosing; the geometry
jobs' times. Beside it, the run's tables (``alignment-<config>-{alignment,best_layers}.tsv``)
and figures (``alignment-<config>-{alignment,best_layers}.png``), which the docs quote.

    python bench/alignment_uncertainty.py config/full.yaml
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import pandas as pd
import yaml

from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.baselines import BASELINES

from arguments import config_file, output_directory, positive_int
from workdir import benchmark_seconds, run_workflow, write_report

REPO = Path(__file__).resolve().parents[1]
TARGETS = ("results/tables/alignment.tsv", "results/tables/best_layers.tsv")
FIGURES = ("alignment", "best_layers")


def merged(base: dict, overlay: dict) -> dict:
    """`overlay` over `base`, section by section (a model list replaced whole)."""
    result = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict) and key != "models":
            result[key] = merged(base[key], value)
        else:
            result[key] = value
    return result


def _uncertainty(table: pd.DataFrame) -> pd.DataFrame:
    """Per pair of models (every sampled occurrence) and measure: the median and largest
    interval width, the largest |bias|, and the share of values above their null's
    critical value (calibrated score > 0)."""
    rows = []
    every = table[table["occurrences"] == "all"]
    for (left, right), pair in every.groupby(["model_a", "model_b"], sort=False):
        for record in ALIGNMENT_MEASURES:
            name = record.name
            width = pair[f"{name}_high"] - pair[f"{name}_low"]
            rows.append(
                {
                    "model_a": left,
                    "model_b": right,
                    "measure": name,
                    "median width": width.median(),
                    "largest width": width.max(),
                    "largest |bias|": pair[f"bias_{name}"].abs().max(),
                    "above the null": (pair[f"calibrated_{name}"] > 0).mean(),
                }
            )
    return pd.DataFrame(rows)


def _baselines(table: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    """Each model's layers against the word baselines (debiased CKA, mutual k-NN, with
    their intervals), beside the best match in each other model."""
    every = table[table["occurrences"] == "all"]
    rows = []
    for measure in ("cka_debiased", "mutual_knn"):
        known = every[every["model_b"].isin(BASELINES)]
        for (model, layer), group in known.groupby(["model_a", "layer_a"], sort=False):
            row = {"measure": measure, "model": model, "layer": layer}
            for _, found in group.iterrows():
                label = BASELINES[found["model_b"]]
                row[label] = (
                    f"{found[measure]:.3f} [{found[f'{measure}_low']:.3f}, "
                    f"{found[f'{measure}_high']:.3f}]"
                )
            matches = best[
                (best["model"] == model)
                & (best["layer"] == layer)
                & (best["measure"] == measure)
                & (best["occurrences"] == "all")
            ]
            for _, match in matches.iterrows():
                row[f"best in {match['other_model']}"] = (
                    f"{match['value']:.3f} [{match['low']:.3f}, {match['high']:.3f}]"
                )
            rows.append(row)
    return pd.DataFrame(rows)


def _best(best: pd.DataFrame) -> pd.DataFrame:
    """Each best match (every sampled occurrence), its interval and what the choice is
    worth."""
    every = best[best["occurrences"] == "all"]
    columns = ["model", "layer", "other_model", "measure", "best_layer", "value", "low", "high"]
    columns += ["margin", "stays_best", "best_threshold", "best_p", "best_calibrated"]
    return every[columns]


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "config", type=config_file, nargs="?", default=REPO / "config" / "full.yaml"
    )
    parser.add_argument("--cores", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument("--workdir", type=output_directory, help="a run's directory to keep using")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    name = args.config.stem
    directory = args.workdir or REPO / "bench" / "work" / f"alignment-{name}"
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config = merged(base, yaml.safe_load(args.config.read_text()))
    figures = [f"results/figures/{figure}.png" for figure in FIGURES]
    run_workflow(directory, config, args.cores, ["--", *TARGETS, *figures])
    for target in TARGETS:
        stem = Path(target).stem
        shutil.copyfile(directory / target, args.out / f"alignment-{name}-{stem}.tsv")
    for figure in FIGURES:
        shutil.copyfile(
            directory / f"results/figures/{figure}.png", args.out / f"alignment-{name}-{figure}.png"
        )
    table = pd.read_csv(directory / TARGETS[0], sep="\t", comment="#")
    best = pd.read_csv(directory / TARGETS[1], sep="\t", comment="#")
    settings = table[["permutations", "bootstrap", "n_rows"]].iloc[0]
    timings = pd.DataFrame(
        [
            {"job": str(path.relative_to(directory / "benchmarks")), "seconds": seconds}
            for path in sorted((directory / "benchmarks" / "geometry").rglob("*.tsv"))
            for seconds in [benchmark_seconds(path)]
        ]
    )
    sections = [
        f"# What the alignment values are worth: `{args.config}`",
        f"Written by `bench/alignment_uncertainty.py` ({time.strftime('%Y-%m-%d')}; "
        f"{settings['n_rows']:,} sampled occurrences, {settings['permutations']} permutations, "
        f"{settings['bootstrap']} bootstrap draws over sentences). Intervals: the percentile "
        "interval less the bootstrap's bias (`bias_<measure>`, the draws' mean minus the "
        "value); calibrated: calibrated-similarity's score against the permutation nulls. "
        f"Tables beside this file: `alignment-{name}-alignment.tsv`, "
        f"`alignment-{name}-best_layers.tsv`; figures `alignment-{name}-*.png`.",
        "## Intervals and nulls, per pair of models\n\n"
        + _uncertainty(table).to_markdown(index=False, floatfmt=".4f"),
        "## The word baselines beside the best match in another model\n\n"
        + _baselines(table, best).to_markdown(index=False),
    ]
    if len(best):
        sections.append(
            "## Best-matching layers\n\n" + _best(best).to_markdown(index=False, floatfmt=".3f")
        )
    sections.append(
        "## Geometry jobs (2 cores)\n\n" + timings.to_markdown(index=False, floatfmt=".0f")
    )
    write_report(args.out / f"alignment-{name}.md", sections)


if __name__ == "__main__":
    main()
