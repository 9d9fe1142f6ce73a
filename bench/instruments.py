"""The instruments beyond the paper on a shipped config, as a results file.

Runs the workflow with `config` (by default config/instruments.yaml) in a work directory
(`bench/work/geometry-families` by default, whose shards `bench/geometry.py` may have
extracted already) and writes ``bench/results/<config>.md``: per model and
layer the spectrum rows (matrix entropy of the corpus and within sentences, α-ReQ,
curvature, effective rank) and the share of occurrences with a massive activation; the
anisotropy baseline and adjusted SelfSim raw and under the config's other transforms;
each layer's best match in every other model; beside it the run's tables the
docs quote (``<config>-{measures,alignment,best_layers,massive_activations}.tsv``) and
its figures (``<config>-*.png``).

    python bench/instruments.py config/instruments.yaml
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import pandas as pd
import yaml

from contextuality.geometry.best_layers import BEST_LAYER_COLUMNS

from arguments import config_file, output_directory, positive_int
from workdir import run_workflow, write_report

REPO = Path(__file__).resolve().parents[1]
# The measures-table rows of the instruments, by layer (transform none).
INSTRUMENT_ROWS = (
    "dataset_entropy",
    "prompt_entropy",
    "curvature",
    "alpha_req",
    "effective_rank",
    "massive_activations",
)
FIGURES = ("alignment", "matrix_entropy", "alpha_req", "curvature", "massive_activations")
TABLES = ("alignment", "best_layers", "massive_activations")


def _by_layer(table: pd.DataFrame, transform: str, measure: str, column: str) -> pd.Series:
    rows = table[(table["transform"] == transform) & (table["measure"] == measure)]
    return rows.set_index(["model", "layer"])[column]


def _sections(measures: pd.DataFrame, best: pd.DataFrame) -> list[str]:
    """The report's tables: the instruments by layer, the measures under each transform,
    and the best-matching layers between models (debiased CKA and mutual k-NN)."""
    sections = []
    instruments = pd.DataFrame(
        {row: _by_layer(measures, "none", row, "raw") for row in INSTRUMENT_ROWS}
    )
    transforms = [name for name in dict.fromkeys(measures["transform"]) if name != "none"]
    corrected = pd.DataFrame(
        {
            f"{label} {transform}": _by_layer(measures, transform, measure, column)
            for measure, column, label in (
                ("anisotropy", "raw", "anisotropy"),
                ("selfsim", "adjusted", "adj. SelfSim"),
            )
            for transform in ["none", *transforms]
        }
    )
    for title, frame in (
        ("Spectrum, sentence shape and massive activations (raw vectors)", instruments),
        ("The paper's measures raw and without the outlier dimensions", corrected),
    ):
        sections.append(f"## {title}")
        for model, rows in frame.reset_index().groupby("model", sort=False):
            body = rows.drop(columns="model").to_markdown(index=False, floatfmt=".3f")
            sections.append(f"### {model}\n\n{body}")
    chosen = best[
        (best["occurrences"] == "all") & best["measure"].isin(["cka_debiased", "mutual_knn"])
    ]
    columns = [column for column in BEST_LAYER_COLUMNS if column != "occurrences"]
    sections.append(
        "## Best-matching layers (every sampled occurrence)\n\n"
        + chosen[columns].to_markdown(index=False, floatfmt=".3f")
    )
    return sections


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "config", type=config_file, nargs="?", default=REPO / "config/instruments.yaml"
    )
    parser.add_argument("--cores", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument(
        "--workdir", type=output_directory, default=REPO / "bench" / "work" / "geometry-families"
    )
    parser.add_argument(
        "--keep-measured",
        action="store_true",
        help="rerun a job for a changed input or code only, not for settings that changed "
        "no number of it (Snakemake's --rerun-triggers mtime input code)",
    )
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    name = args.config.stem
    config = args.config.resolve()
    shown = config.relative_to(REPO) if config.is_relative_to(REPO) else config
    started = time.perf_counter()
    extra = ["--rerun-triggers", "mtime", "input", "code"] if args.keep_measured else []
    run_workflow(args.workdir, yaml.safe_load(args.config.read_text()), args.cores, extra)
    minutes = (time.perf_counter() - started) / 60
    measures = pd.read_csv(args.workdir / "results/tables/measures.tsv", sep="\t")
    kept = measures[
        measures["measure"].isin([*INSTRUMENT_ROWS, "anisotropy", "selfsim", "rogue_share[3]"])
    ]
    kept.to_csv(args.out / f"{name}-measures.tsv", sep="\t", index=False)
    for table in TABLES:
        shutil.copyfile(
            args.workdir / f"results/tables/{table}.tsv",
            args.out / f"{name}-{table}.tsv",
        )
    for figure in FIGURES:
        shutil.copyfile(
            args.workdir / f"results/figures/{figure}.png",
            args.out / f"{name}-{figure}.png",
        )
    for ablated in sorted((args.workdir / "results/figures/ablation").glob("*.png")):
        shutil.copyfile(ablated, args.out / f"{name}-ablation-{ablated.name}")
    best = pd.read_csv(args.workdir / "results/tables/best_layers.tsv", sep="\t")
    header = [
        f"# The instruments beyond the paper: `{shown}`",
        f"Written by `bench/instruments.py` ({time.strftime('%Y-%m-%d')}; "
        + (
            f"the workflow run took {minutes:.0f} min on {args.cores} cores, shards already "
            "extracted reused). "
            if minutes >= 1
            else "every output of the workflow run reused). "
        )
        + "Definitions: docs/instruments.md. Tables beside this file: "
        f"`{name}-measures.tsv` (the rows below, every transform), "
        f"`{name}-alignment.tsv`, `{name}-best_layers.tsv`, "
        f"`{name}-massive_activations.tsv`; figures `{name}-*.png`.",
    ]
    write_report(args.out / f"{name}.md", header + _sections(measures, best))


if __name__ == "__main__":
    main()
