"""The geometry raw and under the outlier corrections (standardize, drop_rogue), as a results file.

``center`` runs beside them as the control: it moves no point relative to another, so its
intrinsic dimension, CKA and Procrustes distance are the raw vectors' on the rows every
correction is measured on (the sample less its fitting sentences), and what a correction
changes beyond ``center`` is the correction's, not the smaller sample's.

Runs the workflow on MiniLM, SmolLM2-135M and Gemma-3-270M (config/families.yaml's
models, installed and assembled as its header says, Gemma's file under the work directory;
the Lee corpus) with ``geometry.transforms: [none, center, standardize, drop_rogue]``, the
paper's measures raw only, and writes ``bench/results/geometry-corrections.md``: per model
and layer the intrinsic dimension (TwoNN) and the linear CKA and mutual k-NN with the
previous stored layer under each transform, with their nulls; beside it the run's tables
(``geometry-corrections-{measures,alignment}.tsv``) and its figure
(``geometry-corrections.png``). ``--adjacent-intervals`` runs the workflow only as far as
the shards and the fitting split, then aligns each stored layer with the next under each
transform, past each sentence's first word, with the alignment's bootstrap intervals and
permutation nulls (`steps.paired_layer_alignment`: the rows the whole table holds for
those pairs, at a fraction of its cost) and writes
``geometry-corrections-adjacent.{md,tsv}``.

    python bench/geometry_corrections.py [--adjacent-intervals]
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import pandas as pd
import yaml

from contextuality import steps
from contextuality.geometry.settings import GeometrySettings
from contextuality.transforms.layers import TransformFit
from contextuality.workflow.config import geometry_settings, transform_fit_settings

from arguments import output_directory, positive_int
from workdir import (
    extract_models,
    filled_config,
    job_times,
    kept_table,
    run_workflow,
    stored_layers,
    with_interval,
    write_report,
)

REPO = Path(__file__).resolve().parents[1]
NAME = "geometry-corrections"
MODELS = ("minilm", "smollm2", "gemma3")
TRANSFORMS = ["none", "center", "standardize", "drop_rogue"]


def study_config() -> dict:
    """config/families.yaml's corpus and two of its models, the geometry under each
    correction, the paper's measures raw, no degeneration analysis, no optional measure."""
    families = yaml.safe_load((REPO / "config/families.yaml").read_text())
    return {
        "corpus": families["corpus"],
        "index": families["index"],
        "models": {name: families["models"][name] for name in MODELS},
        "measures": {"transforms": ["none"], "leave_out": []},
        "degeneration": {"transforms": []},
        # Within each model: the alignment between models under four transforms takes
        # an hour more on 2 cores (the workflow computes it where this is true).
        "geometry": {"activate": True, "transforms": TRANSFORMS, "alignment_between_models": False},
        "figures": {"relative_layers": True},
    }


def _by_layer(measures: pd.DataFrame, alignment: pd.DataFrame) -> pd.DataFrame:
    """Per model, layer and transform: TwoNN's intrinsic dimension, linear CKA with the
    previous stored layer on every sampled occurrence, and linear CKA and mutual k-NN with
    it past each sentence's first word, with their nulls (and the rows that counts)."""
    dimension = measures[measures["measure"] == "intrinsic_dimension[twonn]"]
    dimension = dimension.set_index(["model", "layer", "transform"])["raw"].rename("ID twonn")
    within = alignment[alignment["model_a"] == alignment["model_b"]]
    rows = []
    for (model, transform), group in within.groupby(["model_a", "transform"]):
        layers = sorted(group["layer_a"].unique())
        indexed = group.set_index(["occurrences", "layer_a", "layer_b"])
        for previous, layer in zip(layers, layers[1:], strict=False):
            every, later = (indexed.loc[(kind, previous, layer)] for kind in ("all", "position>0"))
            rows.append(
                {
                    "model": model,
                    "layer": layer,
                    "transform": transform,
                    "CKA prev (all)": every["cka"],
                    "CKA prev": later["cka"],
                    "null": later["null_cka"],
                    "mutual k-NN prev": later["mutual_knn"],
                    "null k-NN": later["null_mutual_knn"],
                    "rows": later["n_rows"],
                }
            )
    neighbours = pd.DataFrame(rows).set_index(["model", "layer", "transform"])
    return pd.concat([dimension, neighbours], axis=1).reset_index()


def _sections(measures: pd.DataFrame, alignment: pd.DataFrame) -> list[str]:
    """The report's tables: each model's layers under each transform."""
    table = _by_layer(measures, alignment)
    table["transform"] = pd.Categorical(table["transform"], TRANSFORMS, ordered=True)
    table = table.sort_values(["model", "layer", "transform"])
    sections = ["## Each layer under each transform"]
    for model, rows in table.groupby("model", sort=False):
        body = rows.drop(columns="model").to_markdown(index=False, floatfmt=".3f")
        sections.append(f"### {model}\n\n{body}")
    return sections


SPLIT = "results/corpus/fit_split.parquet"


def _kept_adjacent(
    config: dict, workdir: Path, model: str, transform: str, settings: GeometrySettings
) -> tuple[pd.DataFrame, float]:
    """`model`'s alignment of each stored layer with the next under `transform` and its
    wall seconds, kept in `workdir`'s ``adjacent/`` as each is done, so that a stopped run
    resumes with the next (delete ``adjacent/`` after changing the shards)."""
    fit = (
        None
        if transform == "none"
        else TransformFit.of(workdir / SPLIT, transform_fit_settings(config, transform))
    )

    def adjacent() -> pd.DataFrame:
        layers, index = stored_layers(config, workdir, model)
        corrected = steps.GeometryTransform(transform, fit)
        return steps.paired_layer_alignment(
            layers, None, "adjacent", index, settings, corrected, ("position>0",)
        )

    return kept_table(workdir / "adjacent" / f"{model}.{transform}.tsv", adjacent)


