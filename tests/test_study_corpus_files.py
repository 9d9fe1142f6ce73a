"""A study's corpus files against its config: each stage's file records the hash of the
settings it was made with, and a record of this config's settings (named by that hash) is
an input of the stage. Whatever subset of another study's corpus files is copied in, the
plan refuses it in one line before any job removes an output; a config edit rebuilds the
stage instead. Unit tests on files the steps write, then the workflow on a finished run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from test_study_files import (
    _copied_from_another_study,
    _one_error_line,
    _refused_twice,
    _tables,
    copy,  # noqa: F401 (a fixture)
    finished,  # noqa: F401 (a fixture)
)
from test_workflow import _config, _with_defaults, _write_corpus
from workflow_runs import planned_jobs, snakemake, write_config

from contextuality import steps
from contextuality.corpus.index import IndexFiles, IndexSettings
from contextuality.corpus.settings import CorpusSettings
from contextuality.errors import InputDataError
from contextuality.files.provenance import config_hash, read_json, write_json
from contextuality.workflow import study_files


def _made(directory: Path, config: dict, stages: tuple[str, ...] = ("corpus", "index")) -> None:
    """The files of `stages` as the workflow's rules make them under `config`, in the
    current directory, each stage's settings record written first."""
    for stage in stages:
        steps.settings_record(
            stage,
            study_files.stage_settings(config, stage),
            study_files.settings_record(config, stage),
        )
        if stage == "corpus":
            corpus = CorpusSettings.from_config(config["corpus"])
            steps.sentences(corpus, [config["corpus"]["text"]["path"]], study_files.SENTENCES)
        elif stage == "index":
            files = IndexFiles.in_directory(study_files.CORPUS)
            steps.occurrence_index(study_files.SENTENCES, IndexSettings(**config["index"]), files)
        else:
            measures = config["measures"]
            fraction = measures["transform_fit"]["fit_fraction"]
            steps.fit_split(
                study_files.SENTENCES, fraction, measures["seed"], study_files.FIT_SPLIT
            )


@pytest.fixture
def here(tmp_path, monkeypatch) -> tuple[Path, dict]:
    """A study directory (the current directory) with a corpus file and its config."""
    monkeypatch.chdir(tmp_path)
    _write_corpus(tmp_path / "corpus.txt")
    return tmp_path, _with_defaults(_config(tmp_path / "corpus.txt", {}))


def _later(path: Path) -> None:
    """Make `path` newer than anything written before (a file copied in later)."""
    stamp = path.stat().st_mtime + 10
    os.utime(path, (stamp, stamp))


def test_the_files_a_stage_writes_record_the_digest_of_its_record(here):
    """Each stage's file records, as its config_hash, the digest its settings record is
    named by: the plan's comparison is with what the step itself records."""
    directory, config = here
    _made(directory, config, ("corpus", "index", "fit_split"))
    for stage, path in study_files.stages(config).items():
        recorded = study_files._recorded(path)
        assert recorded["config_hash"] == study_files.stage_digest(config, stage)
        record = read_json(study_files.settings_record(config, stage))
        assert record["settings"] == study_files.stage_settings(config, stage)
        assert config_hash(record["settings"]) == recorded["config_hash"]
    study_files.check_stage_settings(config)
    study_files.check_index_files(config)


def test_a_new_record_removes_the_stage_records_of_other_settings(here):
    """Back to settings a stage was made with before must rebuild it: the record of the
    settings left is removed when another's is written, other stages' records kept."""
    directory, config = here
    _made(directory, config, ("corpus", "index"))
    first = Path(study_files.settings_record(config, "corpus"))
    edited = _with_defaults({**config, "corpus": {**config["corpus"], "max_sentences": 5}})
    second = Path(study_files.settings_record(edited, "corpus"))
    assert second != first
    steps.settings_record("corpus", study_files.stage_settings(edited, "corpus"), second)
    assert second.is_file() and not first.exists()
    assert Path(study_files.settings_record(config, "index")).is_file()
    with pytest.raises(InputDataError, match="not the record of this config's corpus settings"):
        steps.settings_record("corpus", study_files.stage_settings(config, "corpus"), second)


