"""Running the workflow for a benchmark in a directory of its own, and writing its results
(imported by the scripts beside it, which run as ``python bench/<script>.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO

import yaml

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


def write_report(path: Path, sections: list[str]) -> None:
    """Write a Markdown results file from its sections (blank line between) and print it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(sections) + "\n")
    print(path.read_text())
