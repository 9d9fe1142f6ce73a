"""A study's corpus files against what this config makes them with, while the workflow
plans, before any job removes an output.

Snakemake reruns a job whose inputs are newer or whose settings changed since *it* made
the job's outputs, and otherwise trusts the files it finds. A file copied in from another
study (a sentence table, an occurrence index or one of its files, the correction split)
is newer than its inputs and carries Snakemake's record of this study's settings, so it
would be trusted, and everything after it rebuilt from it without a word.

So each corpus stage's settings enter the DAG as a file named by their digest,
``results/corpus/settings/<stage>-<digest>.json`` (rule ``settings_record``), an input of
the stage's rule. A config edit names a record not yet written: Snakemake writes it, and
rebuilds the stage. A file at hand whose recorded settings are not this config's while
this config's record is older than it was made by no run of this study: another study's,
refused here in one line. Each file is also checked against its siblings: an index's
files against its summary, an index and a split against the sentence table they were
built from, and a model's extraction against the index it was extracted from. And the
config's ``extraction.partitions`` against the sentences the corpus is known to hold.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from contextuality.corpus.index import (
    INDEX_FILE_NAMES,
    IndexFiles,
    IndexSettings,
    index_settings_record,
    subword_units,
    word_units,
)
from contextuality.corpus.settings import CorpusSettings
from contextuality.errors import ConfigError, InputDataError
from contextuality.files.provenance import config_hash, read_json
from contextuality.files.tables import read_footer_provenance
from contextuality.transforms.fitting import fit_split_settings
from contextuality.workflow.config import (
    extraction_partitions,
    model_names,
    subword_index_settings,
    subword_tokenizers,
)
from contextuality.workflow.paths import extraction_metas, index_directory

CORPUS = Path("results/corpus")
SENTENCES = CORPUS / "sentences.parquet"
FIT_SPLIT = CORPUS / "fit_split.parquet"
SETTINGS_RECORDS = CORPUS / "settings"
SUBWORD_STAGE = "subwords-"  # + the tokenizer's key: one stage per subword index
ADVICE = "put this study's file back, or delete {files} and the run rebuilds {what}"


def stage_settings(config: dict[str, Any], stage: str) -> dict[str, Any]:
    """The settings `stage` (``corpus``, ``index``, ``fit_split``, ``subwords-<key>``) is
    made with under `config`, as its file records their hash (`stage_digest`)."""
    if stage == "corpus":
        return CorpusSettings.from_config(config["corpus"]).as_config()
    if stage == "index":
        settings = IndexSettings(**config["index"])
        return index_settings_record(settings, word_units(settings))
    if stage == "fit_split":
        fit = config["measures"]["transform_fit"]["fit_fraction"]
        return fit_split_settings(fit, config["measures"]["seed"])
    key = stage.removeprefix(SUBWORD_STAGE)
    tokenizer = subword_tokenizers(config).get(key) if stage.startswith(SUBWORD_STAGE) else None
    if tokenizer is None:
        raise InputDataError(f"no corpus stage '{stage}' in this config")
    settings = IndexSettings(**subword_index_settings(config), lowercase=False)
    return index_settings_record(settings, subword_units(key, tokenizer["source"]))


def stage_digest(config: dict[str, Any], stage: str) -> str:
    """The hash of `stage_settings`, which the stage's file records as ``config_hash``."""
    return config_hash(stage_settings(config, stage))


def settings_record(config: dict[str, Any], stage: str) -> str:
    """The path of the record of `stage`'s settings under `config`: an input of the
    stage's rule, so that a change of them rebuilds it."""
    return f"{SETTINGS_RECORDS}/{stage}-{stage_digest(config, stage)}.json"


def stages(config: dict[str, Any]) -> dict[str, Path]:
    """Each corpus stage of `config` → the file whose provenance records its settings."""
    files = {
        "corpus": SENTENCES,
        "index": CORPUS / INDEX_FILE_NAMES["summary"],
        "fit_split": FIT_SPLIT,
    }
    for key in subword_tokenizers(config):
        files[SUBWORD_STAGE + key] = CORPUS / "subwords" / key / INDEX_FILE_NAMES["summary"]
    return files


def _recorded(path: Path) -> dict[str, Any]:
    """The provenance of a stage's file: a Parquet table's footer, an index's summary."""
    return read_footer_provenance(path) if path.suffix == ".parquet" else read_json(path)


def check_stage_settings(config: dict[str, Any]) -> None:
    """Refuse (InputDataError, one line) a corpus stage's file at hand made with other
    settings than `config`'s where `config`'s record is older than it: no run of this
    study made it, and Snakemake would not rebuild it. Where the record is newer, or not
    written yet, Snakemake rebuilds the file, and nothing is said."""
    for stage, path in stages(config).items():
        if not path.is_file():
            continue
        recorded = _recorded(path)
        if recorded.get("config_hash") == stage_digest(config, stage):
            continue
        record = Path(settings_record(config, stage))
        if not record.is_file() or record.stat().st_mtime > path.stat().st_mtime:
            continue
        raise InputDataError(
            f"{path}: {_described(stage, recorded)} made with other {_section(stage)} settings "
            f"({recorded.get('config_hash', 'none recorded')}) than this config's "
            f"({stage_digest(config, stage)}), which this study's run recorded before it "
            f"({record}): another study's file; "
            + ADVICE.format(files=_files_of(stage, path), what=_rebuilt(stage))
        )


