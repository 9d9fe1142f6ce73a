"""Does anisotropy emerge with training? A checkpoint sweep of tiny models trained here.

Trains a tiny GPT-2-style and a tiny BERT-style model from scratch from each of three seeds
on the STS sentences (`bench/train_checkpoints.py`, checkpoints in
`bench/work/checkpoints/`), runs the workflow over each run's checkpoints as a sweep
(`models.<name>.sweep`) on the embedded default's corpus, the Lee sentences none of them
trained on, in `bench/work/training-sweep/`, and writes:

- ``bench/results/training-sweep.tsv``: anisotropy, adjusted SelfSim and IntraSim of every
  model, seed, step and layer;
- ``bench/results/training-sweep-losses.tsv``: every run's held-out loss curve and its
  unigram line;
- ``bench/results/training-sweep.md``: both as tables, each cell the mean over seeds and
  their range, with the figures ``training-sweep-losses.png`` and
  ``training-sweep-<model>.png`` beside it.

    python bench/training_sweep.py [--seeds 0 1 2] [--steps 0 2 5 ... 2000] [--cores 2]
    python bench/training_sweep.py --redraw   # the figures again, from the tables
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from train_checkpoints import CHECKPOINT_STEPS, WARMUP  # noqa: E402

from contextuality.figures.paper import layer_colours  # noqa: E402

from arguments import nonnegative_int, output_directory, positive_int  # noqa: E402
from workdir import run_workflow, write_report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KINDS = {"gpt2": "tiny GPT-2", "bert": "tiny BERT"}
# The measures the sweep reports: (measure, column of measures.tsv) by their name here.
MEASURES = {
    "anisotropy": ("anisotropy", "raw"),
    "adjusted SelfSim": ("selfsim", "adjusted"),
    "IntraSim": ("intrasim", "raw"),
}


def _run(checkpoints: Path, kind: str, seed: int) -> Path:
    return checkpoints / kind / f"seed_{seed}"


def _train(checkpoints: Path, steps: list[int], seeds: list[int]) -> None:
    """Train every model kind from every seed whose checkpoints are not all there."""
    for kind in KINDS:
        for seed in seeds:
            run = _run(checkpoints, kind, seed)
            if all((run / f"step_{step}" / "training.json").is_file() for step in steps):
                continue
            command = [sys.executable, str(REPO / "bench" / "train_checkpoints.py"), "--out"]
            command += [str(checkpoints), "--models", kind, "--seeds", str(seed), "--overwrite"]
            subprocess.run([*command, "--steps", *map(str, steps)], check=True)


def _model_name(kind: str, seed: int) -> str:
    return f"tiny-{kind}-seed{seed}"


def _config(checkpoints: Path, steps: list[int], seeds: list[int]) -> dict:
    """The embedded default's corpus, each training run a sweep over its checkpoints."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["models"] = {
        _model_name(kind, seed): {
            "sweep": {"steps": steps, "source": str(_run(checkpoints, kind, seed) / "step_{step}")}
        }
        for kind in KINDS
        for seed in seeds
    }
    config["measures"] = {"transforms": ["none"], "seed": 0}
    return config


def _measured(table: pd.DataFrame, seeds: list[int]) -> pd.DataFrame:
    """The reported measures of every run as rows (model, seed, step, layer, measure,
    value)."""
    frames = []
    for kind in KINDS:
        for seed in seeds:
            prefix = f"{_model_name(kind, seed)}.step"
            rows = table[table["model"].str.startswith(prefix)]
            for name, (measure, column) in MEASURES.items():
                chosen = rows[rows["measure"] == measure]
                frames.append(
                    pd.DataFrame(
                        {
                            "model": kind,
                            "seed": seed,
                            "step": chosen["model"].str.removeprefix(prefix).astype(int),
                            "layer": chosen["layer"],
                            "measure": name,
                            "value": chosen[column],
                        }
                    )
                )
    return pd.concat(frames).sort_values(["model", "measure", "seed", "layer", "step"])


def _losses(checkpoints: Path, seeds: list[int]) -> pd.DataFrame:
    """Every run's loss curve (losses.tsv), labelled with its model and seed."""
    frames = [
        pd.read_csv(_run(checkpoints, kind, seed) / "losses.tsv", sep="\t").assign(
            model=kind, seed=seed
        )
        for kind in KINDS
        for seed in seeds
    ]
    columns = ["model", "seed", "step", "tokens_seen", "train_loss"]
    frame = pd.concat(frames)
    return frame[[*columns, "held_out_loss", "unigram_loss"]]


