"""Does the anisotropy peak follow the end of warm-up or the unigram line, and is the shared
direction the unigram direction? Every early step of the tiny models, measured in memory.

`bench/training_sweep.py` saw the anisotropy peak inside the 50-step warm-up and before the
unigram line, and could not tell the two apart. Here the warm-up lasts 10, 50 or 200 steps;
GPT-2 and BERT train from seeds 0, 1, 2 (`train_checkpoints.train`), each checkpoint (every
step to 100, then `LATER_STEPS`) measured as it is reached, on a seeded subset of the
embedded default's Lee sentences (split and de-duplicated as the corpus step does). Per
layer (0: the embeddings, 1–4: the blocks' outputs, as transformers returns them): the
anisotropy (`equations.anisotropy_baseline` on the rows `api.word_rows` pools); the cosine
of the layer's mean and |cos| of its first principal direction with the checkpoint's
`unigram.unigram_direction`; `train_checkpoints.train`'s held-out and unigram losses.
Writes ``bench/results/early-steps.tsv``, ``-events.tsv`` (`run_events`), ``.md`` and
``-<kind>.png``; each run's rows are kept in ``bench/work/early-steps/`` for reuse.

    python bench/early_steps.py [--seeds 0 1 2] [--warmups 10 200 50] [--sentences 100]
        [--held-out-blocks 32]
"""

from __future__ import annotations

import os

# Before torch and numpy: threads that spin while they wait (see train_checkpoints), and
# numpy's BLAS threads, slow every step many times over on cores other jobs share.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import itertools
import json
import subprocess
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402
from train_checkpoints import held_out_sentences, train, training_sentences  # noqa: E402
from transformers.utils import logging  # noqa: E402

from contextuality.api.probes import probe_batches, probe_layers  # noqa: E402
from contextuality.corpus.sentences import build_sentence_table, read_text_corpus  # noqa: E402
from contextuality.figures.early_steps import plot_early_steps  # noqa: E402
from contextuality.files.fetch import resolve_data_path  # noqa: E402
from contextuality.files.provenance import atomic_path  # noqa: E402
from contextuality.training.events import probe_events  # noqa: E402

from arguments import input_directory, nonnegative_int, positive_int  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
WORK = REPO / "bench" / "work" / "early-steps"
KINDS = {"gpt2": "tiny GPT-2", "bert": "tiny BERT"}
WARMUPS = [10, 200, 50]  # the two that part the markers most first
LATER_STEPS = [120, 150, 200, 300, 400, 500]
# Each kind's last step, past its unigram crossing at every warm-up (BERT crosses later).
LAST_STEPS = {"gpt2": 300, "bert": 500}
# The steps measured: every step to 100, then `LATER_STEPS` up to the kind's last.
CHECKPOINTS = {
    kind: [*range(101), *(step for step in LATER_STEPS if step <= last)]
    for kind, last in LAST_STEPS.items()
}
SENTENCE_SEED = 0  # draws the measured subset of the Lee sentences
VALUES = ["anisotropy", "cos_mean_unigram", "cos_pc1_unigram", "held_out_loss", "unigram_loss"]
COLUMNS = ["kind", "seed", "warmup", "step", "layer", *VALUES]


def lee_sentences(count: int | None = None) -> list[str]:
    """`count` (default all) of the embedded default corpus's distinct sentences (split and
    de-duplicated as the corpus step does), drawn from `SENTENCE_SEED`, in corpus order."""
    corpus = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["corpus"]["text"]
    read = read_text_corpus(resolve_data_path(corpus["path"]), not corpus["split_sentences"])
    texts = build_sentence_table(read)["text"].tolist()
    if count is None:
        return texts
    chosen = np.random.default_rng(SENTENCE_SEED).choice(len(texts), count, replace=False)
    return [texts[index] for index in np.sort(chosen)]


