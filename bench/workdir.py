"""Running the workflow for a benchmark in a directory of its own, and writing its results
(imported by the scripts beside it, which run as ``python bench/<script>.py``)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

import pandas as pd
import yaml

from contextuality import backends, steps
from contextuality.configuration.schema import with_defaults
from contextuality.corpus.index import IndexFiles
from contextuality.files.provenance import atomic_path
from contextuality.workflow.config import vector_settings
from contextuality.workflow.paths import index_directory, model_shards

REPO = Path(__file__).resolve().parents[1]


def run_workflow(
    directory: Path, config: dict, cores: int, extra: list[str] = (), output: IO | None = None
) -> None:
    """Run the workflow with `config` in `directory` (outputs already there are kept),
    `extra` appended to the Snakemake command line, its output into `output` (a file; the
    console if None)."""
    (directory / "config").mkdir(parents=True, exist_ok=True)
    (directory / "config" / "config.yaml").write_text(yaml.safe_dump(with_sources_found(config)))
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "workflow/Snakefile")]
    command += ["--directory", str(directory), "--cores", str(cores), "--quiet", "rules"]
    command += list(extra)
    subprocess.run(command, check=True, stdout=output, stderr=subprocess.STDOUT if output else None)


def with_sources_found(config: dict) -> dict:
    """`config` with each model's relative local ``source`` (a shipped config's
    ``./resources/...``, relative to the checkout) made absolute, since the workflow runs
    in a directory of its own; packages and hub names are left as they are."""
    models = {}
    for name, model in (config.get("models") or {}).items():
        source = str(model.get("source", ""))
        if source.startswith(("./", "../")) and (REPO / source).exists():
            model = model | {"source": str((REPO / source).resolve())}
        models[name] = model
    return config | {"models": models} if models else config


def benchmark_seconds(path: Path) -> float:
    """Wall seconds of the job a Snakemake ``benchmark:`` file records (its first column)."""
    return float(path.read_text().splitlines()[1].split("\t")[0])


def job_times(directory: Path) -> str:
    """The wall seconds of a run's jobs (``benchmarks/`` of `directory`) as Markdown:
    each extraction and geometry job, the measure jobs summed per model."""
    rows = {}
    for path in sorted((directory / "benchmarks").rglob("*.tsv")):
        parts = path.relative_to(directory / "benchmarks").with_suffix("").parts
        job = f"{parts[0]} {parts[1]} (every layer)" if parts[0] == "measures" else "/".join(parts)
        rows[job] = rows.get(job, 0.0) + benchmark_seconds(path)
    lines = ["| job | seconds |", "|---|---:|"]
    lines += [f"| {job} | {seconds:.0f} |" for job, seconds in rows.items()]
    return "\n".join(lines)


def write_report(path: Path, sections: list[str]) -> None:
    """Write a Markdown results file from its sections (blank line between) and print it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(sections) + "\n")
    print(path.read_text())


def filled_config(config: dict) -> dict:
    """`config` as a run in a directory of its own is given it: local sources made
    absolute (`with_sources_found`), every default filled."""
    return with_defaults(with_sources_found(copy.deepcopy(config)))


def extract_models(
    directory: Path, config: dict, cores: int, models: Iterable[str], targets: Iterable[str] = ()
) -> None:
    """Run the workflow with `config` in `directory` only as far as `models`' shards (and
    any other `targets`)."""
    filled = filled_config(config)
    shards = [
        path for model in models for paths in model_shards(filled, model).values() for path in paths
    ]
    run_workflow(directory, config, cores, ["--", *shards, *targets])


def stored_layers(
    config: dict, directory: Path, model: str
) -> tuple[steps.ModelLayers, IndexFiles]:
    """`model`'s layers and index as the run in `directory` stored them (`config` as that
    run was given it, defaults filled)."""
    shards = {
        name: [directory / path for path in paths]
        for name, paths in model_shards(config, model).items()
    }
    extracted = backends.model_settings(model, vector_settings(config, model))
    layers = steps.ModelLayers.of_inputs(model, shards, extracted)
    return layers, IndexFiles.in_directory(directory / index_directory(config, model))


def kept_table(kept: Path, compute: Callable[[], pd.DataFrame]) -> tuple[pd.DataFrame, float]:
    """The table `compute` makes and its wall seconds, kept at `kept` (TSV, the seconds in
    JSON beside it) as soon as it is made, so that a stopped benchmark resumes with the
    next table; read back where it is there already (delete it after changing the shards)."""
    seconds_file = kept.with_suffix(".json")
    if kept.is_file():
        table = pd.read_csv(kept, sep="\t")
        return table, float(json.loads(seconds_file.read_text())["seconds"])
    started = time.perf_counter()
    table = compute()
    seconds = time.perf_counter() - started
    kept.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(seconds_file) as path:
        path.write_text(json.dumps({"seconds": seconds}))
    with atomic_path(kept) as path:
        table.to_csv(path, sep="\t", index=False)
    return table, seconds
