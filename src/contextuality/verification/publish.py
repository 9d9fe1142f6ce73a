"""A finished study's tables and figures published (``contextuality publish``) with the
commit that made them, into a folder that docs pages read.

They are verified first (`verify_study`), must be made by committed code, and are copied
with their provenance beside a record of what the folder holds.

A results page quotes a number by naming a published table, its row and column; the
record names the commits whose code made the tables, so that a page never quotes numbers
of code that no commit holds.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pandas as pd

from contextuality.errors import InputDataError
from contextuality.files.provenance import (
    UNCOMMITTED,
    partial_path,
    provenance_record,
    read_json,
    sha256_file,
    write_json,
)
from contextuality.files.tables import read_tsv_provenance, tsv_provenance_path, write_tsv
from contextuality.verification.study import verify_study

# What a study publishes: every table and every PNG figure under these folders of it.
PUBLISHED = (("results/tables", "*.tsv"), ("results/figures", "*.png"))
FIGURES = "results/figures"
RECORD = "publication.json"
# The record's SHA-256 of each figure left behind (`publish_study`'s `figures`), keyed as
# its ``files``: a run of the same code draws that figure again, byte for byte.
FIGURES_LEFT_BEHIND = "figures_left_behind"
# The run's job times by step, from the benchmark files its rules write (Snakemake's
# ``benchmark:``, one per job under benchmarks/<step>/…), published beside its tables.
JOB_TIMES = "job_times.tsv"


def published_files(study: Path) -> list[Path]:
    """The study's tables and PNG figures, relative to it, in order."""
    return sorted(
        path.relative_to(study)
        for folder, pattern in PUBLISHED
        for path in (study / folder).rglob(pattern)
        if not path.name.startswith(".")
    )


def _sidecar(path: Path) -> Path:
    """A published file's provenance: a table's ``.provenance.json``, a figure's
    ``<name>.provenance.json``."""
    return tsv_provenance_path(path) if path.suffix == ".tsv" else Path(f"{path}.provenance.json")


def _versions(record: Any) -> Iterator[str]:
    """Every ``source_version`` a provenance record holds, its sources' included."""
    if isinstance(record, dict):
        for key, value in record.items():
            if key == "source_version":
                yield str(value)
            else:
                yield from _versions(value)
    elif isinstance(record, list):
        for value in record:
            yield from _versions(value)


def job_times(study: Path) -> pd.DataFrame:
    """Each step's jobs in `study`'s last run of them (one row per folder under
    benchmarks/: its jobs, their wall-clock seconds' least, median, largest and sum, and
    the largest resident memory in MB), from the benchmark file each job wrote; no rows
    where the study has none."""
    rows = []
    for path in sorted((study / "benchmarks").rglob("*.tsv")):
        times = pd.read_csv(path, sep="\t")
        step = path.relative_to(study / "benchmarks").parts[0]
        rows.append(
            {
                "step": step,
                "seconds": float(times["s"].iloc[-1]),
                "max_rss_mb": float(times["max_rss"].iloc[-1]),
            }
        )
    frame = pd.DataFrame(rows, columns=["step", "seconds", "max_rss_mb"])
    grouped = frame.groupby("step", sort=True)
    return pd.DataFrame(
        {
            "jobs": grouped.size(),
            "seconds_min": grouped["seconds"].min(),
            "seconds_median": grouped["seconds"].median(),
            "seconds_max": grouped["seconds"].max(),
            "seconds_total": grouped["seconds"].sum(),
            "max_rss_mb": grouped["max_rss_mb"].max(),
        }
    ).reset_index()


