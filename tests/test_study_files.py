"""A finished run, then what a user or a clumsy colleague does to it: a sentence table of
another study copied in, a sidecar deleted, settings that could not take effect, a GPU
asked for where there is none. Each is refused in one line, before any job removes an
output, or repaired by the next run; never a table changed without a word."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from test_workflow import _config, _write_corpus
from workflow_runs import snakemake, write_config

from contextuality.files.tables import read_tsv

pytestmark = pytest.mark.workflow

TABLES = ("results/tables/measures.tsv", "results/tables/alignment.tsv")


def _study(directory: Path, model_dir: Path, **changes) -> dict:
    """A tiny study's config (a tiny BERT's layers 0 and 2, the geometry on a small
    sample), written under `directory` with its corpus; `changes` replace its sections."""
    directory.mkdir(parents=True, exist_ok=True)
    _write_corpus(directory / "corpus.txt")
    config = _config(
        directory / "corpus.txt", {"bert": {"source": str(model_dir), "layers": [0, 2]}}
    )
    config["measures"]["transforms"] = ["none"]
    config["geometry"] = {"sample_size": 200}
    config.update(changes)
    write_config(directory, config)
    return config


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_bert_dir) -> Path:
    """A study run to the end."""
    directory = tmp_path_factory.mktemp("finished")
    _study(directory, tiny_bert_dir)
    result = snakemake(directory)
    assert result.returncode == 0, result.stderr[-3000:]
    return directory


@pytest.fixture
def copy(finished, tmp_path) -> Path:
    """A copy of the finished study to do things to (Snakemake's records with it)."""
    target = tmp_path / "study"
    shutil.copytree(finished, target, symlinks=True)  # its config reads the same corpus file
    return target


def _tables(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in TABLES}


def _one_error_line(result) -> str:
    """The run's one ``error:`` line, after checking it printed no traceback."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output and 'File "' not in output, output[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


def _copied_from_another_study(copy: Path, model_dir: Path, names: tuple[str, ...]) -> None:
    """Make another study (3 sentences of its own corpus, words in 1 sentence indexed) as
    far as `names` (files of results/corpus/), and copy them over `copy`'s."""
    other = copy.parent / "other"
    config = _study(other, model_dir)
    config["corpus"]["max_sentences"] = 3
    config["index"]["min_contexts"] = 1
    write_config(other, config)
    made = snakemake(other, *(f"results/corpus/{name}" for name in names))
    assert made.returncode == 0, made.stderr[-3000:]
    for name in names:
        shutil.copy(other / "results/corpus" / name, copy / "results/corpus")


def _refused_twice(copy: Path, *expected: str) -> None:
    """The dry run and the run of `copy` each end in one error line holding `expected`."""
    for arguments in (["--dry-run"], []):
        result = snakemake(copy, *arguments)
        assert result.returncode == 1
        line = _one_error_line(result)
        assert all(text in line for text in expected), line


def test_a_sentence_table_of_another_study_is_refused_before_any_job(copy, tiny_bert_dir):
    """Another study's table (its own corpus, 3 of its sentences) copied over this one's:
    refused while the workflow plans, in one line naming both corpora's settings; nothing
    rebuilt from it, no output removed."""
    before = _tables(copy)
    index = (copy / "results/corpus/occurrences.parquet").read_bytes()
    _copied_from_another_study(copy, tiny_bert_dir, ("sentences.parquet",))
    _refused_twice(copy, "results/corpus/sentences.parquet: 3 sentences", "another study's file")
    assert _tables(copy) == before
    assert (copy / "results/corpus/occurrences.parquet").read_bytes() == index


def test_an_index_of_another_study_is_refused_before_any_job(copy, tiny_bert_dir):
    """Another study's occurrence index (built from its own 3 sentences, with its own
    min_contexts) copied over this one's: refused while the workflow plans, in one line
    naming both settings' hashes; no extraction reruns from it, no shard is removed."""
    before = _tables(copy)
    shard = (copy / "results/embeddings/bert/layer_2.h5").read_bytes()
    names = ("occurrences.parquet", "vocab.parquet", "index.json")
    _copied_from_another_study(copy, tiny_bert_dir, names)
    _refused_twice(
        copy, "error: results/corpus/index.json: an index of 3 sentences", "another study's file"
    )
    assert _tables(copy) == before
    assert (copy / "results/embeddings/bert/layer_2.h5").read_bytes() == shard


def test_a_lost_sidecar_is_rebuilt_by_the_next_run(copy):
    """The provenance sidecars of the measures and alignment tables deleted: the next run
    writes them again, and the tables read back as before."""
    before = _tables(copy)
    for name in TABLES:
        Path(copy / name).with_suffix(".provenance.json").unlink()
    result = snakemake(copy)
    assert result.returncode == 0, result.stderr[-3000:]
    for name in TABLES:
        assert Path(copy / name).with_suffix(".provenance.json").is_file()
        read_tsv(copy / name)
    assert _tables(copy) == before


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"layers": [0, 1], "ablation": {"block": 2, "target": "first_token", "value": "zero"}},
            "models.bert.ablation.block: 2, after the last layer extracted (1)",
        ),
        (
            {"max_length": 12, "long_sentences": "window", "window_overlap": 40},
            "models.bert.window_overlap: 40 is not below max_length 12",
        ),
    ],
)
def test_a_model_setting_that_cannot_take_effect_is_refused_at_the_dry_run(
    copy, tiny_bert_dir, change, expected
):
    before = _tables(copy)
    config = yaml.safe_load((copy / "config" / "config.yaml").read_text())
    config["models"]["bert"].update(change)
    write_config(copy, config)
    for arguments in (["--dry-run"], []):
        result = snakemake(copy, *arguments)
        assert result.returncode == 1
        assert _one_error_line(result) == "error: invalid config:"  # the problems below it
        assert f"\n  {expected}" in result.stderr
    assert _tables(copy) == before


