"""Running the workflow from a test: Snakemake on a study directory, and the jobs a dry
run plans."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "workflow" / "Snakefile"


def snakemake(
    directory: Path, *arguments: str, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Snakemake on the workflow in `directory`, 2 cores, with `environment` (None: this
    process's)."""
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(SNAKEFILE),
        "--directory",
        str(directory),
        "--cores",
        "2",
        *arguments,
    ]
    return subprocess.run(command, capture_output=True, text=True, env=environment)


def write_config(directory: Path, config: dict) -> None:
    """`config` as the study's config/config.yaml."""
    (directory / "config").mkdir(exist_ok=True)
    (directory / "config" / "config.yaml").write_text(yaml.safe_dump(config))


def planned_jobs(
    directory: Path, *arguments: str, environment: dict[str, str] | None = None
) -> dict[str, int]:
    """Rule name → job count of a dry run (empty when nothing is to be done)."""
    result = snakemake(directory, "--dry-run", *arguments, environment=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    if "Nothing to be done" in output:
        return {}
    table = output.split("Job stats:")[1].split("total")[0]
    return {
        match[1]: int(match[2])
        for match in re.finditer(r"^(\S+)\s+(\d+)$", table, flags=re.MULTILINE)
    }


def docs_host_snakefile() -> str:
    """The host Snakefile docs/models.md shows: a workflow taking every rule of the
    installed one as a Snakemake ``module``."""
    page = (REPO / "docs" / "models.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    (host,) = [block for block in blocks if "module contextuality:" in block]
    return host