def _spread(values: pd.Series) -> str:
    """Mean over seeds and their range: ``0.123 (0.101–0.140)``."""
    return f"{values.mean():.3f} ({values.min():.3f}–{values.max():.3f})"


def _by_layer_and_step(rows: pd.DataFrame) -> str:
    """One measure of one model as Markdown: a row per layer, a column per step, each cell
    the mean over seeds and their range."""
    cells = rows.groupby(["layer", "step"])["value"].agg(_spread).unstack("step")
    cells.columns = [f"step {step:,}" for step in cells.columns]
    return cells.reset_index().to_markdown(index=False)


def _loss_table(losses: pd.DataFrame, steps: list[int]) -> str:
    """Held-out loss at each checkpoint (mean over seeds and range) beside the unigram line
    and how far below it the model is."""
    rows = losses[losses["step"].isin(steps)]
    rows = rows.assign(gap=rows["unigram_loss"] - rows["held_out_loss"])
    by_step = rows.groupby("step").agg(
        held_out=("held_out_loss", _spread),
        unigram=("unigram_loss", "mean"),
        below=("gap", _spread),
    )
    by_step.columns = ["held-out loss (nats)", "unigram (nats)", "below unigram (nats)"]
    return by_step.reset_index().to_markdown(index=False, floatfmt=".3f")


def _symlog_steps(panel) -> None:
    """Steps on a log axis that keeps step 0 (linear below 1)."""
    panel.set_xscale("symlog", linthresh=1)
    panel.set_xlim(left=0)
    panel.set_xlabel("training step (log scale; 0 = initialization)")


def unigram_crossing(losses: pd.DataFrame) -> tuple[int, int] | None:
    """The logged steps between which one model's held-out loss falls below the unigram
    line for good in every seed: the last step at or above it in some seed, the first
    step from which all seeds stay below; None if they never do."""
    below = (losses["held_out_loss"] < losses["unigram_loss"]).groupby(losses["step"]).all()
    steps, below = below.index.to_numpy(), below.to_numpy()
    for index in range(1, len(steps)):
        if below[index:].all() and not below[index - 1]:
            return int(steps[index - 1]), int(steps[index])
    return None


def _mark_training(panel, losses: pd.DataFrame) -> None:
    """The end of the learning rate's warm-up (a dotted line) and the steps between which
    the held-out loss crosses the unigram line (a grey span), on a panel against step."""
    panel.axvline(WARMUP, color="0.3", linestyle=":", lw=1, label=f"end of warm-up ({WARMUP})")
    crossing = unigram_crossing(losses)
    if crossing is not None:
        panel.axvspan(
            *crossing,
            color="0.5",
            alpha=0.15,
            lw=0,
            label=f"loss crosses the unigram line ({crossing[0]}–{crossing[1]})",
        )