def measure_run(kind: str, seed: int, warmup: int, corpora: dict, options) -> dict:
    """Train one run, measuring each checkpoint as it is reached: its rows (`COLUMNS`) and
    the seconds spent training (with the held-out loss) and measuring."""
    rows: list[dict] = []
    clock = {"measuring": 0.0, "batches": None, "counts": None, "words": 0}

    def measure(record: dict, model, tokenizer, data: torch.Tensor) -> None:
        start = time.perf_counter()
        if clock["batches"] is None:
            clock["batches"] = probe_batches(tokenizer, corpora["measured"])
            clock["counts"] = torch.bincount(data.reshape(-1), minlength=len(tokenizer)).numpy()
        labels = {"kind": kind, "seed": seed, "warmup": warmup, "step": record["step"]}
        losses = {name: record[name] for name in ("held_out_loss", "unigram_loss")}
        layers = probe_layers(model, clock["batches"], clock["counts"])
        clock["words"] = layers[0]["words"]
        rows.extend({**labels, **layer, **losses} for layer in layers)
        clock["measuring"] += time.perf_counter() - start

    start = time.perf_counter()
    out = WORK / "training" / f"warmup_{warmup}"
    train(kind, CHECKPOINTS[kind], seed, out, corpora, warmup, measure, options.held_out_blocks)
    training = time.perf_counter() - start - clock["measuring"]
    seconds = {"measuring": clock["measuring"], "training": training}
    return {"rows": rows, "seconds": seconds, "words": clock["words"]}


def run_settings(kind: str, options) -> dict:
    """What a kept run's rows depend on: reused only where these match."""
    chosen = {"sentences": options.sentences, "held_out_blocks": options.held_out_blocks}
    fixed = {"checkpoints": CHECKPOINTS[kind], "sentence_seed": SENTENCE_SEED}
    return {**chosen, **fixed, "threads": torch.get_num_threads()}


def kept_run(kind: str, seed: int, warmup: int, corpora: dict, options) -> dict:
    """One run's rows and timings: from ``bench/work/early-steps`` where kept there with the
    same settings, else measured (`measure_run`) and kept."""
    path = WORK / f"{kind}-seed{seed}-warmup{warmup}.json"
    kept = json.loads(path.read_text()) if path.is_file() else {}
    if kept.get("settings") == run_settings(kind, options):
        return kept
    run = measure_run(kind, seed, warmup, corpora, options)
    run["settings"] = run_settings(kind, options)
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(run) + "\n")
    return run


def run_events(table: pd.DataFrame) -> pd.DataFrame:
    """`training.events.probe_events` of every kind, seed, warm-up and layer."""
    return probe_events(table, ["kind", "seed", "warmup", "layer"])


# Two steps whose factors of change are within this factor move alike (`moves_with`).
SEPARABLE = 1.5
VERDICTS = {"warm-up": "the end of warm-up", "crossing": "the unigram crossing"}
EVENTS = ("peak_step", "half_rise_step")  # the anisotropy's, whose timing is compared


def shifts(by_warmup: pd.DataFrame, event: str = "peak_step") -> dict[str, float]:
    """How many times later a layer's `event` and each marker come at the longest warm-up than
    at the shortest (its events by warm-up); a step below 1 taken as 1, NaN if missing."""
    short, long = (by_warmup.sort_values("warmup").iloc[i] for i in (0, -1))
    columns = {"event": event, "warm-up": "warmup_end", "crossing": "unigram_crossing"}
    return {name: max(long[column], 1) / max(short[column], 1) for name, column in columns.items()}


def moves_with(by_warmup: pd.DataFrame, event: str = "peak_step") -> str:
    """The marker whose `shifts` factor is within `SEPARABLE` of the event's (``warm-up`` or
    ``crossing``); either, if theirs are; neither, if none is; none, if a step is missing."""
    log = {name: np.log(factor) for name, factor in shifts(by_warmup, event).items()}
    if any(np.isnan(value) for value in log.values()):
        return "no marker (a step is missing)"
    if abs(log["warm-up"] - log["crossing"]) < np.log(SEPARABLE):
        return "either marker (the two move alike)"
    nearest = min(VERDICTS, key=lambda name: abs(log[name] - log["event"]))
    if abs(log[nearest] - log["event"]) >= np.log(SEPARABLE):
        return f"neither marker (nearer {VERDICTS[nearest]})"
    return nearest


