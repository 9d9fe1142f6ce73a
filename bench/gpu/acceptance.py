"""The GPU acceptance run: the CUDA tests, the extraction benchmark, the workflow end to end
and a 7B decoder, each stage timed, into one folder of at most 8 files.

    python bench/gpu/acceptance.py --device cuda --out OUT   # on a GPU node (run.sh)
    python bench/gpu/acceptance.py --device cpu --out OUT    # the same stages, small (CI)

Stages (each a process of its own, its output kept in OUT):

a. ``pytest -m cuda tests/test_cuda.py`` with CONTEXTUALITY_TEST_DEVICE set to the device
   (tests.log);
b. bench/extraction.py on BERT-base- and GPT-2-shaped random-init models (CPU: tiny ones):
   the bare model, the project's forward pass and its changes one at a time, the full and
   the streamed extraction, the disk, a fresh process's first pass with and without
   cuDNN's attention, a profile (extraction-<device>-*.json and .md);
c. the workflow on the acceptance config (`workflow_config`: two random-init models that
   `random_models` builds the same everywhere, the first sentences of the Lee corpus), its
   tables compared with the CPU tables committed in bench/gpu/expected/ within
   `compare.TOLERANCES` (workflow.log, workflow-comparison.md);
d. bench/gpu/large_model.py: a random-init Llama-2-7B shape in bfloat16 (CPU: tiny), every
   fourth hidden state of about 75,000 tokens, against the bare model and the disk, with its
   utilisation of the card's peak (large-model.json);

then summary.md: the set-up's seconds (run.sh: what was installed, or the size of what
travels; setup.log), each stage's seconds, status and headline numbers, and each speed goal
of docs/scale.md met or not (`GOALS`, on CUDA). The exit code is non-zero when a stage
failed (a goal not met is reported, not a failure: its measurement is the finding).
``--expected-out DIR`` writes the workflow's tables as the new expected ones (after a
change that moves them on purpose; CPU only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO / "bench")]

import compare  # noqa: E402
import random_models  # noqa: E402
from workdir import run_workflow  # noqa: E402

EXPECTED = HERE / "expected"
CUDA_TESTS = "tests/test_cuda.py"
TRAVEL = HERE / "travel"
# The acceptance models: the paper's two transformer families, small enough that the CPU
# tables computed for comparison take seconds.
ACCEPTANCE_BERT = random_models.BERT_TINY
ACCEPTANCE_GPT2 = random_models.GPT2_TINY
BENCH_MODELS = {"cuda": ["bert-base", "gpt2"], "cpu": ["tiny-bert", "tiny-gpt2"]}
# Sized so that the four stages fit one device call of under 8 minutes: at 300,000 tokens
# stage b alone took about 265 s on an H200 (acceptance-cuda-h200-55adef1.md).
BENCH_TOKENS = {"cuda": 150_000, "cpu": 5_000}


@dataclass
class Stage:
    """One stage's outcome, a row of summary.md."""

    name: str
    seconds: float
    ok: bool
    headline: str


def _run(command: list[str], log: Path, env: dict | None = None) -> bool:
    """Run `command` from the repository root, its output appended to `log`; True if it
    exited 0."""
    with log.open("a") as stream:
        stream.write(f"$ {' '.join(command)}\n")
        stream.flush()
        finished = subprocess.run(
            command, cwd=REPO, stdout=stream, stderr=subprocess.STDOUT, env=env
        )
    return finished.returncode == 0


def _timed(name: str, work) -> Stage:
    """Run `work` (returning ok, headline), timed; an exception fails the stage."""
    started = time.perf_counter()
    try:
        ok, headline = work()
    except Exception as error:  # a stage's failure is reported, the next stage still runs
        ok, headline = False, f"{type(error).__name__}: {error}"
    return Stage(name, time.perf_counter() - started, ok, headline)


def corpus_path() -> Path:
    """The acceptance corpus: the travel folder's copy, else written there now."""
    path = TRAVEL / "corpus.txt"
    if not path.is_file():
        from prepare import write_corpus

        TRAVEL.mkdir(parents=True, exist_ok=True)
        write_corpus(path)
    return path


def build_models(directory: Path, corpus: Path) -> dict[str, str]:
    """Save the acceptance models under `directory`; their fingerprints by name."""
    sentences = corpus.read_text(encoding="utf-8").splitlines()
    built = {
        "bert": random_models.save_bert(directory / "bert", sentences, ACCEPTANCE_BERT),
        "gpt2": random_models.save_gpt2(directory / "gpt2", ACCEPTANCE_GPT2),
    }
    return {name: random_models.fingerprint(path) for name, path in built.items()}


