"""Settings and inputs that cannot give a right result, each refused in one line naming
what to change, before any output is written, or warned about with its count: a GPU that
is not there, windows that cannot move on, CKA of one row, more neighbours than rows, a
shard's rows rewritten in place, and the GPU acceptance run's own arguments."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from contextuality import backends
from contextuality.backends import load_model
from contextuality.backends.base import resolved_device
from contextuality.backends.settings import ModelSettings
from contextuality.errors import ConfigError, InputDataError, ShardMismatchError
from contextuality.extraction.units import sentence_units
from contextuality.geometry.alignment import (
    AlignmentSettings,
    SampledLayers,
    SampleRows,
    alignment_between,
)
from contextuality.geometry.linear_cka import CrossProducts
from contextuality.storage.shards import ShardSetWriter, load_shard

REPO = Path(__file__).resolve().parents[1]
LONG = "The quick brown fox jumps over the lazy dog by the river bank again and again today."


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_gpu_where_torch_sees_none_is_one_line_naming_the_setting():
    for asked in ("cuda", "cuda:1"):
        with pytest.raises(ConfigError) as refused:
            resolved_device(asked, "models.m.device")
        assert str(refused.value) == (
            f"models.m.device: {asked} asked for, but torch sees no GPU here; use auto (a GPU "
            "where there is one) or cpu"
        )
    assert resolved_device("auto") == "cpu" and resolved_device("cpu") == "cpu"


def test_a_device_torch_does_not_know_or_this_torch_lacks_is_one_line_naming_the_setting():
    """Any device string torch parses is taken; one it does not parse (``tpu``, ``gpu``)
    is refused by the model's settings themselves, wherever the jobs will run; one this
    torch build or machine does not have (``mps`` without MPS, ``xpu`` without an XPU) in
    the words a missing GPU gets."""
    for asked in ("tpu", "gpu", "CUDA", "cuda:-1"):
        with pytest.raises(ConfigError) as refused:
            resolved_device(asked, "models.m.device")
        assert str(refused.value) == (
            f"models.m.device: {asked} is not a device torch knows; use auto (a GPU where "
            "there is one), cpu, cuda, cuda:N, mps, xpu or xpu:N"
        )
        with pytest.raises(ConfigError, match=f"models.m.device: {asked} is not a device"):
            backends.model_settings("m", {"source": "m", "device": asked})
    missing = [("meta", "no meta device")]
    if not torch.backends.mps.is_available():
        missing += [("mps", "no mps device"), ("mps:0", "no mps device")]
    if not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        missing.append(("xpu:1", "no xpu device"))
    for asked, seen in missing:
        with pytest.raises(ConfigError) as refused:
            resolved_device(asked, "geometry.alignment.device")
        assert str(refused.value) == (
            f"geometry.alignment.device: {asked} asked for, but torch sees {seen} here; use "
            "auto (a GPU where there is one) or cpu"
        )
        # a device this machine lacks is the machine's matter: the settings take it
        assert ModelSettings.from_config("m", {"source": "m", "device": asked}).device == asked
    assert resolved_device("cpu:0") == "cpu:0"


def test_a_plan_of_auto_and_cpu_devices_loads_no_torch_and_one_of_an_accelerator_checks_it():
    """`study.check_devices`, which every plan and run start calls: ``auto`` and ``cpu``
    (the shipped config's) are on every machine, so nothing loads torch (seconds of each
    ``snakemake`` call); ``cpu:1`` or an accelerator is looked up in torch and refused
    where it is missing."""
    import sys

    program = (
        "import sys, yaml\n"
        "from contextuality.configuration.schema import with_defaults\n"
        "from contextuality.workflow.study import check_devices\n"
        "config = with_defaults(yaml.safe_load(open('config/config.yaml')))\n"
        "config['models']['minilm']['device'] = sys.argv[1]\n"
        "check_devices(config)\n"
        "print('torch' in sys.modules)"
    )

    def check(device: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-c", program, device]
        return subprocess.run(command, capture_output=True, text=True, cwd=REPO)

    for device in ("auto", "cpu"):
        checked = check(device)
        assert checked.returncode == 0 and checked.stdout.split() == ["False"], checked.stderr
    refused = check("cpu:1")
    assert refused.returncode == 1
    assert "models.minilm.device: cpu:1 asked for, but torch sees" in refused.stderr


def test_windows_that_cannot_move_on_are_refused_before_the_forward_pass(tiny_bert_dir):
    """max_length 12 leaves 10 content subwords beside [CLS] and [SEP]: an overlap of 10
    or 11 (below max_length, so the config's check lets it through) is refused when the
    model's inputs are built, naming the setting."""
    for overlap in (10, 11):
        spec = ModelSettings(
            name="m",
            source=str(tiny_bert_dir),
            max_length=12,
            long_sentences="window",
            window_overlap=overlap,
        )
        with pytest.raises(ConfigError, match=rf"models.m.window_overlap: {overlap} leaves no"):
            sentence_units(load_model(spec), [LONG])
    spec = ModelSettings(
        name="m", source=str(tiny_bert_dir), max_length=12, long_sentences="window",
        window_overlap=9,
    )  # fmt: skip
    assert len(sentence_units(load_model(spec), [LONG]).encode(0, 1)) > 1


def test_cka_of_fewer_than_two_rows_is_one_line():
    products = CrossProducts([3], None)
    products.add([np.ones((1, 3))])
    with pytest.raises(InputDataError, match="CKA needs 2 or more occurrences .* 1 here"):
        products.cka()


def test_more_neighbours_than_rows_are_warned_about_with_the_count(caplog):
    rng = np.random.default_rng(0)
    layers = SampledLayers({0: rng.standard_normal((30, 4)), 1: rng.standard_normal((30, 4))}, {})
    later = np.arange(30) % 3 > 0
    with caplog.at_level(logging.WARNING):
        sample = SampleRows(later, np.arange(30), sampled=False)
        settings = AlignmentSettings(k=25, permutations=2, bootstrap=2)
        table = alignment_between(("m", layers), None, sample, 0, 0.95, settings).table
    warned = [record.getMessage() for record in caplog.records]
    assert any("m (position>0 occurrences): geometry.alignment.k = 25 is not below the 20" in text
               for text in warned)  # fmt: skip
    late = table[table["occurrences"] == "position>0"]
    assert late["mutual_knn"].isna().all()
    assert table.loc[table["occurrences"] == "all", "mutual_knn"].notna().all()
    with pytest.raises(ConfigError, match="geometry.alignment.k must be at least 1"):
        AlignmentSettings(k=0)
    with pytest.raises(ConfigError, match="geometry.alignment.permutations must be at least 1"):
        AlignmentSettings(permutations=0)


def test_rows_rewritten_in_place_are_refused(tmp_path):
    """A user's script 'fixing' rows through h5py, which writes a fresh checksum with
    them: refused on reading, as a damaged shard is."""
    path = tmp_path / "layer_3.h5"
    vectors = np.random.default_rng(1).standard_normal((1, 20_000, 32)).astype(np.float16)
    with ShardSetWriter({3: path}, 20_000, 32, "float16", {"index_checksum": "i"}) as writer:
        writer.write(0, vectors)
        writer.commit({"n_missing": 0})
    assert np.array_equal(load_shard(path, "i", 20_000, dtype=None)[0], vectors[0])
    with h5py.File(path, "r+") as handle:
        handle["vectors"][100:102] = 0.5
    with pytest.raises(ShardMismatchError, match="rows were rewritten after it was written"):
        load_shard(path, "i", 20_000)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--cpu", "--stages", "x"], "error: --stages x: stages are letters of abcd"),
        (["--out"], "error: --out needs a value"),
        (["--cpu", "--out", "{file}"], "is a file, not a directory"),
        (["--gpus"], "error: unknown option --gpus"),
    ],
)
def test_the_acceptance_run_refuses_bad_arguments_before_any_work(tmp_path, arguments, expected):
    file = tmp_path / "a-file"
    file.write_text("")
    command = ["bash", str(REPO / "bench/gpu/run.sh")]
    command += [argument.replace("{file}", str(file)) for argument in arguments]
    finished = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert finished.returncode == 2
    assert finished.stderr.count("\n") == 1 and expected in finished.stderr
    assert list(tmp_path.iterdir()) == [file]  # nothing installed, built or written
