"""Intrinsic dimension over scale of a shipped config's models, as committed results.

Runs the workflow with one config in its own directory (`bench/work/dimension-<name>`) up
to the intrinsic-dimension curves and their figure, then writes
``bench/results/dimension-scales-<name>.tsv`` (the curves, as
``results/tables/dimension_scales.tsv``), ``bench/results/dimension-scales-<name>.png``
(the figure) and ``bench/results/dimension-scales-<name>.md``: per model and layer, each
estimator's value on its plateau and where, its smallest and largest scale, and the
layers' order at each end, the numbers docs/geometry.md quotes.

    python bench/dimension_scales.py config/config.yaml
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import pandas as pd
import yaml

from arguments import config_file, positive_int
from workdir import run_workflow, write_report

REPO = Path(__file__).resolve().parents[1]
TARGETS = [
    "results/tables/dimension_scales.tsv",
    "results/tables/measures.tsv",
    "results/figures/intrinsic_dimension_scales.png",
]


def _layer_rows(curves: pd.DataFrame, measures: pd.DataFrame) -> list[str]:
    """One Markdown row per model, estimator and layer: the plateau's value and scales, and
    the estimate at the smallest and the largest length scale."""
    plateau = measures[measures["measure"].str.startswith("intrinsic_dimension[")].set_index(
        ["model", "measure", "layer"]
    )
    rows = []
    for (model, estimator, layer), curve in curves.groupby(["model", "estimator", "layer"]):
        curve = curve.sort_values("radius")
        found = plateau.loc[(model, f"intrinsic_dimension[{estimator}]", layer)]
        value = "none" if pd.isna(found["raw"]) else f"{found['raw']:.2f}"
        ends = [curve.iloc[index] for index in (0, -1)]
        rows.append(
            f"| {model} | {estimator} | {layer} | {value} | {found['scale']} | "
            + " | ".join(f"{end['dimension']:.2f} ({int(end['scale']):,})" for end in ends)
            + f" | {int(curve['n'].iloc[0]):,} |"
        )
    return rows


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=config_file)
    parser.add_argument("--name", default=None, help="results name (default: minilm for config)")
    parser.add_argument("--cores", type=positive_int, default=2)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    name = args.name or ("minilm" if args.config.stem == "config" else args.config.stem)
    directory = REPO / "bench" / "work" / f"dimension-{name}"
    config = yaml.safe_load(args.config.read_text())
    config.setdefault("geometry", {})["activate"] = True  # the embedded default leaves it out
    started = time.perf_counter()
    run_workflow(directory, config, args.cores, ["--", *TARGETS])
    seconds = time.perf_counter() - started
    results = REPO / "bench" / "results"
    curves = pd.read_csv(directory / TARGETS[0], sep="\t")
    measures = pd.read_csv(directory / TARGETS[1], sep="\t")
    shutil.copyfile(directory / TARGETS[0], results / f"dimension-scales-{name}.tsv")
    shutil.copyfile(directory / TARGETS[2], results / f"dimension-scales-{name}.png")
    write_report(
        results / f"dimension-scales-{name}.md",
        [
            f"# Intrinsic dimension over scale: {args.config}",
            f"Written by `bench/dimension_scales.py` ({time.strftime('%Y-%m-%d')}) in "
            f"{seconds:.0f} s on {args.cores} cores. The curves are "
            f"`dimension-scales-{name}.tsv`, drawn in `dimension-scales-{name}.png`. The "
            "value is the mean over the plateau (config `geometry.intrinsic_dimension`); "
            "the ends are the estimate at the smallest and the largest length scale, with "
            "their scale (TwoNN: points per subset; GRIDE: neighbour order k).",
            "| model | estimator | layer | plateau value | plateau scales | smallest scale "
            "| largest scale | distinct points |\n|---|---|---|---|---|---|---|---|\n"
            + "\n".join(_layer_rows(curves, measures)),
        ],
    )


if __name__ == "__main__":
    main()
