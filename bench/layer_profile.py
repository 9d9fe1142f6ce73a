"""A shipped config's contextuality profile, per model and layer, as a results file.

Runs the workflow with one config in its own directory (`bench/work/profile-<config>`),
then writes each model's per-layer anisotropy baseline and adjusted SelfSim, IntraSim and
MEV (exact and the paper's estimators), with what each layer's hidden state is, and the
extraction's timing, to ``bench/results/profile-<config>.md``.

    python bench/layer_profile.py config/decoder.yaml
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd
import yaml

from arguments import config_file, output_directory, positive_int
from workdir import run_workflow, write_report

REPO = Path(__file__).resolve().parents[1]
COLUMNS = [
    ("anisotropy", "raw"),
    ("anisotropy[paper]", "raw"),
    ("selfsim", "adjusted"),
    ("intrasim", "adjusted"),
    ("mev", "adjusted"),
    ("mev[truncated_svd]", "adjusted"),
]


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=config_file)
    parser.add_argument("--cores", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    name = args.config.stem
    directory = REPO / "bench" / "work" / f"profile-{name}"
    config = yaml.safe_load(args.config.read_text())
    run_workflow(directory, config, args.cores)

    table = pd.read_csv(directory / "results/tables/measures.tsv", sep="\t")
    sections = [
        f"# Contextuality profile: `{args.config}`",
        f"Written by `bench/layer_profile.py` ({time.strftime('%Y-%m-%d')}); corpus "
        f"{config['corpus'].get('name', config['corpus']['source'])}, seed "
        f"{config.get('measures', {}).get('seed', 0)}. Anisotropy: mean cosine of random "
        "occurrences (exact; the paper's sampled estimate). Adjusted: raw − baseline.",
    ]
    for model in config["models"]:
        meta = json.loads((directory / f"results/embeddings/{model}/meta.json").read_text())
        rows = table[table["model"] == model]
        wide = rows.pivot_table(index="layer", columns="measure", values=["raw", "adjusted"])
        profile = pd.DataFrame(
            {f"{measure} {column}": wide[(column, measure)] for measure, column in COLUMNS}
        )
        profile.insert(
            0, "hidden state", rows.drop_duplicates("layer").set_index("layer")["layer_output"]
        )
        sections.append(
            f"## {model}\n\n{meta['model_id']}"
            + (f" ({meta['settings']['gguf_file']})" if meta["settings"].get("gguf_file") else "")
            + f": {meta['n_layers']} blocks, {meta['hidden_size']} dimensions; extraction "
            f"{meta['seconds']:.0f} s at {meta['tokens_per_second']:,.0f} subword tokens/s "
            f"({meta['device']}); {meta['n_occurrences']:,} word occurrences, "
            f"{meta['subwords_outside_words']:,} subwords in no word, "
            f"{meta['subwords_spanning_words']:,} spanning two words.\n\n"
            + profile.reset_index().to_markdown(index=False, floatfmt=".3f")
        )
    write_report(args.out / f"profile-{name}.md", sections)


if __name__ == "__main__":
    main()