def _over_warmups(rows: pd.DataFrame, column: str, style: str = "{:.0f}") -> str:
    """One layer's `column` over the warm-ups, shortest first: ``a / b / c``."""
    values = rows.sort_values("warmup")[column]
    return " / ".join("never" if pd.isna(value) else style.format(value) for value in values)


def _by_verdict(blocks: pd.DataFrame, keys: list[str], event: str) -> str:
    """`moves_with` of `event` in each group of `blocks` by `keys`, the groups gathered by
    verdict: ``the unigram crossing (seed 0 layer 1, ...); ...``, or ``... (all)``."""
    grouped: dict[str, list[str]] = {}
    for key, rows in blocks.groupby(keys):
        verdict = moves_with(rows, event)
        label = " ".join(f"{name} {value}" for name, value in zip(keys, key, strict=True))
        grouped.setdefault(VERDICTS.get(verdict, verdict), []).append(label)
    if len(grouped) == 1:
        return f"{next(iter(grouped))} (all)"
    return " and ".join(f"{verdict} ({', '.join(labels)})" for verdict, labels in grouped.items())


def _cases(rows: pd.DataFrame, holds: pd.Series) -> str:
    """``n of N`` where `holds`, naming the seeds, warm-ups and layers of the fewer side."""
    held, failures_fewer = int(holds.sum()), int((~holds).sum()) <= int(holds.sum())
    named = rows[~holds if failures_fewer else holds].groupby(["seed", "warmup"])["layer"]
    labels = "; ".join(
        f"seed {seed} warm-up {warmup} layers {', '.join(map(str, layers))}"
        for (seed, warmup), layers in named
    )
    side = "not" if failures_fewer else "only"
    return f"{held} of {len(rows)}" + (f" ({side}: {labels})" if labels else "")


def _placement(blocks: pd.DataFrame) -> str:
    """Where blocks' peaks fall: before the unigram crossing, after the end of warm-up."""
    before = _cases(blocks, blocks["peak_step"] < blocks["unigram_crossing"])
    after = _cases(blocks, blocks["peak_step"] > blocks["warmup_end"])
    return f"before the unigram crossing in {before}; after the end of warm-up in {after}"


def seed_sentences(found: pd.DataFrame, kind: str, seed: int, last_layer: int) -> str:
    """One seed of one kind: its markers, its last layer's rise and peak, its blocks' peaks
    against the markers, and the cosines with the unigram direction at the peak."""
    rows = found[(found["kind"] == kind) & (found["seed"] == seed)]
    last, blocks = rows[rows["layer"] == last_layer], rows[rows["layer"] >= 1]
    peaks, halves = (_by_verdict(blocks, ["layer"], event) for event in EVENTS)
    factor = shifts(last)
    cosines = ", ".join(
        f"{_over_warmups(layer_rows, 'cos_mean_unigram_at_peak', '{:+.2f}')} (layer {layer})"
        for layer, layer_rows in blocks.groupby("layer")
    )
    return (
        f"**Seed {seed}.** Warm-up {_over_warmups(last, 'warmup_end')} steps; the held-out "
        f"loss is first below the unigram line at step {_over_warmups(last, 'unigram_crossing')}. "
        f"Layer {last_layer}'s anisotropy is past half its rise from step 0 at step "
        f"{_over_warmups(last, 'half_rise_step')} and peaks at step "
        f"{_over_warmups(last, 'peak_step')} ({_over_warmups(last, 'peak_anisotropy', '{:.3f}')}). "
        f"The blocks' peaks fall {_placement(blocks)}. From the shortest warm-up to the "
        f"longest, layer {last_layer}'s peak comes ×{factor['event']:.1f} as late (the end of "
        f"warm-up ×{factor['warm-up']:.0f}, the crossing ×{factor['crossing']:.1f}); the peak "
        f"step moves with {peaks}; the half-rise step with {halves}. "
        f"The layer's mean at its peak has cosine {cosines} with the unigram direction; "
        f"layer {last_layer}'s first principal direction |cos| "
        f"{_over_warmups(last, 'cos_pc1_unigram_at_peak', '{:.2f}')}, its mean "
        f"{_over_warmups(last, 'cos_mean_unigram_last', '{:+.2f}')} at the last step."
    )