def test_a_table_of_other_settings_newer_than_this_configs_record_is_refused(here):
    """A table made with other corpus settings, newer than this config's record: no run of
    this study made it. The line names both hashes and what to do."""
    directory, config = here
    _made(directory, config, ("corpus",))
    other = _with_defaults({**config, "corpus": {**config["corpus"], "max_sentences": 5}})
    corpus = CorpusSettings.from_config(other["corpus"])
    steps.sentences(corpus, [config["corpus"]["text"]["path"]], study_files.SENTENCES)
    _later(study_files.SENTENCES)
    with pytest.raises(InputDataError) as refused:
        study_files.check_stage_settings(config)
    message = str(refused.value)
    assert message.startswith("results/corpus/sentences.parquet: 5 sentences of corpus 'tiny'")
    assert study_files.stage_digest(other, "corpus") in message
    assert study_files.stage_digest(config, "corpus") in message
    assert (
        "another study's file" in message and "delete results/corpus/sentences.parquet" in message
    )


def test_other_settings_are_a_rebuild_where_this_configs_record_is_missing_or_newer(here):
    """A config edit (this config's record not written yet, or written after the table):
    Snakemake rebuilds the table, so nothing is refused."""
    directory, config = here
    _made(directory, config, ("corpus",))
    edited = _with_defaults({**config, "corpus": {**config["corpus"], "max_sentences": 5}})
    study_files.check_stage_settings(edited)  # no record of the edit yet
    record = Path(study_files.settings_record(edited, "corpus"))
    steps.settings_record("corpus", study_files.stage_settings(edited, "corpus"), record)
    _later(record)
    study_files.check_stage_settings(edited)  # the record is newer: the table is rebuilt


def test_an_index_file_written_with_another_summary_is_refused(here, tmp_path_factory):
    """One file of another study's index (same corpus, another min_contexts) copied over
    this one's: refused as not part of the index the summary describes, whichever of the
    two files it is."""
    directory, config = here
    _made(directory, config, ("corpus", "index"))
    other = tmp_path_factory.mktemp("other")
    steps.occurrence_index(
        study_files.SENTENCES,
        IndexSettings(min_contexts=2),
        IndexFiles.in_directory(other),
    )
    for name in ("occurrences.parquet", "vocab.parquet"):
        kept = (study_files.CORPUS / name).read_bytes()
        shutil.copy(other / name, study_files.CORPUS / name)
        with pytest.raises(InputDataError) as refused:
            study_files.check_index_files(config)
        assert str(refused.value).startswith(
            f"results/corpus/{name}: not part of the index results/corpus/index.json describes"
        )
        (study_files.CORPUS / name).write_bytes(kept)
    study_files.check_index_files(config)


def test_a_split_built_from_other_sentences_is_refused_while_newer(here):
    directory, config = here
    _made(directory, config, ("corpus", "index", "fit_split"))
    fraction = config["measures"]["transform_fit"]["fit_fraction"]
    other = _with_defaults({**config, "corpus": {**config["corpus"], "max_sentences": 5}})
    elsewhere = directory / "elsewhere.parquet"
    steps.sentences(CorpusSettings.from_config(other["corpus"]), ["corpus.txt"], elsewhere)
    steps.fit_split(elsewhere, fraction, config["measures"]["seed"], study_files.FIT_SPLIT)
    _later(study_files.FIT_SPLIT)
    with pytest.raises(InputDataError, match="fit_split.parquet: built from sentences .* another"):
        study_files.check_index_files(config)
    os.utime(study_files.FIT_SPLIT, (1, 1))  # older than the table: rebuilt before it is read
    study_files.check_index_files(config)


# The workflow on a finished run (tests/test_study_files.py's study).