def _section(stage: str) -> str:
    return {"corpus": "corpus", "fit_split": "measures.transform_fit"}.get(stage, "index")


def _described(stage: str, recorded: dict[str, Any]) -> str:
    if stage == "corpus":
        return f"{recorded.get('n_sentences', '?')} sentences of corpus '{recorded.get('corpus')}'"
    if stage == "fit_split":
        return f"a split of {recorded.get('n_fit_sentences', '?')} held-out sentences"
    return f"an index of {recorded.get('n_sentences', '?')} sentences"


def _files_of(stage: str, path: Path) -> str:
    """What to delete for `stage`'s file at `path` to be rebuilt: the file, or an index's
    three files."""
    if stage in ("corpus", "fit_split"):
        return str(path)
    return f"{path.parent}/{{{','.join(INDEX_FILE_NAMES.values())}}}"


def _rebuilt(stage: str) -> str:
    if stage == "corpus":
        return "the corpus from this config, and everything measured on it"
    if stage == "fit_split":
        return "the split from this config"
    return "the index from this study's sentence table, and the extractions after it"


def check_index_files(config: dict[str, Any]) -> None:
    """Refuse (InputDataError, one line) an index's occurrences or vocabulary that is not
    part of the index its summary describes (each records the summary it was written
    with), and an index or a split built from other sentences than the table at hand while
    not older than it (an older one is rebuilt before anything reads it)."""
    built = {stage: path for stage, path in stages(config).items() if stage != "corpus"}
    for stage, path in built.items():
        if path.is_file() and stage != "fit_split":
            _check_siblings(stage, IndexFiles.in_directory(path.parent))
    if not SENTENCES.is_file():
        return
    table = read_footer_provenance(SENTENCES).get("corpus_checksum")
    for stage, path in built.items():
        if not path.is_file() or _older(path, SENTENCES):
            continue
        built_from = _recorded(path).get("corpus_checksum")
        if built_from == table:
            continue
        what = "split" if stage == "fit_split" else "index"
        raise InputDataError(
            f"{path}: built from sentences {built_from}, not from the sentence table at "
            f"hand ({SENTENCES}: {table}), though newer than it: another study's {what}; "
            + ADVICE.format(files=_files_of(stage, path), what=_rebuilt(stage))
        )


def _check_siblings(stage: str, files: IndexFiles) -> None:
    """Refuse an index's occurrences or vocabulary written with another summary than the
    one at hand (`IndexFiles.write` gives each file the summary as its provenance)."""
    summary = files.read_summary()
    for path in (files.occurrences, files.vocab):
        if path.is_file() and read_footer_provenance(path) != summary:
            raise InputDataError(
                f"{path}: not part of the index {files.summary} describes (it was written "
                f"with another index's summary): another study's file; "
                + ADVICE.format(files=_files_of(stage, files.summary), what=_rebuilt(stage))
            )


def check_extractions(config: dict[str, Any]) -> None:
    """Refuse (InputDataError, one line) a model's meta.json extracted from another index
    than the one at hand while not older than it: another study's extraction, which
    Snakemake would not redo, and whose shards no row of this index aligns with. An older
    one is extracted again before anything reads it."""
    for model in model_names(config):
        summary = Path(index_directory(config, model)) / INDEX_FILE_NAMES["summary"]
        if not summary.is_file():
            continue
        index = read_json(summary).get("index_checksum")
        for meta in map(Path, extraction_metas(config, model)):
            if not meta.is_file() or _older(meta, summary):
                continue
            extracted_from = read_json(meta).get("index_checksum")
            if extracted_from != index:
                raise InputDataError(
                    f"{meta}: extracted from index {extracted_from}, not from the index at "
                    f"hand ({summary}: {index}), though newer than it: another study's "
                    f"extraction; put this study's back, or delete {meta.parent}/ and the "
                    "run extracts the model again from this study's index"
                )


def _older(path: Path, than: Path) -> bool:
    return os.stat(path).st_mtime < os.stat(than).st_mtime


def check_partitions(config: dict[str, Any]) -> None:
    """Refuse (ConfigError naming the key) ``extraction.partitions`` above the number of
    the corpus's sentences where it is known before the run: ``corpus.max_sentences``, or
    the sentence table at hand made with this config's corpus settings. A part is a range
    of whole sentences (`extraction.partitions.partition_bounds`): more parts than
    sentences would leave parts without rows."""
    models = model_names(config)
    partitions = max((extraction_partitions(config, name) for name in models), default=1)
    known = {"corpus.max_sentences": config["corpus"].get("max_sentences")}
    if partitions > 1 and SENTENCES.is_file():
        recorded = read_footer_provenance(SENTENCES)
        if recorded.get("config_hash") == stage_digest(config, "corpus"):
            known[f"{SENTENCES}"] = recorded.get("n_sentences")
    for source, n_sentences in known.items():
        if n_sentences is not None and partitions > int(n_sentences):
            raise ConfigError(
                f"extraction.partitions: {partitions} parts of a corpus of {n_sentences:,} "
                f"sentences ({source}); set it to at most {n_sentences:,}, since a part is a "
                "range of whole sentences"
            )
