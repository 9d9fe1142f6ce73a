"""Every bench refuses, before any work starts, the arguments it could not run with: a
config that is missing, binary, without models or without a decoder where it ablates
one; a count of 0 or below; a file where a directory is written; a directory to read
that is not there; a device torch does not know. Each is argparse's one line naming the
option, exit status 2 (bench/arguments.py)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from pathlib import Path

import pytest
import torch
import yaml

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.append(str(BENCH))  # the benches' own helpers (arguments, workdir), after the tests'


def _bench(name: str):
    """The bench `name` (bench/<name>.py), loaded from its file under a name of its own:
    bench/extraction.py and the tests' extraction.py must not take each other's place."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Every bench with a command line.
BENCHES = sorted(
    path.stem
    for path in BENCH.glob("*.py")
    if "argparse.ArgumentParser" in path.read_text(encoding="utf-8")
)


@pytest.fixture
def places(tmp_path, tiny_bert_dir) -> dict[str, str]:
    """The paths the bad arguments name: a file, a missing file and directory, a binary
    config, a config whose one model is an encoder (a tiny BERT)."""
    (tmp_path / "file.txt").write_text("kept\n")
    (tmp_path / "binary.yaml").write_bytes(bytes(range(256)))
    (tmp_path / "encoder.yaml").write_text(
        yaml.safe_dump({"models": {"bert": {"source": str(tiny_bert_dir)}}})
    )
    return {
        "FILE": str(tmp_path / "file.txt"),
        "MISSING": str(tmp_path / "missing.yaml"),
        "NO_DIRECTORY": str(tmp_path / "no-directory"),
        "BINARY": str(tmp_path / "binary.yaml"),
        "ENCODER": str(tmp_path / "encoder.yaml"),
    }


POSITIVE = "is not a positive integer"
NONNEGATIVE = "is not an integer of 0 or more"
# (bench, its arguments, what its one line says); FILE, MISSING, ... are `places`.
REFUSED = [
    ("default_run", ["--repeats", "0"], f"argument --repeats: 0 {POSITIVE}"),
    ("measures", ["--out", "FILE/x"], "argument --out: FILE/x: FILE is a file"),
    ("parity", ["--repeats", "0"], f"argument --repeats: 0 {POSITIVE}"),
    ("parity", ["--sentences", "-3"], f"argument --sentences: -3 {POSITIVE}"),
    ("extraction", ["--device", "tpu"], "argument --device: tpu is not a device torch knows"),
    ("extraction", ["--tokens", "0"], f"argument --tokens: 0 {POSITIVE}"),
    ("extraction", ["--token-budget", "2048", "0"], f"argument --token-budget: 0 {POSITIVE}"),
    ("extraction", ["--threads", "0"], f"argument --threads: 0 {POSITIVE}"),
    ("lanczos", ["--shard", "MISSING"], "argument --shard: MISSING: no such file"),
    ("measure_memory", ["--sts", "NO_DIRECTORY"], "argument --sts: NO_DIRECTORY: no such"),
    ("measure_memory", ["--sts", ".", "--cores", "0"], f"argument --cores: 0 {POSITIVE}"),
    ("measures", ["--sizes", "1000", "0"], f"argument --sizes: 0 {POSITIVE}"),
    ("measures", ["--dim", "0"], f"argument --dim: 0 {POSITIVE}"),
    ("neighbours", ["--devices", "cpu", "tpu"], "argument --devices: tpu is not a device"),
    ("neighbours", ["--sizes", "-5"], f"argument --sizes: -5 {POSITIVE}"),
    ("neighbours", ["--shard", "MISSING"], "argument --shard: MISSING: no such file"),
    ("neighbours", ["--align-method", "lsh"], "argument --align-method: invalid choice: 'lsh'"),
    ("geometry_memory", ["NO_DIRECTORY"], "argument runs: NO_DIRECTORY: no such"),
    ("geometry_memory", [".", "--k", "0"], f"argument --k: 0 {POSITIVE}"),
    ("newcomer", ["--out", "FILE"], "argument --out: FILE is a file"),
    ("scan_rates", ["MISSING", "--label", "x"], "argument shard: MISSING: no such file"),
    ("scan_rates", ["FILE", "--label", "x", "--queries", "0"], f"argument --queries: 0 {POSITIVE}"),
]


def _named(text: str, places: dict[str, str]) -> str:
    for name, path in places.items():
        text = text.replace(name, path)
    return text


def test_each_bench_refuses_bad_arguments_in_one_line_before_any_work(places, tmp_path, capsys):
    before = sorted(tmp_path.iterdir())
    for bench, argv, said in REFUSED:
        module = _bench(bench)
        with pytest.raises(SystemExit) as exited:
            module.parse_arguments([_named(argument, places) for argument in argv])
        (line,) = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
        assert exited.value.code == 2 and _named(said, places) in line, (bench, argv, line)
    assert sorted(tmp_path.iterdir()) == before  # nothing made, the file under --out kept
    assert Path(places["FILE"]).read_text() == "kept\n"
    assert {bench for bench, _, _ in REFUSED} >= set(BENCHES)


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this torch has MPS")
def test_a_bench_device_this_torch_lacks_is_refused_in_the_words_the_workflow_uses(capsys):
    module = _bench("extraction")
    with pytest.raises(SystemExit) as exited:
        module.parse_arguments(["--device", "mps"])
    line = capsys.readouterr().err.splitlines()[-1]
    assert exited.value.code == 2
    assert line.endswith(
        "argument --device: mps asked for, but torch sees no mps device here; use auto (a "
        "GPU where there is one) or cpu"
    )
    assert module.parse_arguments(["--device", "auto"]).device in ("cpu", "cuda")


def test_each_bench_checks_its_arguments_before_anything_else():
    """Each bench's main() parses its command line (`parse_arguments`) as its first
    statement, so that the refusals above come before any model loads or file is
    written."""
    for bench in BENCHES:
        module = _bench(bench)
        body = ast.parse(inspect.getsource(module.main)).body[0].body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        first = body[0]
        assert isinstance(first, ast.Assign) and isinstance(first.value, ast.Call), bench
        assert ast.unparse(first.value) == "parse_arguments()", bench
