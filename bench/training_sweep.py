"""Does anisotropy emerge with training? A checkpoint sweep of two tiny models trained here.

Trains a tiny GPT-2-style and a tiny BERT-style model from scratch on the Lee corpus
(`bench/train_checkpoints.py`, checkpoints in `bench/work/checkpoints/`), runs the workflow
over their checkpoints as two sweeps (`models.<name>.sweep`, the embedded default's corpus)
in `bench/work/training-sweep/`, and writes each sweep's anisotropy baseline, adjusted
SelfSim and intrinsic dimension by layer and step to ``bench/results/training-sweep.md``,
with the sweep figures beside it (``training-sweep-<model>.png``).

    python bench/training_sweep.py [--steps 0 50 200 1000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from workdir import run_workflow, write_report

REPO = Path(__file__).resolve().parents[1]
KINDS = ("gpt2", "bert")


def _train(checkpoints: Path, steps: list[int], seed: int) -> dict[str, dict]:
    """Train both models unless their checkpoints are there (of this seed); returns each
    model's last checkpoint's ``training.json`` (its loss and training seconds)."""
    last = {kind: checkpoints / kind / f"step_{max(steps)}" / "training.json" for kind in KINDS}
    present = all(
        (checkpoints / kind / f"step_{step}").is_dir() for kind in KINDS for step in steps
    )
    if not present or any(json.loads(path.read_text())["seed"] != seed for path in last.values()):
        command = [sys.executable, str(REPO / "bench" / "train_checkpoints.py"), "--out"]
        command += [str(checkpoints), "--seed", str(seed), "--overwrite", "--steps"]
        subprocess.run([*command, *map(str, steps)], check=True)
    return {kind: json.loads(path.read_text()) for kind, path in last.items()}


def _config(checkpoints: Path, steps: list[int], seed: int) -> dict:
    """The embedded default's corpus, each trained model a sweep over its checkpoints."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["models"] = {
        f"tiny-{kind}": {
            "sweep": {"steps": steps, "source": str(checkpoints / kind / "step_{step}")}
        }
        for kind in KINDS
    }
    config["measures"] = {"transforms": ["none"], "seed": seed}
    return config


def _by_layer_and_step(table: pd.DataFrame, model: str, measure: str, column: str) -> str:
    """A measure of one sweep as a Markdown table: a row per layer, a column per step."""
    rows = table[(table["measure"] == measure) & table["model"].str.startswith(f"{model}.step")]
    rows = rows.assign(step=rows["model"].str.split(".step").str[1].astype(int))
    wide = rows.pivot(index="layer", columns="step", values=column)
    wide.columns = [f"step {step:,}" for step in wide.columns]
    return wide.reset_index().to_markdown(index=False, floatfmt=".3f")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 50, 200, 1000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    checkpoints = REPO / "bench" / "work" / "checkpoints"
    training = _train(checkpoints, args.steps, args.seed)
    directory = REPO / "bench" / "work" / "training-sweep"
    start = time.perf_counter()
    run_workflow(directory, _config(checkpoints, args.steps, args.seed), args.cores)
    measured = time.perf_counter() - start
    table = pd.read_csv(directory / "results/tables/measures.tsv", sep="\t")
    sections = [
        "# Does anisotropy emerge with training?",
        f"Written by `bench/training_sweep.py` ({time.strftime('%Y-%m-%d')}): a tiny GPT-2 "
        "and a tiny BERT trained from scratch on the Lee corpus (`bench/train_checkpoints.py`, "
        f"seed {args.seed}), each checkpoint measured by the workflow as a sweep "
        f"({measured:.0f} s, "
        f"{args.cores} cores). Anisotropy: the exact mean cosine of occurrences in "
        "different sentences; SelfSim adjusted by it; intrinsic dimension: TwoNN.",
    ]
    for kind in KINDS:
        model = f"tiny-{kind}"
        figure = args.out / f"training-sweep-{kind}.png"
        shutil.copyfile(directory / f"results/figures/sweeps/{model}.png", figure)
        trained = training[kind]
        sections += [
            f"## {model}\n\n{trained['config']['parameters']:,} parameters; step "
            f"{trained['step']:,}: loss {trained['loss']:.3f} after {trained['seconds']:.0f} s "
            f"of training. Figure: `{figure.relative_to(REPO)}`.",
            "Anisotropy\n\n" + _by_layer_and_step(table, model, "anisotropy", "raw"),
            "Adjusted SelfSim\n\n" + _by_layer_and_step(table, model, "selfsim", "adjusted"),
            "Intrinsic dimension (TwoNN)\n\n"
            + _by_layer_and_step(table, model, "intrinsic_dimension[twonn]", "raw"),
        ]
    write_report(args.out / "training-sweep.md", sections)


if __name__ == "__main__":
    main()