def made_by(records: dict[Path, Any]) -> list[str]:
    """The commits whose code made the files of `records` (relative path → provenance),
    in order; InputDataError, one line naming the first file, where one was made by
    uncommitted code, by an installed package (no commit recorded), or records no code at
    all. Files of several commits are published together, each commit named: the
    workflow made again what a change of code touched."""
    commits: set[str] = set()
    for path, record in records.items():
        versions = list(_versions(record))
        if not versions:
            raise InputDataError(
                f"{path.as_posix()}: its provenance names no code (made by a package that did "
                "not record it); run the study again to publish it"
            )
        for version in versions:
            if not version:
                raise InputDataError(
                    f"{path.as_posix()}: made by an installed package, whose code no commit "
                    "names; run the study from a git checkout to publish it"
                )
            if version.endswith(UNCOMMITTED):
                raise InputDataError(
                    f"{path.as_posix()}: made from uncommitted code ({version}); commit it "
                    "and run the study again"
                )
            commits.add(version)
    if not commits:
        raise InputDataError("nothing to publish: no file's provenance was given")
    return sorted(commits)


def chosen_figures(files: list[Path], figures: Sequence[str] | None) -> set[Path]:
    """The figures of `files` that a publication copies: those whose path under
    results/figures/ matches one of the glob patterns `figures` (``sweeps/*``,
    ``training_losses.png``), every one where `figures` is None. A pattern that matches
    none is a mistake: InputDataError, one line naming it."""
    drawn = [path for path in files if path.suffix == ".png"]
    if figures is None:
        return set(drawn)
    chosen = set()
    for pattern in figures:
        matched = {path for path in drawn if fnmatchcase(str(path.relative_to(FIGURES)), pattern)}
        if not matched:
            raise InputDataError(f"--figure {pattern}: no figure under {FIGURES}/ matches it")
        chosen |= matched
    return chosen


def publish_study(
    study: str | Path, destination: str | Path, figures: Sequence[str] | None = None
) -> dict[str, Any]:
    """Copy a finished `study`'s tables and figures with their provenance into
    `destination` (``tables/…`` and ``figures/…``, as under results/), with the run's
    `job_times`, and write its `RECORD`: the commits that made them and each file's
    SHA-256. `figures` (`chosen_figures`) keeps a repository to the figures its pages
    show: the others stay behind, their SHA-256 recorded (`FIGURES_LEFT_BEHIND`). Refused,
    in one line and before `destination` is touched, where a file is damaged
    (`verify_study`) or was not made by committed code (`made_by`); a destination already
    there is replaced whole once the new one is complete."""
    study, destination = Path(study), Path(destination)
    verification = verify_study(study)
    if verification.damaged:
        raise InputDataError(
            f"{study}: {verification.summary()}; 'contextuality verify {study}' names them"
        )
    files = published_files(study)
    if not files:
        raise InputDataError(f"{study}/results: no table or figure to publish")
    records = {
        path: read_tsv_provenance(study / path)
        if path.suffix == ".tsv"
        else read_json(_sidecar(study / path))
        for path in files
    }
    commits = made_by(records)
    copied = chosen_figures(files, figures)
    left_behind = {
        path.relative_to("results").as_posix(): sha256_file(study / path)
        for path in files
        if path.suffix == ".png" and path not in copied
    }
    staging = partial_path(destination)
    staging.mkdir()
    try:
        digests = {}
        for path in files:
            if path.suffix == ".png" and path not in copied:
                continue
            target = staging / path.relative_to("results")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(study / path, target)
            shutil.copy2(_sidecar(study / path), _sidecar(target))
            digests[target.relative_to(staging).as_posix()] = sha256_file(target)
        write_tsv(job_times(study), staging / JOB_TIMES, provenance_record(step="job_times"))
        digests[JOB_TIMES] = sha256_file(staging / JOB_TIMES)
        record = provenance_record(
            step="publish",
            study=str(study),
            made_by=commits,
            files=digests,
            **({FIGURES_LEFT_BEHIND: left_behind} if left_behind else {}),
        )
        write_json(staging / RECORD, record)
        _replace(destination, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return record


def _replace(destination: Path, complete: Path) -> None:
    """`complete` renamed to `destination`, the folder there before removed after."""
    previous = partial_path(destination) if destination.exists() else None
    if previous is not None:
        destination.rename(previous)
    complete.rename(destination)
    if previous is not None:
        shutil.rmtree(previous)
