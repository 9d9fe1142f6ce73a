"""Where the Snakemake workflow and its configs are. Inside an installed wheel (package
data under ``contextuality/bundled/``, `setup.py`), or in the source tree beside an
editable install; and a study's directory started from the default config."""

from __future__ import annotations

import shutil
from pathlib import Path

from contextuality.errors import ConfigError, InputDataError

_PACKAGE = Path(__file__).resolve().parents[1]


def bundled(name: str) -> Path:
    """The directory `name` (``workflow`` or ``config``) of the installed package, or of
    the source tree it was installed from in editable mode."""
    for candidate in (_PACKAGE / "bundled" / name, _PACKAGE.parents[1] / name):
        if candidate.is_dir():
            return candidate
    raise InputDataError(f"this installation of contextuality has no {name}/ directory")


def snakefile() -> Path:
    """The workflow's Snakefile: ``snakemake -s "$(contextuality workflow)"``, or a
    ``module`` of another workflow (docs/models.md)."""
    return bundled("workflow") / "Snakefile"


def start_study(directory: str | Path) -> list[Path]:
    """Copy the shipped configs (config/*.yaml and their README) into `directory`/config,
    so that ``snakemake -s "$(contextuality workflow)" --directory DIR`` runs the embedded
    default there; a config already there is refused, never overwritten. Returns the files
    written."""
    target = Path(directory) / "config"
    sources = sorted(bundled("config").iterdir())
    present = [target / source.name for source in sources if (target / source.name).exists()]
    if present:
        raise ConfigError(f"{present[0]} exists; this study's directory has its config already")
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        shutil.copyfile(source, target / source.name)
        written.append(target / source.name)
    return written