def workflow_config(corpus: Path, models: Path, device: str) -> dict:
    """The acceptance config: the corpus one sentence a line, both models on `device`, the
    raw vectors only; every other key but the resample counts at the schema's default."""
    return {
        "corpus": {
            "name": "lee-background-acceptance",
            "source": "text",
            "text": {"path": str(corpus), "split_sentences": False},
        },
        "models": {
            name: {"source": str(models / name), "device": device} for name in ("bert", "gpt2")
        },
        # Fewer resamples than the defaults: the comparison needs the same draws, not many.
        "measures": {"transforms": ["none"], "sample_replicates": 5, "bootstrap_resamples": 50},
        "geometry": {"alignment": {"permutations": 5, "bootstrap": 5}},
    }


def stage_tests(device: str, out: Path) -> tuple[bool, str]:
    """Stage a: every test marked cuda (all in `CUDA_TESTS`, so that no other test module,
    some of which import what does not travel, is collected), on `device`."""
    log = out / "tests.log"
    env = {**os.environ, "CONTEXTUALITY_TEST_DEVICE": device}
    workers = "8" if device == "cuda" else "2"
    command = [sys.executable, "-m", "pytest", CUDA_TESTS, "-m", "cuda", "-n", workers]
    command += ["-p", "no:cacheprovider"]
    ok = _run(command, log, env)
    last = [line for line in log.read_text().splitlines() if line.strip()][-1]
    return ok, last.strip("= ")


def stage_extraction(device: str, out: Path) -> tuple[bool, str]:
    """Stage b: bench/extraction.py on the benchmark models, results into `out`."""
    command = [sys.executable, "bench/extraction.py", "--device", device, "--out", str(out)]
    command += ["--models", *BENCH_MODELS[device], "--tokens", str(BENCH_TOKENS[device])]
    work = REPO / "bench" / "work"  # the repository's disk, which the workflow writes to
    work.mkdir(parents=True, exist_ok=True)
    command += ["--corpus", str(corpus_path()), "--work", str(work)]
    ok = _run(command, out / "extraction.log")
    if not ok:
        return False, "see extraction.log"
    (out / "extraction.log").unlink()
    result = json.loads(next(out.glob("extraction-*.json")).read_text())
    return True, "; ".join(
        f"{row['model']}: forward {row['forward_to_bare']:.2f} of bare "
        f"({row['project_forward']['tokens_per_s']:,.0f} tok/s), extraction "
        f"{row['full_to_bound']:.2f} of min(bare, disk), streamed "
        f"{row['streamed_to_forward']:.2f} of forward"
        for row in result["models"]
    )


def stage_workflow(
    device: str, out: Path, work: Path, expected_out: Path | None
) -> tuple[bool, str]:
    """Stage c: the workflow on the acceptance config, compared with the committed tables."""
    corpus = corpus_path()
    fingerprints = build_models(work / "models", corpus)
    config = workflow_config(corpus, work / "models", device)
    log = out / "workflow.log"
    cores = str(os.cpu_count() or 2)
    extra = ["--scheduler", "greedy"]
    started = time.perf_counter()
    with log.open("w") as stream:
        try:
            run_workflow(work / "run", config, int(cores), extra, stream)
        except subprocess.CalledProcessError:
            return False, "the workflow failed: see workflow.log"
    seconds = time.perf_counter() - started
    tables = work / "run" / "results" / "tables"
    if expected_out is not None:
        compare.write_expected(tables, fingerprints, expected_out)
        return True, f"expected tables written to {expected_out}"
    report = compare.compare_run(tables, EXPECTED, fingerprints, device)
    (out / "workflow-comparison.md").write_text(report.markdown(seconds))
    return report.ok, report.headline


def stage_large_model(device: str, out: Path) -> tuple[bool, str]:
    """Stage d: the 7B shape, results in large-model.json."""
    result = out / "large-model.json"
    command = [sys.executable, "bench/gpu/large_model.py", "--device", device, "--out", str(result)]
    ok = _run(command, out / "large-model.log")
    if not ok:
        return False, "see large-model.log"
    (out / "large-model.log").unlink()
    values = json.loads(result.read_text())
    size = values["parameters"]
    size = f"{size / 1e9:.2f} B" if size >= 1e8 else f"{size / 1e6:.2f} M"
    return True, (
        f"{size} parameters, {values['tokens']:,} tokens: bare "
        f"{values['bare']['tokens_per_s']:,.0f} tok/s ({values['bare']['utilisation']:.0%} of "
        f"peak), forward {values['forward_to_bare']:.2f} of bare, extraction of "
        f"{len(values['layers_extracted'])} layers {values['extraction_to_bound']:.2f} of "
        f"min(bare, disk), streamed {values['streamed_to_forward']:.2f} of forward, peak "
        f"{values['peak_memory_gib']:.1f} GiB, "
        f"{values['extraction']['bytes_written'] / 1e9:.1f} GB written"
    )


