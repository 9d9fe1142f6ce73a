"""Where the embedded default run's time goes, measured.

Runs the README's first command's workflow (config/config.yaml, `--cores 2`) from scratch
`--repeats` times in directories of their own, and reports the wall time of each run, the
job-seconds of each rule from Snakemake's benchmark files, and what one measure job's
step costs with BLAS using every core against the one thread its job is given
(`workflow.run_step`). Run it on an otherwise idle machine:

    python bench/default_run.py

Writes ``bench/results/default-run-<machine>.{json,md}``.
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
from collections import defaultdict
from pathlib import Path

import yaml

from contextuality.workflow import measure_settings

from workdir import REPO, benchmark_seconds, run_workflow, write_report


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
import json, sys, tempfile, time
from threadpoolctl import threadpool_limits
import scipy.linalg
from contextuality import steps
from contextuality.index import IndexFiles

directory, limit, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
out = tempfile.mkdtemp()
outputs = steps.MeasureOutputs(f"{out}/w.parquet", f"{out}/s.parquet", f"{out}/s.json")
with threadpool_limits(None if limit == "all" else int(limit)):
    started = time.perf_counter()
    steps.measure_layer(
        f"{directory}/results/embeddings/minilm/layer_3.h5",
        f"{directory}/results/corpus/sentences.parquet",
        IndexFiles.in_directory(f"{directory}/results/corpus"),
        settings,
        outputs,
    )
print(time.perf_counter() - started)
"""


def measure_step_seconds(directory: Path, limit: str, config: dict) -> float:
    """Seconds of layer 3's measure step (transform none, the measure settings of
    `config`) in a fresh process, BLAS threads limited to `limit` (``all``: OpenBLAS's
    default, one per core)."""
    settings = json.dumps(measure_settings(config))
    result = subprocess.run(
        [sys.executable, "-c", MEASURE_STEP, str(directory), limit, settings],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--machine", default="cpu2", help="name of the results file")
    args = parser.parse_args()
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    walls, rules = [], {}
    with tempfile.TemporaryDirectory() as temporary:
        for repeat in range(args.repeats):
            directory = Path(temporary) / f"run-{repeat}"
            wall, rules = timed_run(directory, config)
            walls.append(wall)
            if repeat + 1 < args.repeats:
                shutil.rmtree(directory)
        threads = {
            limit: min(measure_step_seconds(directory, limit, config) for _ in range(3))
            for limit in ("all", "1")
        }
    figures = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d"),
        "default_run_seconds": [round(wall, 1) for wall in walls],
        "job_seconds_by_rule": {
            rule: {"jobs": len(values), "total": round(sum(values), 1)}
            for rule, values in sorted(rules.items())
        },
        "measure_step_seconds_by_blas_threads": {
            limit: round(seconds, 2) for limit, seconds in threads.items()
        },
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
            + ".",
            "Job seconds by benchmarked rule (last run; two jobs run at a time):\n\n"
            + "\n".join(["| rule | jobs | total |", "|---|---|---|", *rows]),
            "One measure job's step (layer 3, transform none, best of 3) with BLAS using "
            f"every core: {threads['all']:.2f} s; with one thread, as its job runs it: "
            f"{threads['1']:.2f} s.",
        ],
    )


if __name__ == "__main__":
    main()