def _draw_losses(losses: pd.DataFrame, path: Path) -> None:
    """Held-out loss against step, a line per seed, and the unigram line, a panel per model."""
    figure, panels = plt.subplots(1, len(KINDS), figsize=(10, 4), sharey=True)
    for panel, (kind, title) in zip(panels, KINDS.items(), strict=True):
        rows = losses[losses["model"] == kind]
        for seed, run in rows.groupby("seed"):
            panel.plot(run["step"], run["held_out_loss"], marker=".", label=f"seed {seed}")
        panel.axhline(
            rows["unigram_loss"].mean(), color="black", linestyle="--", label="unigram model"
        )
        _mark_training(panel, rows)
        _symlog_steps(panel)
        panel.set_title(f"{title}: loss on the held-out Lee sentences")
        panel.legend(loc="lower left", fontsize="small")  # the curves fall to the right
    panels[0].set_ylabel("cross-entropy (nats per predicted token)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _draw_measures(measured: pd.DataFrame, losses: pd.DataFrame, kind: str, path: Path) -> None:
    """Each measure against step, a line per layer (the mean over seeds) in a band from the
    lowest seed to the highest, with the end of warm-up and the unigram crossing marked
    (`_mark_training`)."""
    rows = measured[measured["model"] == kind]
    layers = sorted(rows["layer"].unique())
    colours = layer_colours(len(layers))
    figure, panels = plt.subplots(1, len(MEASURES), figsize=(16, 4), layout="constrained")
    for panel, name in zip(panels, MEASURES, strict=True):
        chosen = rows[rows["measure"] == name]
        for colour, layer in zip(colours, layers, strict=True):
            by_step = chosen[chosen["layer"] == layer].groupby("step")["value"]
            low, mean, high = by_step.min(), by_step.mean(), by_step.max()
            panel.plot(mean.index, mean, color=colour, marker=".", label=f"layer {layer}")
            panel.fill_between(mean.index, low, high, color=colour, alpha=0.2, linewidth=0)
        _mark_training(panel, losses[losses["model"] == kind])
        _symlog_steps(panel)
        panel.set_ylabel(name)
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(
        handles,
        labels,
        title="mean of the seeds; band: their range",
        fontsize="small",
        loc="outside right center",
        frameon=False,
    )
    figure.suptitle(f"{KINDS[kind]}, measured on the held-out Lee sentences")
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _draw_figures(measured: pd.DataFrame, losses: pd.DataFrame, out: Path) -> None:
    """The losses' figure and each model's measures' figure, in `out`."""
    _draw_losses(losses, out / "training-sweep-losses.png")
    for kind in KINDS:
        _draw_measures(measured, losses, kind, out / f"training-sweep-{kind}.png")


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=nonnegative_int, nargs="+", default=CHECKPOINT_STEPS)
    parser.add_argument("--seeds", type=nonnegative_int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cores", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument(
        "--redraw",
        action="store_true",
        help="draw the figures again from the tables in --out, training and measuring nothing",
    )
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    if args.redraw:
        measured = pd.read_csv(args.out / "training-sweep.tsv", sep="\t")
        losses = pd.read_csv(args.out / "training-sweep-losses.tsv", sep="\t")
        _draw_figures(measured, losses, args.out)
        return
    checkpoints = REPO / "bench" / "work" / "checkpoints"
    _train(checkpoints, args.steps, args.seeds)
    directory = REPO / "bench" / "work" / "training-sweep"
    start = time.perf_counter()
    # Hundreds of short jobs: the greedy scheduler picks them in a fraction of the time.
    config = _config(checkpoints, args.steps, args.seeds)
    run_workflow(directory, config, args.cores, ["--scheduler", "greedy", "--rerun-incomplete"])
    seconds = time.perf_counter() - start
    measured = _measured(
        pd.read_csv(directory / "results/tables/measures.tsv", sep="\t"), args.seeds
    )
    losses = _losses(checkpoints, args.seeds)
    measured.to_csv(args.out / "training-sweep.tsv", sep="\t", index=False)
    losses.to_csv(args.out / "training-sweep-losses.tsv", sep="\t", index=False)
    _draw_figures(measured, losses, args.out)
    last = json.loads(
        (
            _run(checkpoints, "gpt2", args.seeds[0]) / f"step_{max(args.steps)}" / "training.json"
        ).read_text()
    )["config"]
    sections = [
        "# Does anisotropy emerge with training?",
        f"Written by `bench/training_sweep.py` ({time.strftime('%Y-%m-%d')}). A tiny GPT-2 and "
        f"a tiny BERT ({last['layers']} layers of {last['hidden_size']} dimensions, about "
        f"{last['parameters'] / 1e6:.1f} M parameters) trained from scratch from seeds "
        f"{', '.join(map(str, args.seeds))} on {last['training_sentences']:,} STS sentences "
        f"(`bench/train_checkpoints.py`: batches of {last['batch_size']} blocks of "
        f"{last['max_positions']} tokens), each run's checkpoints measured by the workflow as a "
        f"sweep on the {last['held_out_sentences']:,} Lee sentences none of them trained on "
        f"({seconds:.0f} s, {args.cores} cores). Every cell: the mean over the seeds and their "
        "range. Anisotropy: the exact mean cosine of occurrences in different sentences; "
        "SelfSim adjusted by it; IntraSim: the mean cosine of a sentence's words to their "
        "mean. Tables: `training-sweep.tsv`, `training-sweep-losses.tsv`.",
        "## Loss\n\nHeld-out loss: the mean cross-entropy on the Lee sentences (GPT-2: every "
        "next token; BERT: the same 15 % of positions masked at every step); the unigram "
        "line: the training tokens' add-one smoothed frequencies on the same tokens. Figure: "
        "`bench/results/training-sweep-losses.png`.",
    ]
    for kind, title in KINDS.items():
        sections.append(f"{title}\n\n" + _loss_table(losses[losses["model"] == kind], args.steps))
    for kind, title in KINDS.items():
        figure = args.out / f"training-sweep-{kind}.png"
        sections.append(f"## {title}\n\nFigure: `{figure.relative_to(REPO)}`.")
        for name in MEASURES:
            rows = measured[(measured["model"] == kind) & (measured["measure"] == name)]
            sections.append(f"{name}\n\n" + _by_layer_and_step(rows))
    write_report(args.out / "training-sweep.md", sections)


if __name__ == "__main__":
    main()
