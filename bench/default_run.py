"""Where the embedded default run's time goes, measured.

Runs the README's first command's workflow (config/config.yaml, `--cores 2`) from scratch
`--repeats` times in directories of their own (with ``--against REV``, each after a run
of that revision's default, so that both are timed in the same minutes), and reports the
wall time of each run, the job-seconds of each rule from Snakemake's benchmark files, and
what one measure job's
step costs with BLAS using every core against the one thread its job is given
(`process.run_step`), and with the passes over the layer cut into chunks of each size
(`rows.row_chunks`); and what the garbage collector costs the extraction job, with the
package's handling of it (`extraction.collector.collector_paused`, `gc.freeze` at the end of
`run_step`) and without. Run it on an otherwise idle machine:

    python bench/default_run.py

Writes ``bench/results/default-run-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

from contextuality import rows as row_passes
from contextuality.workflow import measure_settings, vector_settings

from arguments import output_directory, positive_int
from workdir import REPO, benchmark_seconds, run_workflow, write_report


def validated(config: dict) -> dict:
    """`config` with the schema's defaults filled in, as the workflow reads it."""
    from snakemake.utils import validate

    config = copy.deepcopy(config)
    validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"), set_default=True)
    return config


def timed_run(directory: Path, config: dict) -> tuple[float, dict[str, list[float]]]:
    """Wall seconds of one run from scratch, and each rule's job seconds (by benchmark
    file: benchmarks/<rule group>/...)."""
    started = time.perf_counter()
    run_workflow(directory, config, cores=2)
    wall = time.perf_counter() - started
    jobs: dict[str, list[float]] = defaultdict(list)
    for path in sorted((directory / "benchmarks").rglob("*.tsv")):
        group = path.relative_to(directory / "benchmarks").parts[0]
        jobs[group].append(benchmark_seconds(path))
    return wall, dict(jobs)


MEASURE_STEP = """
import json, resource, sys, tempfile, time
from threadpoolctl import threadpool_limits
import scipy.linalg
from contextuality import steps
from contextuality import rows
from contextuality.corpus.index import IndexFiles
from contextuality.measures.settings import MeasureSettings

directory, limit, chunk_mib = sys.argv[1:4]
settings = MeasureSettings(**json.loads(sys.argv[4]))
rows._CHUNK_BYTES = int(float(chunk_mib) * 2**20)
out = tempfile.mkdtemp()
outputs = steps.MeasureOutputs(f"{out}/w.parquet", f"{out}/s.parquet", f"{out}/s.json")
with threadpool_limits(None if limit == "all" else int(limit)):
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    steps.measure_layer(
        f"{directory}/results/embeddings/minilm/layer_3.h5",
        f"{directory}/results/corpus/sentences.parquet",
        IndexFiles.in_directory(f"{directory}/results/corpus"),
        settings,
        outputs,
    )
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": wall, "system": after.ru_stime - before.ru_stime,
                  "page_faults": after.ru_minflt - before.ru_minflt}))
"""


def measure_step(directory: Path, limit: str, chunk_mib: float, config: dict) -> dict:
    """Layer 3's measure step (transform none, the measure settings of `config`) in a fresh
    process, BLAS threads limited to `limit` (``all``: OpenBLAS's default, one per core) and
    passes over the layer in chunks of `chunk_mib` MiB of float64 rows: its wall and system
    seconds and minor page faults, the run with the least wall time of three."""
    settings = json.dumps(measure_settings(config))
    command = [sys.executable, "-c", MEASURE_STEP, str(directory), limit, str(chunk_mib), settings]
    runs = [
        json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
        for _ in range(3)
    ]
    return min(runs, key=lambda run: run["wall"])


CHUNK_MIB = (32, 16, 8, 4, 2)


EXTRACT_STEP = """
import contextlib, gc, importlib, json, sys, time
from contextuality import backends, steps
from contextuality.corpus.index import IndexFiles

extraction_run = importlib.import_module("contextuality.extraction.run")
extract_step = importlib.import_module("contextuality.steps.extract")  # not steps.extract

directory, out, handled = sys.argv[1], sys.argv[2], sys.argv[3] == "handled"
settings, seed = json.loads(sys.argv[4]), int(sys.argv[5])
if not handled:
    extract_step.collector_paused = contextlib.nullcontext
    extraction_run.collector_sparing_live_objects = contextlib.nullcontext
full = []

def timed(phase, info):
    if info["generation"] == 2:
        full.append(-time.perf_counter() if phase == "start" else time.perf_counter())

gc.callbacks.append(timed)
started = time.perf_counter()
steps.extract(
    backends.model_settings("minilm", settings),
    f"{directory}/results/corpus/sentences.parquet",
    IndexFiles.in_directory(f"{directory}/results/corpus"),
    steps.LayerOutputs({layer: f"{out}/{layer}.h5" for layer in range(7)}, f"{out}/meta.json"),
    seed,
    threads=2,
    progress=False,
)
wall = time.perf_counter() - started
if handled:
    gc.freeze()
print(json.dumps({"wall": wall, "full_collections": len(full) // 2,
                  "collection_seconds": sum(full)}), flush=True)
"""


def extraction_job(directory: Path, handled: bool, settings: dict, seed: int) -> dict:
    """The default run's extraction step in a fresh process, as its job runs it
    (`handled`) or with the garbage collector left alone: the step's wall seconds, its full
    (generation-2) collections and their seconds, and the seconds from the step's end to
    the process's exit."""
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryFile("w+") as said:
        mode = "handled" if handled else "plain"
        command = [sys.executable, "-c", EXTRACT_STEP, str(directory), out, mode]
        process = subprocess.Popen(
            [*command, json.dumps(settings), str(seed)], stdout=subprocess.PIPE, stderr=said
        )
        line = process.stdout.readline()
        if not line:  # the step failed: its own error, not a JSON decoder's
            process.wait()
            said.seek(0)
            raise RuntimeError(f"the extraction step failed:\n{said.read()[-3000:]}")
        figures = json.loads(line)
        reported = time.perf_counter()
        process.wait()
        figures["exit_seconds"] = time.perf_counter() - reported
    return figures


