"""The files a study reads from outside its own results, as the rules take them.

Two kinds, neither tracked by its time stamp:

- a file the workflow downloads into ``resources/`` (STS archives, an ELMo release, the
  word benchmarks, the paper's published results) is checked against its published
  checksum when fetched; the rules take it with Snakemake's ``ancient`` (in
  workflow/rules/common.smk), so a fetch again of the same bytes reruns nothing;
- any other file (the Lee corpus inside gensim, a model directory, a user's corpus or
  comparison embeddings) enters the DAG through its fingerprint record,
  ``results/inputs/<source>-<digest>.json``: the digest is that of the files' checksums
  (`files.fingerprints`), so the record's name, and with it what depends on it, changes
  only when their bytes do. A reinstall, a copy or a ``touch`` names the same record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextuality import backends
from contextuality.corpus.sentences import sts_archive_name, text_corpus_files
from contextuality.errors import ConfigError
from contextuality.files.fetch import resolve_data_path
from contextuality.files.fingerprints import file_checksums, fingerprint, relative_labels
from contextuality.workflow.config import model_settings
from contextuality.workflow.training import trained_run

INPUT_RECORDS = "results/inputs"
DOWNLOADS = Path("resources")
MODEL_SOURCE = "model-"
COMPARE_SOURCE = "compare-"


def corpus_archives(config: dict[str, Any]) -> list[str]:
    """The downloaded STS archives the sentence table reads (none for a text corpus)."""
    corpus = config["corpus"]
    if corpus["source"] != "sts":
        return []
    return [f"{DOWNLOADS}/sts/{sts_archive_name(year)}" for year in corpus["sts"]["years"]]


def _is_download(path: Path) -> bool:
    return not path.is_absolute() and path.parts[:1] == DOWNLOADS.parts


def downloaded_model_files(config: dict[str, Any], model: str) -> list[str]:
    """`model`'s files that the workflow downloads (a published ELMo release's)."""
    if trained_run(config["models"][model]):
        return []
    files = backends.model_files(model_settings(config, model))
    return [str(path) for path in files if _is_download(path)]


def outside_files(config: dict[str, Any], source: str) -> dict[str, Path]:
    """The files of `source` (``corpus``, ``model-<name>``, ``compare-<embedding>``)
    that no rule makes, each by a label that
    does not depend on where they lie: a text corpus's files under its path, a model's
    files by name, a comparison embedding by its name in config."""
    if source == "corpus":
        text = config["corpus"]["text"]
        if config["corpus"]["source"] != "text":
            return {}
        root = resolve_data_path(text["path"])
        return relative_labels(text_corpus_files(root, text["pattern"]), root)
    if source.startswith(MODEL_SOURCE):
        model = source.removeprefix(MODEL_SOURCE)
        if trained_run(config["models"][model]):
            return {}  # a checkpoint the workflow trains: its run's job is the input
        files = backends.model_files(model_settings(config, model))
        return {path.name: path for path in files if not _is_download(path)}
    if source.startswith(COMPARE_SOURCE):
        name = source.removeprefix(COMPARE_SOURCE)
        return {name: resolve_data_path(config["static"]["compare"][name])}
    raise ConfigError(f"no source of outside files named {source!r} in this config")


def input_checksums(config: dict[str, Any], source: str) -> dict[str, str]:
    """Each file of `source` → its SHA-256 (cached by path, size and time stamp)."""
    return file_checksums(outside_files(config, source))


def input_record(config: dict[str, Any], source: str) -> list[str]:
    """The fingerprint record of `source`'s files, as a rule's input: a one-path list, or
    an empty one where the source reads no outside file (an STS corpus, a hub model)."""
    checksums = input_checksums(config, source)
    if not checksums:
        return []
    return [f"{INPUT_RECORDS}/{source}-{fingerprint(checksums)}.json"]
