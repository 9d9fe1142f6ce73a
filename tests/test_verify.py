"""``contextuality verify`` on a finished study: clean, it passes; each file damaged as a
user or a disk damages it (one byte changed with its mtime kept, a sidecar lost, a shard
of another index copied in) is one line naming the file and the rule that remakes it, and
``--repair`` deletes exactly those, which the next run remakes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest
from test_study_files import _study
from workflow_runs import planned_jobs, snakemake

from contextuality.cli import main
from contextuality.files.fetch import packaged_checksums
from contextuality.files.provenance import read_json, write_json
from contextuality.files.tables import read_tsv, read_tsv_provenance, write_tsv
from contextuality.storage.shards import ShardSetWriter, load_shard
from contextuality.streaming.accumulate import StreamingAccumulator
from contextuality.streaming.state import StreamingSettings
from contextuality.verification.rules import rule_of
from contextuality.verification.study import study_files

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_bert_dir) -> Path:
    """A tiny study run to the end (a tiny BERT's layers 0 and 2, the geometry)."""
    directory = tmp_path_factory.mktemp("verified")
    _study(directory, tiny_bert_dir)
    result = snakemake(directory)
    assert result.returncode == 0, result.stderr[-3000:]
    return directory


@pytest.fixture
def copy(finished, tmp_path) -> Path:
    target = tmp_path / "study"
    shutil.copytree(finished, target, symlinks=True)
    return target


def _verify(capsys, directory: Path, *arguments: str) -> tuple[int, list[str], str]:
    """The exit status, stdout's lines and stderr of ``contextuality verify``."""
    status = main(["verify", str(directory), *arguments])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, captured.out.splitlines(), captured.err


def _changed_in_place(path: Path, offset: int, mtime_kept: bool = True) -> None:
    """One byte of `path` changed at `offset`, its times kept (as a copy tool or a disk
    error keeps them, so that Snakemake sees nothing)."""
    times = path.stat()
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
    if mtime_kept:
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))


def _shard_of_another_index(path: Path) -> None:
    """Rewrite the shard at `path` whole and sound, as an extraction over another
    occurrence index writes it: the same vectors, another index checksum."""
    vectors, attributes = load_shard(path, None, dtype=None)
    kept = {key: value for key, value in attributes.items() if key not in ("layer", "complete")}
    kept["index_checksum"] = "0" * 64
    layer = int(attributes["layer"])
    with ShardSetWriter({layer: path}, *vectors.shape, str(vectors.dtype), kept) as writer:
        writer.write(0, vectors[None])
        writer.commit({"n_missing": attributes["n_missing"]})


def test_a_finished_study_verifies(finished, capsys):
    """Every file of the finished study has a digest and holds it: exit 0, one summary
    line counting them all."""
    files = study_files(finished)
    status, lines, error = _verify(capsys, finished)
    assert status == 0, lines + [error]
    assert lines == [f"{len(files)} files checked, 0 damaged"]
    assert any(path.suffix == ".pdf" for path in files) and len(files) > 60


def test_each_file_is_named_with_a_rule_that_writes_it(finished):
    """The rule `rule_of` names for every file of the study is one of the rules the
    workflow runs to make it (Snakemake's own plan, every job forced)."""
    planned = set(planned_jobs(finished, "--forceall")) - {"all"}
    named = {rule_of(finished, relative) for relative in study_files(finished)}
    assert named <= planned, named - planned
    assert {"extract_bert", "measure_layer", "alignment_table", "figures_none"} <= named


DAMAGES = {
    "results/tables/alignment.tsv": ("its bytes differ from the SHA-256", "alignment_table"),
    "results/measures/bert/none/layer_0.parquet": ("CRC checksum verification", "measure_layer"),
    "results/measures/bert/none/layer_2.json": ("content differs from the digest", "measure_layer"),
    "results/embeddings/bert/layer_2.h5": ("damaged", "extract_bert"),
    "results/embeddings/bert/layer_0.h5": (
        "not this study's: results/corpus/index.json",
        "extract_bert",
    ),
    "results/tables/measures.tsv": ("no measures.provenance.json beside it", "measures_table"),
    "results/figures/fig2_selfsim.pdf": ("its bytes differ from the SHA-256", "figures_none"),
    "results/tables/massive_activations.tsv": (
        "gathered from another results/measures/bert/none/layer_0.json (made ",
        "massive_activations_table",
    ),
}


