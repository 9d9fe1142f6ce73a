"""Draw a results file's alignment figures again from its committed tables, after a change
to the figures: ``bench/results/<name>-alignment.tsv`` gives ``<name>-alignment.png`` and
``<name>-cka.png``, and ``<name>-best_layers.tsv`` ``<name>-best_layers.png`` (each where
the figure was there before and its table has what it draws), measuring nothing; with
``--ablation BASE ABLATED BLOCK``, ``<name>-ablation-<ABLATED>.png`` from
``<name>-measures.tsv`` and the alignment table (the panels of the measures it holds).

    python bench/redraw.py instruments geometry-families
    python bench/redraw.py instruments --ablation smollm2 smollm2-zeroed 12
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from contextuality.figures.ablation import plot_ablation
from contextuality.figures.alignment import plot_alignment
from contextuality.figures.best_layers import plot_best_layers
from contextuality.figures.docs import untransformed
from contextuality.figures.geometry import plot_cka
from contextuality.geometry.baselines import without_baselines

from arguments import input_directory

REPO = Path(__file__).resolve().parents[1]


def _alignment(results: Path, name: str) -> pd.DataFrame:
    """The untransformed rows of ``<results>/<name>-alignment.tsv``."""
    return untransformed(pd.read_csv(results / f"{name}-alignment.tsv", sep="\t", comment="#"))


def redraw(results: Path, name: str) -> list[Path]:
    """The figures of `name` drawn again from ``<results>/<name>-alignment.tsv`` (the
    untransformed rows); the paths written."""
    table = _alignment(results, name)
    written = [results / f"{name}-alignment.png"]
    plot_alignment(table, written)
    if (results / f"{name}-cka.png").is_file():
        written.append(results / f"{name}-cka.png")
        plot_cka(without_baselines(table), written[-1:])
    best = results / f"{name}-best_layers.tsv"
    if (results / f"{name}-best_layers.png").is_file() and best.is_file():
        written.append(results / f"{name}-best_layers.png")
        plot_best_layers(pd.read_csv(best, sep="\t", comment="#"), table, written[-1:])
    return written


def redraw_ablation(results: Path, name: str, base: str, ablated: str, block: int) -> Path:
    """``<name>-ablation-<ablated>.png`` drawn again from `name`'s measures and alignment
    tables; its path."""
    measures = pd.read_csv(results / f"{name}-measures.tsv", sep="\t", comment="#")
    alignment = _alignment(results, name)
    path = results / f"{name}-ablation-{ablated}.png"
    plot_ablation(measures, alignment, base, ablated, block, [path])
    return path


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+", help="results prefixes, e.g. instruments")
    parser.add_argument("--results", type=input_directory, default=REPO / "bench" / "results")
    parser.add_argument(
        "--ablation",
        nargs=3,
        action="append",
        default=[],
        metavar=("BASE", "ABLATED", "BLOCK"),
        help="draw the ablation figure of ABLATED (BASE with BLOCK's output ablated) only",
    )
    args = parser.parse_args(argv)
    for base, ablated, block in args.ablation:
        if not block.isdigit():
            parser.error(f"argument --ablation: {base} {ablated} {block}: BLOCK is not a number")
    return args


def main() -> None:
    args = parse_arguments()
    for name in args.names:
        if args.ablation:
            written = [
                redraw_ablation(args.results, name, base, ablated, int(block))
                for base, ablated, block in args.ablation
            ]
        else:
            written = redraw(args.results, name)
        for path in written:
            print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


if __name__ == "__main__":
    main()