def timed_baseline(directory: Path, checkout: Path) -> float:
    """Wall seconds of one run from scratch of the default run of another revision (its
    Snakefile, config and package, checked out in `checkout`)."""
    (directory / "config").mkdir(parents=True)
    shutil.copy(checkout / "config" / "config.yaml", directory / "config" / "config.yaml")
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(checkout / "workflow/Snakefile"),
    ]
    command += ["--directory", str(directory), "--cores", "2", "--quiet", "rules"]
    environment = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    started = time.perf_counter()
    subprocess.run(command, check=True, env=environment)
    return time.perf_counter() - started


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument("--machine", default="cpu2", help="name of the results file")
    parser.add_argument(
        "--against", help="a git revision whose default run is timed too, runs interleaved"
    )
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    walls, rules, baseline = [], {}, []
    with tempfile.TemporaryDirectory() as temporary:
        checkout = Path(temporary) / "baseline"
        if args.against:
            git = ["git", "-C", str(REPO), "worktree"]
            subprocess.run([*git, "add", "--detach", str(checkout), args.against], check=True)
        for repeat in range(args.repeats):
            if args.against:
                baseline.append(timed_baseline(Path(temporary) / f"base-{repeat}", checkout))
                shutil.rmtree(Path(temporary) / f"base-{repeat}")
            directory = Path(temporary) / f"run-{repeat}"
            wall, rules = timed_run(directory, config)
            walls.append(wall)
            if repeat + 1 < args.repeats:
                shutil.rmtree(directory)
        if args.against:
            subprocess.run([*git, "remove", "--force", str(checkout)], check=True)
        chunk = row_passes._CHUNK_BYTES / 2**20
        threads = {limit: measure_step(directory, limit, chunk, config) for limit in ("all", "1")}
        chunks = {mib: measure_step(directory, "1", mib, config) for mib in CHUNK_MIB}
        planned = validated(config)
        settings, seed = vector_settings(planned, "minilm"), planned["measures"]["seed"]
        collector = {
            mode: extraction_job(directory, mode == "handled", settings, seed)
            for mode in ("plain", "handled")
        }
    figures = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d"),
        "default_run_seconds": [round(wall, 1) for wall in walls],
        "baseline": args.against,
        "baseline_run_seconds": [round(wall, 1) for wall in baseline],
        "job_seconds_by_rule": {
            rule: {"jobs": len(values), "total": round(sum(values), 1)}
            for rule, values in sorted(rules.items())
        },
        "measure_step_by_blas_threads": threads,
        "measure_step_by_chunk_mib": chunks,
        "chunk_mib": chunk,
        "extraction_job_by_collector": collector,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"default-run-{args.machine}"
    Path(f"{stem}.json").write_text(json.dumps(figures, indent=1) + "\n")
    rows = [
        f"| {rule} | {value['jobs']} | {value['total']} s |"
        for rule, value in figures["job_seconds_by_rule"].items()
    ]
    write_report(
        Path(f"{stem}.md"),
        [
            "# The embedded default run, timed",
            f"Written by `bench/default_run.py` ({figures['date']}); {figures['machine']}; "
            "`snakemake --cores 2` on config/config.yaml from scratch.",
            "Wall time of each run: "
            + ", ".join(f"{wall} s" for wall in figures["default_run_seconds"])
            + "."
            + (
                f" Interleaved with them (each before its run), revision {args.against}'s "
                "default run: "
                + ", ".join(f"{wall} s" for wall in figures["baseline_run_seconds"])
                + "."
                if args.against
                else ""
            ),
            "Job seconds by benchmarked rule (last run; two jobs run at a time):\n\n"
            + "\n".join(["| rule | jobs | total |", "|---|---|---|", *rows]),
            "One measure job's step (layer 3, transform none, best of 3) with BLAS using "
            f"every core: {threads['all']['wall']:.2f} s; with one thread, as its job runs "
            f"it: {threads['1']['wall']:.2f} s.",
            "The same step (one thread) with the passes over the layer cut into chunks of "
            f"each size (`rows.row_chunks`; the package's: {chunk:g} MiB). Chunks over "
            "glibc's 32 MiB mmap threshold are mapped afresh, and their pages zeroed, each "
            "time:\n\n"
            + "\n".join(
                [
                    "| chunk | wall | system time | minor page faults |",
                    "|---|---|---|---|",
                    *(
                        f"| {mib} MiB | {run['wall']:.2f} s | {run['system']:.2f} s "
                        f"| {run['page_faults']:,} |"
                        for mib, run in chunks.items()
                    ),
                ]
            ),
            "The extraction step (MiniLM, 2 threads) with the garbage collector paused while "
            "the model loads and sparing it during the forward passes, and the job's objects "
            "frozen before exit, as a job runs it, against the collector left alone:\n\n"
            + "\n".join(
                [
                    "| collector | step | full collections | their time | step end to exit |",
                    "|---|---|---|---|---|",
                    *(
                        f"| {mode} | {run['wall']:.2f} s | {run['full_collections']} "
                        f"| {run['collection_seconds']:.2f} s | {run['exit_seconds']:.2f} s |"
                        for mode, run in collector.items()
                    ),
                ]
            ),
        ],
    )


if __name__ == "__main__":
    main()