def _damage(copy: Path) -> None:
    """Each file of `DAMAGES` damaged as its line says."""
    _changed_in_place(copy / "results/tables/alignment.tsv", 40)
    parquet = copy / "results/measures/bert/none/layer_0.parquet"
    column = pq.ParquetFile(parquet).metadata.row_group(0).column(0)
    _changed_in_place(parquet, column.data_page_offset + column.total_compressed_size - 2)
    summary = copy / "results/measures/bert/none/layer_2.json"
    summary.write_text(summary.read_text().replace('"contextuality"', '"contextualitx"', 1))
    with h5py.File(copy / "results/embeddings/bert/layer_2.h5", "r") as handle:
        chunk = handle["vectors"].id.get_chunk_info(0).byte_offset
    _changed_in_place(copy / "results/embeddings/bert/layer_2.h5", chunk + 11)
    _shard_of_another_index(copy / "results/embeddings/bert/layer_0.h5")
    (copy / "results/tables/measures.provenance.json").unlink()
    figure = copy / "results/figures/fig2_selfsim.pdf"
    _changed_in_place(figure, figure.stat().st_size // 3)
    remade = copy / "results/measures/bert/none/layer_0.json"  # a sound summary, made later
    write_json(remade, {**read_json(remade), "created_utc": "2100-01-01T00:00:00+00:00"})


def test_each_damaged_file_is_one_line_and_repair_deletes_it_for_the_next_run(copy, capsys):
    """Each damage of `DAMAGES` is reported in one line (the file, what differs, the rule),
    nothing else; exit 1. ``--repair`` deletes exactly those files; the next run remakes
    them and the study verifies again."""
    before = {relative: (copy / relative).read_bytes() for relative in study_files(copy)}
    _damage(copy)
    status, lines, error = _verify(capsys, copy)
    assert status == 1
    assert sorted(line.split(": ", 1)[0] for line in lines) == sorted(DAMAGES)
    for line in lines:
        name, rest = line.split(": ", 1)
        what, rule = DAMAGES[name]
        assert what in rest and rest.endswith(f"; remade by rule {rule}"), line
    files = len(study_files(copy))
    assert error.strip().splitlines() == [
        f"contextuality: error: {files} files checked, {len(DAMAGES)} damaged: 'contextuality "
        "verify --repair' deletes them, then snakemake remakes them"
    ]
    status, lines, error = _verify(capsys, copy, "--repair")
    assert status == 1
    assert sorted(line for line in lines if line.startswith("deleted ")) == sorted(
        f"deleted {name}" for name in DAMAGES
    )
    left = set(study_files(copy))
    assert not {Path(name) for name in DAMAGES} & left
    untouched = (
        set(before)
        - {Path(name) for name in DAMAGES}
        - {Path("results/tables/measures.provenance.json")}
    )
    assert untouched <= left
    result = snakemake(copy)
    assert result.returncode == 0, result.stderr[-3000:]
    status, lines, error = _verify(capsys, copy)
    assert status == 0, lines + [error]
    for name in ("results/tables/alignment.tsv", "results/tables/measures.tsv"):
        assert (copy / name).read_bytes() == before[Path(name)]


def test_a_figure_drawn_from_another_table_is_named(copy, capsys):
    """The positions table written again, sound but with other numbers: the table passes,
    and the figure drawn from it is named with the rule that draws it again."""
    table = copy / "results/tables/positions.tsv"
    rows = read_tsv(table)
    rows.loc[0, "mean_norm"] += 1
    write_tsv(rows, table, read_tsv_provenance(table))
    status, lines, error = _verify(capsys, copy)
    assert status == 1
    assert lines == [
        f"results/figures/positions.{kind}: drawn from another results/tables/positions.tsv "
        "than the one at hand; remade by rule geometry_figures"
        for kind in ("pdf", "png")
    ]


def test_a_directory_without_results_is_one_line(tmp_path, capsys):
    status, lines, error = _verify(capsys, tmp_path)
    assert status == 1 and lines == []
    assert error.strip() == (
        f"contextuality: error: {tmp_path}: no results/ folder, so not the working directory "
        "of a study (give the directory snakemake ran in)"
    )


def test_a_training_run_s_checkpoints_are_left_alone_and_a_json_without_digest_is_not(
    tmp_path, capsys
):
    """A training run's checkpoint folder (transformers' files, which record no digest) is
    counted as left alone; the same JSON file elsewhere under results/ is damaged."""
    checkpoint = tmp_path / "results/training/tiny/checkpoints/step_0"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text('{"model_type": "gpt2"}')
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    status, lines, _ = _verify(capsys, tmp_path)
    assert status == 0 and lines == [
        "0 files checked, 0 damaged, 2 others with no recorded digest left alone"
    ]
    stray = tmp_path / "results/tables/config.json"
    stray.parent.mkdir(parents=True)
    stray.write_text('{"model_type": "gpt2"}')
    status, lines, _ = _verify(capsys, tmp_path)
    assert status == 1 and lines[0].startswith("results/tables/config.json: no content_sha256")


def _state_file(path: Path, index_checksum: str) -> None:
    """A streamed layer's state file of 120 rows, accumulated over index `index_checksum`."""
    rng = np.random.default_rng(2)
    sentence_id = np.repeat(np.arange(30), 4)
    word_id = rng.integers(0, 6, size=len(sentence_id))
    settings = StreamingSettings(baseline_sample_size=20, sample_replicates=2)
    layer = int(path.name.split("_")[1].split(".")[0])
    with StreamingAccumulator({layer: path}, word_id, sentence_id, 8, {}, settings) as writer:
        writer.write(0, rng.standard_normal((1, len(word_id), 8)))
        writer.commit({"index_checksum": index_checksum})


def test_state_files_and_downloads_are_verified_too(tmp_path, capsys):
    """A streamed model's state file of another index and a download whose bytes are not
    the published ones are named with their rules; a download with no published checksum
    is left alone and counted; repaired, the rest verifies."""
    write_json(
        tmp_path / "results/corpus/index.json", {"index_checksum": "abc", "n_occurrences": 120}
    )
    _state_file(tmp_path / "results/streaming/m/layer_1.state.h5", "abc")
    _state_file(tmp_path / "results/streaming/m/layer_2.state.h5", "other")
    benchmark = tmp_path / "resources/benchmarks/wordsim/EN-SIMLEX-999.txt"
    benchmark.parent.mkdir(parents=True)
    benchmark.write_text("old\t1\n")
    (tmp_path / "resources/sts").mkdir(parents=True)
    (tmp_path / "resources/sts/STS2012-en-test.zip").write_bytes(b"archive")
    status, lines, error = _verify(capsys, tmp_path)
    published = packaged_checksums("benchmarks.sha256")["wordsim/EN-SIMLEX-999.txt"]
    assert status == 1
    assert lines == [
        "results/streaming/m/layer_2.state.h5: made from occurrence index other…, not this "
        "study's: results/corpus/index.json (abc…); a file of another study or an earlier "
        "index; remade by rule stream_m",
        f"resources/benchmarks/wordsim/EN-SIMLEX-999.txt: its SHA-256 is not the published "
        f"{published}; remade by rule download_benchmarks",
    ]
    assert "4 files checked, 2 damaged, 1 others with no recorded digest left alone" in error
    status, lines, error = _verify(capsys, tmp_path, "--repair")
    assert [line for line in lines if line.startswith("deleted")] == [
        "deleted results/streaming/m/layer_2.state.h5",
        "deleted resources/benchmarks/wordsim/EN-SIMLEX-999.txt",
    ]
    status, lines, error = _verify(capsys, tmp_path)
    assert (status, lines) == (
        0,
        ["2 files checked, 0 damaged, 1 others with no recorded digest left alone"],
    )
