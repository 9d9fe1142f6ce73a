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
(``geometry-corrections.png``).

    python bench/geometry_corrections.py
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import pandas as pd
import yaml

from workdir import run_workflow, write_report

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--workdir", type=Path, default=REPO / "bench" / "work" / NAME)
    args = parser.parse_args()
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
