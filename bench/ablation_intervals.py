"""SmolLM2 against its ablated copies layer by layer, with intervals, as a results file.

Runs the workflow with config/instruments.yaml's corpus and its three SmolLM2 models
(the model, its massive activations at block 12 set to zero, ``smollm2-zeroed``, and to
their calibrated mean, ``smollm2-mean``) only as far as their shards, in
`bench/work/ablation-intervals`, then aligns each layer of SmolLM2 with the same layer of
each ablated copy alone (`steps.paired_layer_alignment`, ``matching``: the rows of the
whole table between the two models for those pairs) on the same sampled occurrences, with
each value's bootstrap interval over sentences and its permutation null, and writes
``bench/results/ablation-intervals.{md,tsv}``.

    python bench/ablation_intervals.py
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import yaml

from contextuality import steps
from contextuality.geometry.settings import GeometrySettings
from contextuality.workflow.config import geometry_settings

from arguments import output_directory, positive_int
from workdir import (
    extract_models,
    filled_config,
    job_times,
    stored_layers,
    with_interval,
    write_report,
)

REPO = Path(__file__).resolve().parents[1]
NAME = "ablation-intervals"
MODEL = "smollm2"
ABLATED = ("smollm2-zeroed", "smollm2-mean")
MEASURES = ("mutual_knn", "cka_debiased", "cka", "procrustes", "cknna")


def study_config() -> dict:
    """config/instruments.yaml with SmolLM2 and its two ablated copies alone."""
    instruments = yaml.safe_load((REPO / "config/instruments.yaml").read_text())
    return instruments | {
        "models": {name: instruments["models"][name] for name in (MODEL, *ABLATED)}
    }


def _sections(alignment: pd.DataFrame) -> list[str]:
    """Per ablated copy and set of occurrences, each layer against SmolLM2's same layer."""
    sections = []
    for (ablated, occurrences), rows in alignment.groupby(["model_b", "occurrences"], sort=False):
        table = pd.DataFrame(
            {"layer": rows["layer_a"]}
            | {measure: with_interval(rows, measure) for measure in MEASURES}
            | {"null k-NN": rows["null_mutual_knn"].map("{:.4f}".format)}
        )
        sections.append(
            f"## `{MODEL}` against `{ablated}`, occurrences `{occurrences}`\n\n"
            + table.to_markdown(index=False, disable_numparse=True)
        )
    return sections


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument("--workdir", type=output_directory, default=REPO / "bench" / "work" / NAME)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    config = study_config()
    filled = filled_config(config)
    extract_models(args.workdir, config, args.cores, (MODEL, *ABLATED))
    settings = GeometrySettings.from_config(geometry_settings(filled))
    model, index = stored_layers(filled, args.workdir, MODEL)
    tables, seconds = [], {}
    for ablated in ABLATED:
        started = time.perf_counter()
        copy_layers, _ = stored_layers(filled, args.workdir, ablated)
        tables.append(steps.paired_layer_alignment(model, copy_layers, "matching", index, settings))
        seconds[ablated] = time.perf_counter() - started
    alignment = pd.concat(tables, ignore_index=True)
    alignment.to_csv(args.out / f"{NAME}.tsv", sep="\t", index=False)
    options = filled["geometry"]["alignment"]
    header = [
        "# SmolLM2 against its ablated copies, layer by layer, with intervals",
        f"Written by `bench/ablation_intervals.py` ({time.strftime('%Y-%m-%d')}): each layer "
        f"of `{MODEL}` against the same layer of `smollm2-zeroed` (its massive activations "
        "at block 12 set to zero) and `smollm2-mean` (set to their calibrated mean), "
        "config/instruments.yaml's models, on the same "
        f"{filled['geometry']['sample_size']:,} sampled occurrences as "
        "`instruments-alignment.tsv`, every alignment measure with its interval from "
        f"{options['bootstrap']} bootstrap draws over sentences (the percentile interval less "
        f"the bootstrap's bias, at {filled['measures']['confidence']:.0%}) and the mean of "
        f"{options['permutations']} permutation nulls (k = {options['k']}). Table "
        f"`{NAME}.tsv`. Definitions: docs/instruments.md.",
        *_sections(alignment),
        f"## Job times\n\nWall seconds on {args.cores} cores.\n\n"
        + job_times(args.workdir)
        + "".join(
            f"\n| {MODEL} against {ablated}, each layer alone | {value:.0f} |"
            for ablated, value in seconds.items()
        ),
    ]
    write_report(args.out / f"{NAME}.md", header)


if __name__ == "__main__":
    main()