def kind_summary(found: pd.DataFrame, kind: str) -> str:
    """Over a kind's seeds, warm-ups and blocks: the peaks against the markers, and whether the
    mean at the peak is the unigram direction (cosine ≥ .9), each exception named."""
    blocks = found[(found["kind"] == kind) & (found["layer"] >= 1)]
    peaks, halves = (_by_verdict(blocks, ["seed", "layer"], event) for event in EVENTS)
    mean_is_unigram = _cases(blocks, blocks["cos_mean_unigram_at_peak"] >= 0.9)
    first = blocks["cos_pc1_unigram_at_peak"]
    return (
        f"**{KINDS[kind]}, all seeds.** Of the {len(blocks)} (seed, warm-up, block) cases, "
        f"the anisotropy peaks {_placement(blocks)}. From the shortest warm-up to the longest, "
        f"the peak step moves with {peaks}; the half-rise step with {halves}. The block's mean "
        f"at its peak has cosine ≥ .90 with the unigram direction in {mean_is_unigram} cases; "
        f"its first principal direction, |cos| {first.min():.2f} to {first.max():.2f}."
    )


def _commit() -> str:
    """The short commit, and whether this script or what it measures with differs from it."""
    paths = ["bench/early_steps.py", "bench/train_checkpoints.py", "src/contextuality/measures"]
    head, changed = (
        subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO).stdout.strip()
        for args in (["rev-parse", "--short", "HEAD"], ["status", "--porcelain", "--", *paths])
    )
    return head + (f" with uncommitted changes to {', '.join(paths)}" if changed else "")


def _what_was_run(table: pd.DataFrame, runs: dict, options) -> list[str]:
    """The paragraphs of early-steps.md that say what was run, on what, and how long it took."""
    seconds = pd.DataFrame([run["seconds"] for run in runs.values()]).sum()
    measured = len(table[["kind", "seed", "warmup", "step"]].drop_duplicates())
    last = " or ".join(f"{step} ({KINDS[kind]})" for kind, step in LAST_STEPS.items())
    listed = {
        name: ", ".join(map(str, sorted(getattr(options, name)))) for name in ("seeds", "warmups")
    }
    return [
        f"Written by `bench/early_steps.py` on {time.strftime('%Y-%m-%d %H:%M')} at commit "
        f"{_commit()}. {len(runs)} runs of `bench/train_checkpoints.py`'s models, data and "
        f"schedule ({' and '.join(KINDS.values())}; seeds {listed['seeds']}; warm-ups of "
        f"{listed['warmups']} steps) to step {last}, on 1 thread, each measured in memory at "
        f"every step to 100 and at {', '.join(map(str, LATER_STEPS))} ({measured:,} checkpoints).",
        f"Measured on {options.sentences} of the Lee corpus's {len(lee_sentences()):,} distinct "
        f"sentences (drawn with seed {SENTENCE_SEED}; "
        f"{max(run['words'] for run in runs.values()):,} words with a vector), and the "
        f"held-out and unigram losses on the first {options.held_out_blocks} held-out blocks "
        "of 128 tokens (the training sweep: the whole corpus, 200 blocks), both cut to "
        "afford every step. Anisotropy: the exact mean cosine of word occurrences in different "
        "sentences, as the workflow computes it. Unigram direction: Eᵀw / ‖Eᵀw‖, E the output "
        "embeddings, w the training tokens' add-one smoothed log-frequencies less their mean "
        "(`contextuality.measures.unigram`); a random direction's cosine with it is of order "
        "1/√128 ≈ .09.",
        f"Time: {seconds.sum() / 60:.1f} min on 2 cores other jobs shared (load "
        f"{os.getloadavg()[0]:.1f} at the end), {seconds['training'] / 60:.1f} min of it training "
        f"with the held-out loss and {seconds['measuring'] / 60:.1f} min measuring "
        f"({seconds['measuring'] / measured:.2f} s a checkpoint).",
    ]