@pytest.mark.workflow
def test_another_studys_whole_corpus_directory_is_refused_at_the_dry_run(copy, tiny_bert_dir):  # noqa: F811
    """Another study's every corpus file (3 sentences, its own index and split) copied over
    this one's: refused in one line at the dry run, naming the table; lowering
    min_contexts (what the words of 3 sentences would need) changes nothing of it. No
    table, shard or meta.json is touched."""
    shards = {path: path.read_bytes() for path in (copy / "results/embeddings/bert").iterdir()}
    before = _tables(copy)
    names = ("sentences.parquet", "occurrences.parquet", "vocab.parquet", "index.json")
    _copied_from_another_study(copy, tiny_bert_dir, names)
    _refused_twice(copy, "results/corpus/sentences.parquet: 3 sentences", "another study's file")
    config = yaml.safe_load((copy / "config" / "config.yaml").read_text())
    config["index"]["min_contexts"] = 1
    write_config(copy, config)
    result = snakemake(copy, "--dry-run")
    assert result.returncode == 1
    assert "results/corpus/sentences.parquet: 3 sentences" in _one_error_line(result)
    assert _tables(copy) == before
    assert {path: path.read_bytes() for path in shards} == shards


@pytest.mark.workflow
def test_another_studys_occurrences_alone_are_refused_at_the_dry_run(copy, tiny_bert_dir):  # noqa: F811
    shards = {path: path.read_bytes() for path in (copy / "results/embeddings/bert").iterdir()}
    _copied_from_another_study(copy, tiny_bert_dir, ("occurrences.parquet",))
    _refused_twice(
        copy,
        "results/corpus/occurrences.parquet: not part of the index results/corpus/index.json",
        "another study's file",
    )
    assert {path: path.read_bytes() for path in shards} == shards


@pytest.mark.workflow
def test_a_corpus_setting_edited_rebuilds_the_corpus_instead(copy):  # noqa: F811
    """The config's corpus settings edited: the dry run plans the record, the table and
    what follows, and refuses nothing."""
    config = yaml.safe_load((copy / "config" / "config.yaml").read_text())
    config["corpus"]["max_sentences"] = 20
    write_config(copy, config)
    planned = planned_jobs(copy)
    assert planned["settings_record"] == 1
    assert planned["sentences"] == 1 and planned["occurrence_index"] == 1


@pytest.mark.workflow
@pytest.mark.parametrize("overlap", [10, 11])
def test_an_overlap_that_leaves_the_content_window_no_step_is_refused_at_the_dry_run(
    copy,  # noqa: F811
    overlap,
):
    """``window_overlap`` below max_length (12) but not below the window's content (12 less
    [CLS] and [SEP]): the dry run refuses it from the tokenizer, the shards untouched."""
    shards = {path: path.read_bytes() for path in (copy / "results/embeddings/bert").iterdir()}
    config = yaml.safe_load((copy / "config" / "config.yaml").read_text())
    config["models"]["bert"].update(
        {"max_length": 12, "long_sentences": "window", "window_overlap": overlap}
    )
    write_config(copy, config)
    for arguments in (["--dry-run"], []):
        result = snakemake(copy, *arguments)
        assert result.returncode == 1
        assert f"models.bert.window_overlap: {overlap} leaves no step in a window of 10 " in (
            result.stderr
        )
    assert {path: path.read_bytes() for path in shards} == shards


def test_an_extraction_of_another_index_is_refused_while_newer(here, tiny_bert_dir):
    """A model's meta.json extracted from another index than the one at hand, newer than
    it: another study's extraction, refused; older, it is extracted again, and nothing is
    said."""
    directory, config = here
    config = _with_defaults({**config, "models": {"bert": {"source": str(tiny_bert_dir)}}})
    _made(directory, config, ("corpus", "index"))
    meta = directory / "results/embeddings/bert/meta.json"
    index = read_json(study_files.CORPUS / "index.json")["index_checksum"]
    write_json(meta, {"index_checksum": index})
    _later(meta)
    study_files.check_extractions(config)
    write_json(meta, {"index_checksum": "0" * 64})
    _later(meta)
    with pytest.raises(InputDataError) as refused:
        study_files.check_extractions(config)
    assert str(refused.value).startswith(
        f"results/embeddings/bert/meta.json: extracted from index {'0' * 64}, not from the "
        f"index at hand (results/corpus/index.json: {index})"
    )
    os.utime(meta, (1, 1))
    study_files.check_extractions(config)