def test_neighbours_as_many_as_the_sample_are_refused_at_the_dry_run(copy):
    config = yaml.safe_load((copy / "config" / "config.yaml").read_text())
    config["geometry"]["alignment"] = {"k": 200}
    write_config(copy, config)
    result = snakemake(copy, "--dry-run")
    assert result.returncode == 1 and _one_error_line(result) == "error: invalid config:"
    assert "\n  geometry.alignment.k: 200 is not below geometry.sample_size 200" in result.stderr


def test_a_gpu_asked_for_where_there_is_none_is_refused_before_any_job(copy):
    """``device: cuda`` on a machine whose torch sees no GPU: the dry run warns, naming the
    key (its jobs may be a cluster's); the run whose jobs run here stops as it starts,
    before any job, in one line naming the key; the shards stay."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    shard = (copy / "results/embeddings/bert/layer_2.h5").read_bytes()
    written = (copy / "config" / "config.yaml").read_text()
    for setting in ("models", "geometry"):
        config = yaml.safe_load(written)
        if setting == "models":
            config["models"]["bert"]["device"] = "cuda"
        else:
            config["geometry"]["alignment"] = {"device": "cuda:1"}
        write_config(copy, config)
        key = "models.bert.device: cuda" if setting == "models" else "geometry.alignment.device"
        planned = snakemake(copy, "--dry-run")
        assert planned.returncode == 0, planned.stderr[-3000:]
        warned = [line for line in planned.stderr.splitlines() if line.startswith("WARNING:")]
        assert len(warned) == 1 and warned[0].startswith(f"WARNING: {key}")
        assert "a run whose jobs run here will refuse it" in warned[0]
        result = snakemake(copy)
        assert result.returncode == 1
        line = _one_error_line(result)
        assert line.startswith(f"error: {key}") and "sees no GPU here" in line
    assert (copy / "results/embeddings/bert/layer_2.h5").read_bytes() == shard


def test_a_device_this_torch_lacks_or_does_not_know_is_refused_before_any_job(copy):
    """``device: mps`` on a torch built without MPS (the model's, or the alignment's): the
    dry run warns, naming the key; the run whose jobs run here stops as it starts, in one
    line. ``device: tpu``, a name torch does not know, is refused by the dry run itself.
    Every shard and meta.json keep their bytes."""
    import torch

    if torch.backends.mps.is_available():
        pytest.skip("this torch has MPS")
    kept = sorted((copy / "results/embeddings/bert").iterdir())
    before = {path: path.read_bytes() for path in kept}
    written = (copy / "config" / "config.yaml").read_text()
    for key in ("models.bert.device", "geometry.alignment.device"):
        config = yaml.safe_load(written)
        if key.startswith("models"):
            config["models"]["bert"]["device"] = "mps"
        else:
            config["geometry"]["alignment"] = {"device": "mps"}
        write_config(copy, config)
        said = f"{key}: mps asked for, but torch sees no mps device here; use auto"
        planned = snakemake(copy, "--dry-run")
        assert planned.returncode == 0, planned.stderr[-3000:]
        warned = [line for line in planned.stderr.splitlines() if line.startswith("WARNING:")]
        assert len(warned) == 1 and warned[0].startswith(f"WARNING: {said}"), warned
        result = snakemake(copy)
        assert result.returncode == 1 and _one_error_line(result).startswith(f"error: {said}")
    config = yaml.safe_load(written)
    config["models"]["bert"]["device"] = "tpu"
    write_config(copy, config)
    planned = snakemake(copy, "--dry-run")
    assert planned.returncode == 1 and _one_error_line(planned) == "error: invalid config:"
    assert "\n  models.bert.device: tpu is not a device torch knows; use auto" in planned.stderr
    assert sorted((copy / "results/embeddings/bert").iterdir()) == kept
    assert all(path.read_bytes() == content for path, content in before.items())
