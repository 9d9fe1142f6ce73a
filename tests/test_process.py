"""How a job's script and the ``contextuality`` command end: memory run out, even while
numpy, torch or h5py load, is one line naming the job and the setting that bounds its
memory, never a traceback or an empty log."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from contextuality.jobs.process import MEMORY_BOUNDS, memory_bound, run_step
from contextuality.workflow import extraction_rule

ROOT = Path(__file__).resolve().parents[1]
# An address space (bytes) in which the interpreter starts but numpy, h5py and torch
# cannot all be mapped; OpenBLAS kept to one thread, as Snakemake runs a one-thread job.
TIGHT_MEMORY = 250_000_000


def _under_tight_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (TIGHT_MEMORY, TIGHT_MEMORY))


def _run_tight(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        command,
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_under_tight_memory,
    )


def test_a_job_whose_imports_run_out_of_memory_says_so_in_its_log(tmp_path):
    """The measure job's own script, run as Snakemake runs it, in an address space too
    small for its libraries: exit status 1, and its log's one error line names the job and
    what bounds its memory (before, the log stayed empty and the console showed an
    ImportError's traceback)."""
    log = tmp_path / "measure.log"
    script = ROOT / "workflow" / "scripts" / "measure_layer.py"
    runner = (
        "import runpy, types\n"
        f"job = types.SimpleNamespace(log=[{str(log)!r}], threads=1, rule='measure_layer',"
        " wildcards={})\n"
        f"runpy.run_path({str(script)!r}, init_globals={{'snakemake': job}})\n"
    )
    result = _run_tight([sys.executable, "-c", runner], tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]
    text = log.read_text()
    assert "Traceback" not in text + result.stderr, text + result.stderr
    last = text.strip().splitlines()[-1]
    assert last.startswith("error: out of memory in measure_layer: ")
    assert "rows × width" in last


def test_the_command_running_out_of_memory_as_it_loads_is_one_line(tmp_path):
    result = _run_tight(
        [
            sys.executable,
            "-c",
            "import sys; from contextuality.cli import main; sys.exit(main())",
            "layer-geometry",
            "layer_0.h5",
            "--index",
            "index",
            "-o",
            "out",
        ],
        tmp_path,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith(
        "contextuality: error: out of memory in contextuality layer-geometry: "
    )
    assert "--sample-size" in lines[0] and "a larger machine" in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("job", "failure", "named"),
    [
        ("layer_dimension", MemoryError(), "geometry.sample_size"),
        ("layer_alignment", MemoryError(), "geometry.sample_size"),
        ("extract_bert", MemoryError(), "models.bert.token_budget"),
        ("stream_bert", OSError(12, "Cannot allocate memory"), "models.bert.streaming"),
        ("measures_table", ImportError("x.so: failed to map segment from shared object"), ""),
    ],
)
def test_memory_run_out_in_a_step_ends_its_job_in_one_line(
    tmp_path, monkeypatch, job, failure, named
):
    log = tmp_path / "job.log"

    def step() -> None:
        raise failure

    monkeypatch.setattr(sys, "stderr", sys.stderr)  # run_step points stderr at the log
    with pytest.raises(SystemExit) as ended:
        run_step(log, step, job=job)
    assert ended.value.code == 1
    errors = [line for line in log.read_text().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: out of memory in {job}: ")
    assert named in errors[0]
    assert ("bounded by" in errors[0]) == bool(named)


def test_a_defect_still_shows_its_traceback(tmp_path, monkeypatch):
    """Only what a user can reach becomes one line: an error of this package's own code
    keeps the traceback its report needs."""
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(KeyError):
        run_step(tmp_path / "job.log", lambda: {}["missing"], job="measure_layer")


def test_a_job_s_log_holds_no_line_of_faiss_s_loader(tmp_path):
    """Loaded in a job, FAISS's loader says nothing at INFO level (which libraries it
    tried, one of them a SIMD build it does not ship) in the job's log, which keeps its
    own lines."""
    pytest.importorskip("faiss")
    log = tmp_path / "job.log"
    program = (
        "import importlib, sys\n"
        "from contextuality.jobs.process import run_step\n"
        "run_step(sys.argv[1], lambda: importlib.import_module('faiss'))\n"
    )
    subprocess.run([sys.executable, "-c", program, str(log)], check=True, cwd=tmp_path)
    lines = log.read_text().splitlines()
    assert any(line.endswith(f"INFO contextuality {version('contextuality')}") for line in lines)
    assert not [line for line in lines if "faiss" in line.lower()], lines


def test_every_memory_bound_names_a_rule_of_the_workflow_or_a_command():
    """A bound keyed by a name that no rule or command has would never be shown: each is a
    rule of workflow/rules (or the prefix of a model's rule), or a command of the CLI."""
    from contextuality.cli.commands import build_parser

    rules_text = "\n".join(path.read_text() for path in (ROOT / "workflow/rules").glob("*.smk"))
    rules = set(re.findall(r"^rule (\w+):", rules_text, flags=re.MULTILINE))
    config = {"models": {"m": {}}}
    prefixes = {extraction_rule(config, "m").removesuffix("m")}
    config["models"]["m"]["streaming"] = True
    prefixes.add(extraction_rule(config, "m").removesuffix("m"))
    if 'f"merge_stream_{model}"' in rules_text:
        prefixes.add("merge_stream_")
    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)
    for name in MEMORY_BOUNDS:
        assert name in rules | prefixes | commands, name
    assert memory_bound("contextuality extract").startswith("--token-budget")
    assert memory_bound("extract_minilm").startswith("models.minilm.token_budget")
    assert memory_bound("figures") == ""


def test_the_command_and_the_job_runner_load_no_numerical_library():
    """What catches a failed import must not need one: importing the entry point and the
    job runner loads neither numpy nor torch nor h5py."""
    code = (
        "import sys, contextuality.cli, contextuality.jobs.process\n"
        "print(sorted(m for m in ('numpy', 'torch', 'h5py', 'pandas') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
