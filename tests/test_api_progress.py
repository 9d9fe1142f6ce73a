"""What the API's long calls tell while they run (`api.progress`): a start line stating the
cost, a done line, the lines between them, and a tqdm bar only where asked for."""

from __future__ import annotations

import io
import logging

import numpy as np
import pytest

import contextuality
from contextuality.api import AlignmentSettings, GeometrySettings, MeasureSettings
from contextuality.api.progress import Told, wants_bar

SETTINGS = GeometrySettings(
    seed=0,
    confidence=0.9,
    sample_size=None,
    alignment=AlignmentSettings(k=3, permutations=2, bootstrap=3),
)


def _layers(n_sentences: int = 20, per_sentence: int = 4, width: int = 5):
    rng = np.random.default_rng(0)
    sentences = np.repeat(np.arange(n_sentences), per_sentence)
    layers = {layer: rng.normal(size=(len(sentences), width)) for layer in range(3)}
    return layers, sentences


def _lines(caplog, logger: str) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == logger]


def test_an_alignment_states_its_cost_and_its_end_and_shows_no_bar_unasked(caplog, capsys):
    """Three layers: 3 pairs × (1 + 2 + 3) computations × 80 rows on both sets of rows, a
    start line saying so, a done line, and nothing on stderr with ``progress=False``."""
    layers, sentences = _layers()
    with caplog.at_level(logging.INFO, logger="contextuality.api.geometry"):
        contextuality.alignment(layers, sentences=sentences, settings=SETTINGS, progress=False)
    lines = _lines(caplog, "contextuality.api.geometry")
    assert lines[0] == (
        "alignment of left's 3 layers: 3 pairs of layers × 6 computations (the value, "
        "2 permutations, 3 bootstrap draws) × 80 rows, on all and position>0 occurrences"
    )
    assert lines[-1].startswith("alignment of left's 3 layers: done in ")
    assert "|" not in capsys.readouterr().err


def test_a_bar_counts_every_null_and_draw_where_asked_for(capsys):
    """``progress=True``: a tqdm bar on stderr that ends at the nulls and draws of both
    sets of rows and of the word baselines, aligned at once (3 × (2 + 3))."""
    layers, sentences = _layers()
    words = np.array(["a", "b", "c", "d"])[np.arange(80) % 4]
    contextuality.alignment(
        layers, sentences=sentences, words=words, settings=SETTINGS, progress=True
    )
    err = capsys.readouterr().err
    assert "15/15" in err and "draws" in err


def test_between_models_the_cost_counts_every_pair_of_layers(caplog):
    layers, sentences = _layers()
    with caplog.at_level(logging.INFO, logger="contextuality.api.geometry"):
        contextuality.alignment(
            layers, {0: layers[0]}, sentences=sentences, settings=SETTINGS, progress=False
        )
    lines = _lines(caplog, "contextuality.api.geometry")
    assert lines[0].startswith("alignment of left and right: 3 pairs of layers × 6 ")
    assert lines[-1].startswith("alignment of left and right: done in ")


def test_intrinsic_dimension_and_measure_layer_state_their_cost_and_end(caplog, capsys):
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(300, 4))
    words = np.array([f"w{k}" for k in range(10)])[np.arange(300) % 10]
    sentences = np.repeat(np.arange(30), 10)
    with caplog.at_level(logging.INFO, logger="contextuality.api"):
        contextuality.intrinsic_dimension(vectors, progress=False)
        contextuality.measure_layer(
            vectors,
            words,
            sentences,
            settings=MeasureSettings(baseline_sample_size=20, bootstrap_resamples=10),
            progress=False,
        )
    dimension = _lines(caplog, "contextuality.api.geometry")
    assert dimension[0] == (
        "arrays layer 0: intrinsic dimension: 300 rows × 4 dimensions, 64 nearest "
        "neighbours of each"
    )
    assert any(
        line.startswith("arrays layer 0: intrinsic dimension: done in ") for line in dimension
    )
    measures = _lines(caplog, "contextuality.api.layer")
    assert measures[0] == (
        "arrays layer 0 (none): measures: 300 rows × 4 dimensions, 10 words measured, "
        "10 bootstrap resamples"
    )
    assert measures[-1].startswith("arrays layer 0 (none): measures: done in ")
    assert "|" not in capsys.readouterr().err


