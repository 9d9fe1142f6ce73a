"""A finished study verified (``contextuality verify``). Every file under ``results/`` but a
training run's checkpoints (model directories, no digest of their own), and the downloads
under ``resources/`` that have a published checksum, checked against the digest recorded
with it, then against the files it was made from where its provenance
names them. The step before publishing a study's numbers.

Each file is read as the workflow reads it: a Parquet table's content against the digest
in its footer, a TSV table, static vectors or a figure against the SHA-256 its sidecar
records, a JSON file against its ``content_sha256``, a shard or a streamed layer's state
file through every chunk's checksum, its attributes' digest and its count of rows without
a vector. Then its siblings: an occurrence index's files against its summary and the
summary's corpus checksum against the sentence table; a shard, a state file and every
table recording an index against the study's occurrence index (checksum and rows); a
table gathered from layer summaries against them; a figure against the table it was
drawn from. A sibling already found damaged is not held against a good file. Each damaged
file is one line naming it, what differs and the rule that remakes it (`rule_of`);
`repair` deletes them so that Snakemake remakes them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextuality.corpus.index import IndexFiles
from contextuality.errors import ContextualityError, InputDataError, one_line
from contextuality.figures.paper import figure_sidecar
from contextuality.files.fetch import packaged_checksums
from contextuality.files.provenance import read_json, sha256_file
from contextuality.files.tables import check_against_sidecar, read_provenance, tsv_provenance_path
from contextuality.measures.registry import CENSUSES
from contextuality.storage.hdf5 import reading
from contextuality.storage.shards import DATASET, load_shard
from contextuality.streaming.state import load_state
from contextuality.verification.rules import rule_of

# The downloads whose published checksums the package ships: folder under resources/,
# the listing in contextuality/data/, and the prefix of its names in that folder.
PUBLISHED = (
    ("resources/benchmarks/", "benchmarks.sha256", ""),
    ("resources/reference/ethayarajh2019/", "ethayarajh2019.sha256", ""),
)
FIGURE_SUFFIXES = (".png", ".pdf")
# The tables whose provenance keeps every layer summary's they were gathered from.
GATHERED_FROM_SUMMARIES = ("measures_table", *(f"{name}_table" for name in CENSUSES))
_SOURCE = re.compile(r"^(?P<name>[^ /]+) sha256 (?P<digest>[0-9a-f]{64})$")


@dataclass(frozen=True)
class Damage:
    """A damaged file: `path` (relative to the study), what differs, the rule remaking it."""

    path: Path
    why: str
    rule: str

    def line(self) -> str:
        return f"{self.path.as_posix()}: {self.why}; remade by rule {self.rule}"


@dataclass(frozen=True)
class Verification:
    """What `verify_study` found: the files checked, the damaged ones, and those it left
    unchecked (no digest recorded for them: not a file the workflow writes)."""

    study: Path
    checked: tuple[Path, ...]
    damaged: tuple[Damage, ...]
    unchecked: tuple[Path, ...]

    def summary(self) -> str:
        """``N files checked, M damaged`` (and the files without a digest, if any)."""
        text = f"{len(self.checked)} files checked, {len(self.damaged)} damaged"
        if self.unchecked:
            text += f", {len(self.unchecked)} others with no recorded digest left alone"
        return text


# The folder of a training run's checkpoints (results/training/<run>/checkpoints/step_<N>/):
# model directories in transformers' layout (config.json, the weights), which record no
# digest of their own; the models extracted from them record each file's SHA-256.
CHECKPOINTS = "checkpoints"


def study_files(study: Path) -> list[Path]:
    """Every file under `study`'s results/ and resources/, relative to `study`, in order;
    hidden files (a writer's temporary files) left out."""
    found = []
    for top in ("results", "resources"):
        for path in sorted((study / top).rglob("*")):
            relative = path.relative_to(study)
            if path.is_file() and not any(part.startswith(".") for part in relative.parts):
                found.append(relative)
    return found


def verify_study(study: str | Path) -> Verification:
    """Check every file of the study in directory `study` (one holding results/): first
    each alone (`_check_alone`), then the good ones against their good siblings
    (`_check_siblings`). InputDataError where `study` holds no results/."""
    study = Path(study)
    if not (study / "results").is_dir():
        raise InputDataError(
            f"{study}: no results/ folder, so not the working directory of a study (give "
            "the directory snakemake ran in)"
        )
    checked, unchecked, records, damaged = [], [], {}, {}
    for relative in study_files(study):
        check = _checker(relative)
        if check is None:
            unchecked.append(relative)
            continue
        checked.append(relative)
        why, records[relative] = _outcome(study, check, study / relative)
        if why is not None:
            damaged[relative] = why
    indexes = _index_summaries(study, records, damaged)
    for relative in checked:
        if relative in damaged:
            continue
        why = _check_siblings(study, relative, records, indexes, damaged)
        if why is not None:
            damaged[relative] = why
    found = tuple(
        Damage(relative, damaged[relative], rule_of(study, relative))
        for relative in checked
        if relative in damaged
    )
    return Verification(study, tuple(checked), found, tuple(unchecked))


def repair(verification: Verification) -> list[Path]:
    """Delete each damaged file `verification` found (and nothing else), so that
    Snakemake remakes it; returns the deleted paths, relative to the study."""
    deleted = []
    for damage in verification.damaged:
        path = verification.study / damage.path
        if path.is_file():
            path.unlink()
            deleted.append(damage.path)
    return deleted


def _outcome(study: Path, check: Callable[[Path], Any], path: Path) -> tuple[str | None, Any]:
    """(None, what `check` read) for a good file, (what differs, None) for a damaged one
    (refused by the reader, or unreadable: a folder or no permission where a file is)."""
    try:
        return None, check(path)
    except (ContextualityError, OSError) as error:
        return _what_differs(study, path, error), None


def _what_differs(study: Path, path: Path, error: BaseException) -> str:
    """A refusal's one line without the file's name before it, the study's folder in the
    paths it names and its advice to rebuild (the report names the rule)."""
    message = one_line(error).replace(f"{study}/", "")
    relative = path.relative_to(study).as_posix()
    message = message.removeprefix(f"{relative}: ")
    return re.sub(r";\s*(rebuild|delete)[^;]*$", "", message)


def _checker(relative: Path) -> Callable[[Path], Any] | None:
    """How a file at `relative` is checked alone, by what it is; None for a file that
    records no digest."""
    name = relative.name
    if relative.parts[0] == "resources":
        return _published_checker(relative)
    if relative.parts[:2] == ("results", "training") and CHECKPOINTS in relative.parts:
        return None
    if name.endswith(".state.h5"):
        return _check_state
    if name.endswith(".h5"):
        return _check_shard
    if name.endswith(".parquet"):
        return read_provenance
    if name.endswith(".json"):
        return read_json
    if name.endswith(".tsv"):
        return lambda path: check_against_sidecar(path, tsv_provenance_path(path))
    if name.endswith(FIGURE_SUFFIXES):
        return lambda path: check_against_sidecar(path, figure_sidecar(path))
    if name.endswith(".txt") and relative.parts[:2] == ("results", "static"):
        return lambda path: check_against_sidecar(path, Path(f"{path}.json"))
    return None


def _published_checker(relative: Path) -> Callable[[Path], Any] | None:
    """A download's check against the checksum published for it, where the package ships
    one (`PUBLISHED`)."""
    text = relative.as_posix()
    for folder, listing, prefix in PUBLISHED:
        if not text.startswith(folder):
            continue
        expected = packaged_checksums(listing).get(prefix + text.removeprefix(folder))
        if expected is None:
            return None

        def check(path: Path, expected: str = expected) -> dict[str, Any]:
            if sha256_file(path) != expected:
                raise InputDataError(f"{path}: its SHA-256 is not the published {expected}")
            return {}

        return check
    return None


def _check_shard(path: Path) -> dict[str, Any]:
    """A shard read through as a measure job reads it (complete, its attributes' digest,
    every chunk's checksum, its rows without a vector), holding none of its rows: its
    attributes and rows (``n_rows``)."""
    _, attributes = load_shard(path, None, rows=np.empty(0, dtype=np.int64))
    with reading(path) as handle:
        return {**attributes, "n_rows": handle[DATASET].shape[0]}


def _check_state(path: Path) -> dict[str, Any]:
    """A streamed layer's state file read whole (`load_state`): its attributes."""
    return load_state(path).attributes


def _index_summaries(
    study: Path, records: dict[Path, Any], damaged: dict[Path, str]
) -> dict[Path, dict[str, Any]]:
    """The good index summaries of the study (``index.json`` of the word index and of
    each subword index), by the index's folder."""
    return {
        relative.parent: records[relative]
        for relative in records
        if relative.name == "index.json"
        and relative.parts[:2] == ("results", "corpus")
        and relative not in damaged
    }


def _check_siblings(
    study: Path,
    relative: Path,
    records: dict[Path, Any],
    indexes: dict[Path, dict[str, Any]],
    damaged: dict[Path, str],
) -> str | None:
    """What differs between a good file and the good files it was made from (`records`:
    what each file's check read), or None."""
    path, record = study / relative, records[relative]
    in_index = relative.parts[:2] == ("results", "corpus")
    if in_index and relative.name in ("occurrences.parquet", "vocab.parquet"):
        return _index_member(study, relative, damaged)
    if relative.name == "index.json" and relative.parent in indexes:
        sentences = Path("results/corpus/sentences.parquet")
        if sentences in damaged or not (study / sentences).is_file():
            return None
        check = IndexFiles.in_directory(path.parent).read_sentences
        return _outcome(study, check, study / sentences)[0]
    if relative.name.endswith(FIGURE_SUFFIXES):
        return _drawn_from(study, record, damaged)
    if relative.suffix == ".tsv" and record.get("step") in GATHERED_FROM_SUMMARIES:
        return _gathered_from_summaries(record, records, damaged)
    if isinstance(record, dict) and "index_checksum" in record:
        return _made_from_index(relative, record, indexes)
    return None


def _gathered_from_summaries(
    record: dict[str, Any], records: dict[Path, Any], damaged: dict[Path, str]
) -> str | None:
    """Whether a table gathered from layer summaries (`GATHERED_FROM_SUMMARIES`) was
    gathered from the good summaries at hand: each source its provenance records is the
    summary of its model, transform and layer without its measures."""
    for source in record.get("sources") or []:
        if not isinstance(source, dict) or source.get("step") != "measures":
            continue
        model, transform, layer = (source.get(key) for key in ("model", "transform", "layer"))
        summary = Path(f"results/measures/{model}/{transform}/layer_{layer}.json")
        if summary in damaged or summary not in records:
            continue
        current = {key: value for key, value in records[summary].items() if key != "measures"}
        if current != source:
            return (
                f"gathered from another {summary.as_posix()} (made {source.get('created_utc')}) "
                f"than the one at hand (made {current.get('created_utc')})"
            )
    return None


def _index_member(study: Path, relative: Path, damaged: dict[Path, str]) -> str | None:
    """Whether an index's occurrences or vocabulary are those its summary describes."""
    summary = relative.parent / "index.json"
    if summary in damaged or not (study / summary).is_file():
        return None
    files = IndexFiles.in_directory(study / relative.parent)
    read = files.read_occurrences if relative.name == "occurrences.parquet" else files.read_vocab
    why = _outcome(study, lambda _: read(), study / relative)[0]
    return None if why is None else why.replace(f"{relative.as_posix()} is ", "", 1)


def _made_from_index(
    relative: Path, record: dict[str, Any], indexes: dict[Path, dict[str, Any]]
) -> str | None:
    """Whether a file recording an occurrence index (a shard, a state file, a layer's
    tables, meta.json) was made from one of the study's, and a whole shard or state file
    holds as many rows as that index has occurrences."""
    recorded = record["index_checksum"]
    for folder, summary in indexes.items():
        if summary.get("index_checksum") != recorded:
            continue
        corpus = record.get("corpus_checksum", summary.get("corpus_checksum"))
        if corpus != summary.get("corpus_checksum"):
            return (
                f"made from corpus {str(corpus)[:12]}…, but {folder.as_posix()}/index.json "
                f"was built from corpus {str(summary.get('corpus_checksum'))[:12]}…"
            )
        rows = record.get("n_rows")
        whole = "part_" not in relative.as_posix() and relative.name.endswith(".h5")
        if whole and rows not in (None, "") and int(rows) != int(summary["n_occurrences"]):
            return (
                f"{rows} rows, but {folder.as_posix()}/index.json has "
                f"{summary['n_occurrences']} occurrences"
            )
        return None
    if not indexes:
        return None
    held = ", ".join(
        f"{folder.as_posix()}/index.json ({str(summary.get('index_checksum'))[:12]}…)"
        for folder, summary in indexes.items()
    )
    return (
        f"made from occurrence index {str(recorded)[:12]}…, not this study's: {held}; "
        "a file of another study or an earlier index"
    )


def _drawn_from(study: Path, record: Any, damaged: dict[Path, str]) -> str | None:
    """Whether a figure drawn from one table (its sidecar's ``source``: ``<name> sha256
    <digest>``) was drawn from the table of that name in results/tables/ as it is now."""
    match = _SOURCE.match(str((record or {}).get("source", "")))
    if match is None:
        return None
    table = Path("results/tables") / match["name"]
    if table in damaged or not (study / table).is_file():
        return None
    if sha256_file(study / table) != match["digest"]:
        return f"drawn from another {table.as_posix()} than the one at hand"
    return None