# The speed goals of docs/scale.md on CUDA: (what, where in the results, the least value).
GOALS = (
    ("forward / bare, BERT-base and GPT-2 shapes", "extraction", "forward_to_bare", 0.8),
    ("extraction / min(bare, disk), BERT-base and GPT-2", "extraction", "full_to_bound", 0.8),
    ("streamed / forward, BERT-base and GPT-2", "extraction", "streamed_to_forward", 0.8),
    ("7B bare forward / dense peak", "large", "bare.utilisation", 0.35),
    ("7B forward / bare", "large", "forward_to_bare", 0.8),
    ("7B extraction / min(bare, disk)", "large", "extraction_to_bound", 0.8),
    ("7B streamed / forward", "large", "streamed_to_forward", 0.8),
)


def goal_lines(out: Path) -> list[str]:
    """Each goal of `GOALS` with the values measured and whether they meet it."""
    found = {
        "extraction": [
            row for path in out.glob("extraction-*.json")
            for row in json.loads(path.read_text())["models"]
        ],
        "large": [json.loads(path.read_text()) for path in out.glob("large-model.json")],
    }  # fmt: skip
    lines = []
    for what, source, key, least in GOALS:
        values = []
        for row in found[source]:
            for part in key.split("."):
                row = row[part]
            values.append(row)
        if values:
            met = "met" if min(values) >= least else "NOT met"
            shown = ", ".join(f"{value:.2f}" for value in values)
            lines.append(f"- {what} ≥ {least}: {shown}: {met}")
    return lines


def _environment(device: str) -> str:
    """One line naming the machine and the libraries."""
    import torch
    import transformers

    name = torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or "cpu"
    return (
        f"{name}; Python {platform.python_version()}, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, {os.cpu_count()} CPU cores"
    )


def summary(
    stages: list[Stage], device: str, total: float, goals: list[str], to_run: list[str]
) -> str:
    """summary.md: the environment, a row per stage, and on CUDA the speed goals; while
    stages are still `to_run`, their names (a run stopped at a limit keeps what it did)."""
    lines = [
        f"# GPU acceptance run ({device})",
        "",
        _environment(device),
        "",
        "| stage | seconds | status | result |",
        "|---|---|---|---|",
    ]
    for stage in stages:
        status = "ok" if stage.ok else "FAILED"
        lines.append(f"| {stage.name} | {stage.seconds:.0f} | {status} | {stage.headline} |")
    lines += ["", f"Total {total:.0f} s."]
    if to_run:
        lines += ["", f"Still to run: {', '.join(to_run)}."]
    if device == "cuda" and goals:
        lines += ["", "Speed goals (docs/scale.md):", "", *goals]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), required=True)
    parser.add_argument("--out", type=Path, required=True, help="the folder of results")
    parser.add_argument("--stages", default="abcd", help="which stages to run (default all)")
    parser.add_argument("--expected-out", type=Path, help="write the CPU tables here instead")
    parser.add_argument("--setup-seconds", type=float, help="what installing took (run.sh)")
    arguments = parser.parse_args()
    if arguments.expected_out and arguments.device != "cpu":
        raise SystemExit("--expected-out: the expected tables are the CPU's; use --device cpu")
    if arguments.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device on this machine")
    out = arguments.out
    if out.exists() and not out.is_dir():
        raise SystemExit(f"error: --out {out} is a file, not a directory")
    unknown = sorted(set(arguments.stages) - set("abcd"))
    if unknown or not arguments.stages:
        raise SystemExit(f"error: --stages {arguments.stages!r}: stages are letters of abcd")
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    stages = []
    if arguments.setup_seconds is not None:
        said = (out / "setup.log").read_text().strip().splitlines()
        stages.append(
            Stage("set-up", arguments.setup_seconds, True, said[-1].strip() if said else "")
        )
    device = arguments.device
    with tempfile.TemporaryDirectory(prefix="acceptance-") as scratch:
        work = Path(scratch)
        chosen = {
            "a": ("a. CUDA tests", lambda: stage_tests(device, out)),
            "b": ("b. extraction benchmark", lambda: stage_extraction(device, out)),
            "c": (
                "c. workflow vs CPU tables",
                lambda: stage_workflow(device, out, work, arguments.expected_out),
            ),
            "d": ("d. large decoder", lambda: stage_large_model(device, out)),
        }
        names = [chosen[key][0] for key in arguments.stages]
        for done, key in enumerate(arguments.stages, start=1):
            name, work_of_stage = chosen[key]
            stages.append(_timed(name, work_of_stage))
            print(
                f"{stages[-1].name}: {stages[-1].seconds:.0f} s, {stages[-1].headline}", flush=True
            )
            total = time.perf_counter() - started + (arguments.setup_seconds or 0.0)
            text = summary(stages, device, total, goal_lines(out), names[done:])
            (out / "summary.md").write_text(text)
    print(text)
    shutil.rmtree(out / "__pycache__", ignore_errors=True)
    sys.exit(0 if all(stage.ok for stage in stages) else 1)


if __name__ == "__main__":
    main()