def test_a_call_that_fails_says_so(caplog):
    """The end line of a call that raised names the error, not a done."""
    log = logging.getLogger("test_api_progress")
    with (
        caplog.at_level(logging.INFO, logger=log.name),
        pytest.raises(ValueError),
        Told(log, "work", "a cost", progress=False),
    ):
        raise ValueError("no")
    lines = _lines(caplog, log.name)
    assert len(lines) == 2 and lines[0] == "work: a cost"
    assert lines[1].startswith("work: stopped after ") and lines[1].endswith("(ValueError)")


def test_the_line_between_says_the_count_done_or_the_stage():
    """`Told.beat`, the line logged every 15 s: the draws done of all and the time left,
    or, for a call that counts no draws, the stage it is at."""
    told = Told(logging.getLogger("test"), "alignment", "cost", 10, "draws", progress=False)
    assert told.beat().startswith("alignment: 0 of 10 draws, ")
    told.update(3)
    assert not told.beat().endswith(" left")  # no rate from the first alone
    told.update(1)
    line = told.beat()
    assert line.startswith("alignment: 4 of 10 draws, ") and line.endswith(" left")
    staged = Told(logging.getLogger("test"), "dimension", "cost", progress=False)
    staged.stage("nearest neighbours")
    assert staged.beat().startswith("dimension: nearest neighbours, ")


def test_the_time_left_is_at_the_rate_of_the_draws_after_the_first(monkeypatch):
    """An hour of searches before the first draw, then a draw every 10 s: until the first
    the line says what comes before it; after the second, 8 draws left are 80 s, not the
    hour's share of each draw."""
    clock = [0.0]
    monkeypatch.setattr("contextuality.api.progress.time.monotonic", lambda: clock[0])
    told = Told(
        logging.getLogger("test"), "alignment", "cost", 10, "draws", False, before="searching"
    )
    clock[0] = 1800.0
    assert told.beat() == "alignment: 0 of 10 draws, 30 min 0 s (searching)"
    clock[0] = 3600.0
    told.update()
    assert told.beat() == "alignment: 1 of 10 draws, 1 h 0 min"
    clock[0] = 3610.0
    told.update()
    clock[0] = 3615.0
    assert told.beat() == "alignment: 2 of 10 draws, 1 h 0 min, about 1 min 20 s left"


def test_a_pause_between_draws_does_not_stretch_the_time_left(monkeypatch):
    """Draws every 10 s, then 30 minutes of searches for the next set of rows, then draws
    every 12 s: the time left is at the median draw (10 draws left at 12 s: 2 min), not
    at the mean, which the half hour makes 3.5 min a draw (35 min)."""
    clock = [0.0]
    monkeypatch.setattr("contextuality.api.progress.time.monotonic", lambda: clock[0])
    told = Told(logging.getLogger("test"), "alignment", "cost", 20, "draws", False)
    for seconds in [10.0] * 5 + [1800.0] + [12.0] * 4:
        clock[0] += seconds
        told.update()
    assert told.beat() == "alignment: 10 of 20 draws, 31 min 38 s, about 2 min 0 s left"


def test_a_resumed_call_times_the_draws_it_computes_not_those_it_reads(monkeypatch):
    """A call resumed with 36 of 150 draws kept by a stopped run reads them in a second,
    then computes a draw a minute: the line counts the 36 done and says they were read,
    and the time left is 112 minutes at the computed draws' rate, not the half minute
    the reads' milliseconds would give."""
    clock = [0.0]
    monkeypatch.setattr("contextuality.api.progress.time.monotonic", lambda: clock[0])
    told = Told(logging.getLogger("test"), "alignment", "cost", 150, "draws", False)
    for _ in range(36):
        clock[0] += 1 / 36
        told.update(read=True)
    assert told.beat() == "alignment: 36 of 150 draws, 1.0 s (36 read from a stopped run)"
    for _ in range(2):
        clock[0] += 60.0
        told.update()
    assert told.beat() == (
        "alignment: 38 of 150 draws, 2 min 1 s (36 read from a stopped run), about 1 h 52 min left"
    )


def test_a_bar_by_default_only_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delitem(__import__("sys").modules, "IPython", raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not wants_bar(None)
    assert wants_bar(True) and not wants_bar(False)
    monkeypatch.setattr("sys.stderr", Terminal())
    assert wants_bar(None) and not wants_bar(False)