READING = (
    "From the shortest warm-up to the longest, a block's peak 'moves with' a marker (the end of "
    "warm-up, or the unigram crossing: the first checkpoint below the unigram line) whose "
    f"step changes by a factor within {SEPARABLE} of the peak's; with either, if the two "
    "markers' factors are that close; with neither, if no factor is. Past step 100 the "
    "checkpoints are sparse, so a later crossing is known to the next checkpoint only, and "
    "BERT's loss hovers at the line. On a plateau near 1 the peak can fall anywhere; the "
    "half-rise step (half way from step 0's value to the peak) marks the collapse more "
    "steadily. GPT-2's output layer reads layer 4 (after its final LayerNorm) as it is; BERT's "
    "reads it through a dense layer, GELU and LayerNorm and adds a bias: its unigram direction "
    "lies past layer 4."
)


def report(table: pd.DataFrame, found: pd.DataFrame, runs: dict, options) -> str:
    """early-steps.md: what was run, the events table, and per kind and seed what it shows."""
    sections = [
        "# Early steps: warm-up, the unigram line and the unigram direction",
        *_what_was_run(table, runs, options),
        "## Events\n\nPer run and layer: the end of warm-up; the first checkpoint below the "
        "unigram line; the anisotropy's peak (step, value) and the first steps past half "
        "the peak and past half the rise from step 0 to the peak; the cosines of the "
        "layer's mean and first principal direction with the unigram direction at the peak, "
        "and of its mean at the last step. `early-steps-events.tsv`; every checkpoint: "
        "`early-steps.tsv`.\n\n"
        + found.rename(columns=lambda name: name.replace("_", " ")).to_markdown(
            index=False, floatfmt=".3f"
        ),
        "## What the numbers show\n\n" + READING,
    ]
    last_layer = int(table["layer"].max())
    for kind in KINDS:
        figure = f"### {KINDS[kind]}\n\nFigure: `bench/results/early-steps-{kind}.png`."
        sections += [figure, kind_summary(found, kind)]
        sections += [seed_sentences(found, kind, seed, last_layer) for seed in options.seeds]
    return "\n\n".join(sections) + "\n"


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=nonnegative_int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--warmups", type=positive_int, nargs="+", default=WARMUPS)
    parser.add_argument(
        "--sentences", type=positive_int, default=100, help="Lee sentences measured"
    )
    parser.add_argument("--held-out-blocks", type=positive_int, default=32)
    parser.add_argument(
        "--sts", type=input_directory, default=REPO.parent / "shared" / "data" / "sts"
    )
    return parser.parse_args(argv)


def main() -> None:
    options = parse_arguments()
    torch.set_num_threads(1)
    logging.set_verbosity_error()
    corpora = {
        "train": training_sentences(options.sts),
        "held_out": held_out_sentences(),
        "measured": lee_sentences(options.sentences),
    }
    order = itertools.product(options.warmups, KINDS, options.seeds)
    runs = {(k, s, w): kept_run(k, s, w, corpora, options) for w, k, s in order}
    table = pd.DataFrame([row for run in runs.values() for row in run["rows"]])[COLUMNS]
    table = table.sort_values(["kind", "seed", "warmup", "step", "layer"], ignore_index=True)
    found = run_events(table)
    for frame, name in ((table, "early-steps.tsv"), (found, "early-steps-events.tsv")):
        with atomic_path(RESULTS / name) as temporary:  # each written whole, then renamed
            frame.to_csv(temporary, sep="\t", index=False, float_format="%.6g")
    for kind, name in KINDS.items():
        labelled = (frame.rename(columns={"kind": "architecture"}) for frame in (table, found))
        plot_early_steps(*labelled, kind, name, "Lee", [RESULTS / f"early-steps-{kind}.png"])
    with atomic_path(RESULTS / "early-steps.md") as temporary:
        temporary.write_text(report(table, found, runs, options))


if __name__ == "__main__":
    main()
