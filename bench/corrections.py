"""Every correction of the embedding space on the embedded default, as a results file.

Runs the workflow with `config/config.yaml` and `config/corrections.yaml` on top (all five
transforms) in its own directory (`bench/work/corrections`), timed, then writes per layer
and transform: the cosine baseline, adjusted SelfSim, the isotropy scores (IsoScore,
IsoScore* with its interval, I(W), effective rank, the share of the expected cosine owed
to the top 1 and 3 dimensions and which they are) and the norm–frequency correlations, and
the degeneration table by frequency bin, to ``bench/results/corrections-<model>.md``.

    python bench/corrections.py
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import yaml

from arguments import output_directory, positive_int
from workdir import run_workflow, write_report

REPO = Path(__file__).resolve().parents[1]
TRANSFORMS = ["none", "center", "standardize", "abtt", "whiten", "drop_rogue"]


def _by_transform(table: pd.DataFrame, measure: str, column: str = "raw") -> pd.DataFrame:
    rows = table[table["measure"] == measure]
    wide = rows.pivot(index="layer", columns="transform", values=column)
    return wide[[name for name in TRANSFORMS if name in wide.columns]]


def _intervals(table: pd.DataFrame, measure: str, column: str) -> pd.DataFrame:
    """`column`'s interval of `measure` (its ``_low`` and ``_high`` columns) as text,
    layers × transforms."""
    rows = table[table["measure"] == measure].copy()
    rows["interval"] = [
        f"[{low:.4f}, {high:.4f}]"
        for low, high in zip(rows[f"{column}_low"], rows[f"{column}_high"], strict=True)
    ]
    return _by_transform(rows, measure, "interval")


def _isotropy(table: pd.DataFrame, transform: str) -> pd.DataFrame:
    rows = table[table["transform"] == transform].set_index(["measure", "layer"])

    def values(measure: str, column: str = "raw") -> pd.Series:
        return rows.loc[measure, column]

    return pd.DataFrame(
        {
            "IsoScore": values("isoscore"),
            "IsoScore*": values("isoscore*"),
            "IsoScore* 95%": [
                f"[{low:.3f}, {high:.3f}]"
                for low, high in zip(
                    values("isoscore*", "raw_low"), values("isoscore*", "raw_high"), strict=True
                )
            ],
            "I(W)": values("partition_ratio"),
            "effective rank": values("effective_rank"),
            "top-1 share": values("rogue_share[1]"),
            "top-3 share": values("rogue_share[3]"),
            "top-3 dimensions": values("rogue_share[3]", "dimensions"),
            "ρ(norm of mean vector, count)": values("norm~frequency"),
            "ρ(mean occurrence norm, count)": values("occurrence_norm~frequency"),
        }
    )


def _markdown(frame: pd.DataFrame, floatfmt: str = ".4f") -> str:
    table = frame.reset_index()
    table["layer"] = table["layer"].astype(str)  # not formatted as a float
    return table.to_markdown(index=False, floatfmt=floatfmt)


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    directory = REPO / "bench" / "work" / "corrections"
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    corrections = yaml.safe_load((REPO / "config" / "corrections.yaml").read_text())
    for section, values in corrections.items():
        config.setdefault(section, {}).update(values)
    start = time.perf_counter()
    run_workflow(directory, config, args.cores)
    seconds = time.perf_counter() - start

    table = pd.read_csv(directory / "results/tables/measures.tsv", sep="\t")
    degeneration = pd.read_csv(directory / "results/tables/degeneration.tsv", sep="\t")
    measure_seconds = [
        pd.read_csv(path, sep="\t")["s"].iloc[0]
        for path in (directory / "benchmarks" / "measures").rglob("*.tsv")
    ]
    for model in config["models"]:
        rows = table[table["model"] == model]
        sections = [
            f"# Corrections of the embedding space: {model}",
            f"Written by `bench/corrections.py` ({time.strftime('%Y-%m-%d')}): "
            "`config/config.yaml` with `config/corrections.yaml` on top, seed "
            f"{config['measures'].get('seed', 0)}. Each correction is fitted on the "
            "held-out 20% of the sentences and measured on the other 80%; `none` on all. "
            f"Whole run {seconds:.0f} s on {args.cores} cores, measure jobs "
            f"{min(measure_seconds):.1f}–{max(measure_seconds):.1f} s each.",
            "## Cosine baseline (exact mean cosine of occurrences in different sentences)",
            _markdown(_by_transform(rows, "anisotropy")),
            "## Adjusted SelfSim (exact)",
            _markdown(_by_transform(rows, "selfsim", "adjusted")),
            "## Adjusted SelfSim: 95% interval (bootstrap over words)",
            _markdown(_intervals(rows, "selfsim", "adjusted")),
        ]
        for transform in TRANSFORMS:
            if transform in set(rows["transform"]):
                sections += [
                    f"## Isotropy and frequency under `{transform}`",
                    _markdown(_isotropy(rows, transform)),
                ]
        bins = degeneration[
            (degeneration["model"] == model) & (degeneration["transform"] == "none")
        ]
        columns = ["layer", "vectors", "bin", "n_words", "n", "norm", "knn_distance", "knn_dot"]
        sections += [
            "## Degeneration by frequency-rank bin, raw vectors (`none`)",
            bins[columns + ["mean_direction_cosine"]].to_markdown(index=False, floatfmt=".3f"),
        ]
        write_report(args.out / f"corrections-{model}.md", sections)


if __name__ == "__main__":
    main()