def _adjacent_sections(alignment: pd.DataFrame) -> list[str]:
    """Per model, each layer with the previous stored one under each transform, past the
    first words: linear CKA and mutual k-NN with their intervals and nulls."""
    sections = ["## Each layer against the previous one past the first words, with intervals"]
    for model, rows in alignment.groupby("model_a", sort=False):
        rows = rows.set_index(["layer_b", "transform"])
        table = pd.DataFrame(
            {
                "previous": rows["layer_a"],
                "CKA prev": with_interval(rows, "cka"),
                "null": rows["null_cka"].map("{:.3f}".format),
                "mutual k-NN prev": with_interval(rows, "mutual_knn"),
                "null k-NN": rows["null_mutual_knn"].map("{:.4f}".format),
                "rows": rows["n_rows"],
            }
        ).reset_index(names=["layer", "transform"])
        table["transform"] = pd.Categorical(table["transform"], TRANSFORMS, ordered=True)
        body = table.sort_values(["layer", "transform"]).to_markdown(
            index=False, disable_numparse=True
        )
        sections.append(f"### {model}\n\n{body}")
    return sections


def _adjacent_intervals(workdir: Path, out: Path, cores: int) -> None:
    """Extract the models and write the fitting split, then align each stored layer with
    the next under each transform, with intervals (module docstring,
    ``--adjacent-intervals``)."""
    config = study_config()
    filled = filled_config(config)
    extract_models(workdir, config, cores, MODELS, [SPLIT])
    settings = GeometrySettings.from_config(geometry_settings(filled))
    tables, seconds = [], {}
    for model in MODELS:
        for transform in TRANSFORMS:
            table, seconds[model, transform] = _kept_adjacent(
                filled, workdir, model, transform, settings
            )
            tables.append(table)
    alignment = pd.concat(tables, ignore_index=True)
    alignment.to_csv(out / f"{NAME}-adjacent.tsv", sep="\t", index=False)
    options = filled["geometry"]["alignment"]
    header = [
        "# Each layer against the previous one, raw and under the outlier corrections, "
        "with intervals: MiniLM, SmolLM2, Gemma-3",
        f"Written by `bench/geometry_corrections.py --adjacent-intervals` "
        f"({time.strftime('%Y-%m-%d')}): every alignment measure between each stored layer "
        "and the next past each sentence's first word, on the rows of "
        "`geometry-corrections-alignment.tsv` (the same "
        f"{filled['geometry']['sample_size']:,} sampled occurrences; under a correction those "
        "outside its fitting sentences), with its interval from "
        f"{options['bootstrap']} bootstrap draws over sentences (the percentile interval "
        f"less the bootstrap's bias, at {filled['measures']['confidence']:.0%}) and the mean "
        f"of {options['permutations']} permutation nulls (k = {options['k']}). Table "
        f"`{NAME}-adjacent.tsv`. Definitions: docs/instruments.md.",
        *_adjacent_sections(alignment),
        f"## Job times\n\nWall seconds on {cores} cores (jobs of a previous run reused "
        "keep their first time).\n\n"
        + job_times(workdir)
        + "".join(
            f"\n| adjacent alignment of {model}, {transform} | {value:.0f} |"
            for (model, transform), value in seconds.items()
        ),
    ]
    write_report(out / f"{NAME}-adjacent.md", header)


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument("--workdir", type=output_directory, default=REPO / "bench" / "work" / NAME)
    parser.add_argument(
        "--adjacent-intervals",
        action="store_true",
        help="only each layer against the next under each transform, with intervals",
    )
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    if args.adjacent_intervals:
        _adjacent_intervals(args.workdir, args.out, args.cores)
        return
    started = time.perf_counter()
    run_workflow(args.workdir, study_config(), args.cores)
    minutes = (time.perf_counter() - started) / 60
    tables = args.workdir / "results/tables"
    measures = pd.read_csv(tables / "measures.tsv", sep="\t")
    dimension = measures[measures["measure"].str.startswith("intrinsic_dimension")]
    dimension.to_csv(args.out / f"{NAME}-measures.tsv", sep="\t", index=False)
    shutil.copyfile(tables / "alignment.tsv", args.out / f"{NAME}-alignment.tsv")
    shutil.copyfile(
        args.workdir / "results/figures/geometry_transforms.png", args.out / f"{NAME}.png"
    )
    alignment = pd.read_csv(tables / "alignment.tsv", sep="\t")
    header = [
        "# The geometry raw and under the outlier corrections: MiniLM, SmolLM2, Gemma-3",
        f"Written by `bench/geometry_corrections.py` ({time.strftime('%Y-%m-%d')}; the "
        f"workflow run took {minutes:.0f} min on {args.cores} cores, shards already "
        "extracted reused). Each correction is fitted on each layer's held-out sentences "
        "(a fifth) and measured on the sampled occurrences of the others; `none` on the whole "
        "sample (column `rows`: those past the first word). `center` moves no point relative "
        "to another: its values are the raw vectors' on the corrections' rows. Tables beside "
        f"this file: `{NAME}-measures.tsv` (intrinsic dimension), `{NAME}-alignment.tsv`; "
        f"figure `{NAME}.png`. "
        "Definitions: docs/instruments.md.",
    ]
    write_report(args.out / f"{NAME}.md", header + _sections(measures, alignment))


if __name__ == "__main__":
    main()
