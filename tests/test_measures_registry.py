"""The measure registry: every summary row comes from one record, and each row's draws are
its own (adding or removing a measure changes no other number)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contextuality.corpus.index import IndexSettings, build_occurrence_index
from contextuality.corpus.words import split_words
from contextuality.measures import degeneration, registry
from contextuality.measures.analysis import measure_layer
from contextuality.measures.record import BASELINE_FAMILIES, Measure
from contextuality.measures.settings import MeasureSettings

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _layer(seed: int = 2):
    """Random sentences over a few words, vectors with a direction per word, a common
    offset and a huge first-word vector (as decoders give)."""
    rng = np.random.default_rng(seed)
    vocabulary = ["the", "of", "and", "bank", "river", "money", "dog", "cat", "run"]
    sentences = [" ".join(rng.choice(vocabulary, size=rng.integers(2, 8))) for _ in range(150)]
    index = build_occurrence_index(
        [split_words(sentence) for sentence in sentences], IndexSettings(min_contexts=5)
    )
    occurrences = index.occurrences
    direction = rng.normal(size=(len(index.vocab), 10))
    vectors = direction[occurrences["word_id"].to_numpy()] + rng.normal(size=(len(occurrences), 10))
    vectors[occurrences["position"].to_numpy() == 0] *= 30
    return index, vectors + 0.5


SETTINGS = MeasureSettings(bootstrap_resamples=50, sample_replicates=4, isotropy_samples=3)


def test_records_are_well_formed():
    rows = registry.row_names()
    assert len(rows) == len(set(rows)), "a summary row belongs to one record"
    names = [record.name for record in registry.MEASURES]
    assert len(names) == len(set(names))
    for record in registry.MEASURES:
        assert record.family is None or record.family in BASELINE_FAMILIES, record.name
        assert (record.table is None) == (record.column is None), record.name
    with pytest.raises(ValueError, match="interval"):
        Measure(name="x", rows=("x",), caption="X.", interval="jackknife", compute=lambda layer: {})
    assert all(
        record.sampled == (record.interval in ("sample spread", "plateau range"))
        for record in registry.MEASURES
    )
    with pytest.raises(ValueError, match="compute"):
        Measure(name="x", rows=("x",), caption="X.", step="degeneration", compute=lambda layer: {})


def test_a_layer_writes_exactly_the_rows_of_its_records():
    index, vectors = _layer()
    with_positions = measure_layer(
        vectors.copy(), index.occurrences, index.vocab, SETTINGS, positions=True
    )
    assert list(with_positions.summary["measures"]) == registry.row_names("measure_layer")
    without = measure_layer(vectors, index.occurrences, index.vocab, SETTINGS)
    expected = [
        row
        for record in registry.MEASURES
        if record.step == "measure_layer" and not record.needs_positions
        for row in record.rows
    ]
    assert list(without.summary["measures"]) == expected
    # each row with an interval says the kind its record names (an exact row, none)
    for record in registry.MEASURES:
        for row in record.rows:
            values = with_positions.summary["measures"].get(row, {})
            expected = record.interval if "raw_low" in values else "none"
            assert values.get("interval", "none") == expected, row
    # each word mean's adjusted column, by its own family's baseline
    for column, family in registry.word_columns().items():
        measure = next(record for record in registry.MEASURES if record.column == column)
        adjusted = with_positions.words[column] - with_positions.words[f"{column}_adjusted"]
        baseline = with_positions.summary["measures"][measure.rows[0]]["baseline"]
        assert np.allclose(adjusted.dropna(), baseline, atol=1e-12), (column, family)


def test_the_other_steps_write_the_rows_their_records_name():
    words = pd.DataFrame(
        {
            "count": [1, 2, 3, 4],
            "occurrence_norm": [1.0, 2.0, 3.0, 4.5],
            "static_norm": [4.0, 3.0, 2.0, 1.0],
            "static_knn_distance": [1.0, 1.5, 1.2, 2.0],
            "mean_direction_cosine": [0.1, 0.2, 0.3, 0.5],
        }
    )
    correlations = degeneration.frequency_correlations(words)
    assert list(correlations) == registry.row_names("degeneration")


def _same(found: dict, expected: dict) -> bool:
    """Two summaries' rows equal to the last bit, a NaN equal to a NaN (α-ReQ of a layer
    narrower than its ranks)."""
    return json.dumps(found, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_removing_a_measure_changes_no_other_number(monkeypatch):
    """Each row draws from its own stream: without a record, every other row, interval
    included, is the same number to the last bit."""
    index, vectors = _layer()
    every = measure_layer(vectors.copy(), index.occurrences, index.vocab, SETTINGS, positions=True)
    dropped = ("selfsim[paper]", "mev", "isotropy")
    kept = tuple(record for record in registry.MEASURES if record.name not in dropped)
    monkeypatch.setattr(registry, "MEASURES", kept)
    fewer = measure_layer(vectors.copy(), index.occurrences, index.vocab, SETTINGS, positions=True)
    expected = {
        row: values
        for row, values in every.summary["measures"].items()
        if row not in {"selfsim[paper]", "mev", "isoscore", "effective_rank", "partition_ratio"}
    }
    assert _same(fewer.summary["measures"], expected)


def test_leaving_out_the_optional_measures_drops_their_rows_alone():
    """`measures.leave_out` drops the rows of the records it names, every other row the
    same number to the last bit, and the summary records what it left out."""
    index, vectors = _layer()
    every = measure_layer(vectors.copy(), index.occurrences, index.vocab, SETTINGS)
    lean_settings = dataclasses.replace(SETTINGS, leave_out=registry.OPTIONAL)
    lean = measure_layer(vectors, index.occurrences, index.vocab, lean_settings)
    left_out = registry.left_out_rows(registry.OPTIONAL)
    optional = [record for record in registry.MEASURES if record.optional]
    assert optional and left_out == {row for record in optional for row in record.rows}
    assert left_out < set(every.summary["measures"])
    expected = {row: v for row, v in every.summary["measures"].items() if row not in left_out}
    assert _same(lean.summary["measures"], expected)
    assert tuple(lean.summary["leave_out"]) == registry.OPTIONAL
    every_optional = dataclasses.replace(SETTINGS, leave_out=(registry.EVERY_OPTIONAL,))
    named_once = measure_layer(vectors, index.occurrences, index.vocab, every_optional)
    assert _same(named_once.summary["measures"], expected)


def test_streams_differ_by_row_and_follow_the_seed():
    from contextuality.configuration.random_streams import measure_generator

    draws = {
        (seed, row): measure_generator(seed, row).integers(0, 2**62)
        for seed in (0, 1)
        for row in ("selfsim", "intrasim", "selfsim[stopword]")
    }
    assert len(set(draws.values())) == len(draws)
    assert measure_generator(0, "selfsim").integers(0, 2**62) == draws[(0, "selfsim")]


def test_figures_draw_registered_rows():
    from contextuality.figures.specs import DIMENSION_FIGURE, FIGURES

    rows = set(registry.row_names())
    for spec in (*FIGURES.values(), DIMENSION_FIGURE):
        for series in spec.series:
            assert series.measure in rows, (spec.name, series.measure)


def test_the_worked_example_of_docs_architecture_adds_a_measure(monkeypatch):
    """The first measure docs/architecture.md shows (the module with its record, its test)
    runs as written, and its row leaves every other number as it was."""
    import types

    text = (DOCS / "architecture.md").read_text()
    example = text[text.index("### Worked example: a measure") :].split("\n### ")[0]
    module_code, test_code = re.findall(r"```python\n(.*?)```", example, re.S)
    norms = types.ModuleType("norms")
    exec(module_code, norms.__dict__)
    index, vectors = _layer()
    before = measure_layer(vectors.copy(), index.occurrences, index.vocab, SETTINGS)
    monkeypatch.setattr(registry, "MEASURES", (*registry.MEASURES, *norms.MEASURES))
    test_module = types.ModuleType("test_norms")
    exec(test_code, test_module.__dict__)
    test_module.test_norm_is_the_mean_row_length()
    after = measure_layer(vectors.copy(), index.occurrences, index.vocab, SETTINGS)
    assert after.summary["measures"].pop("norm")["n"] == len(vectors)
    assert _same(after.summary["measures"], before.summary["measures"])
    assert "norm" in registry.row_names() and "norm" in registry.not_streamed()


def test_a_layer_summary_records_every_setting_that_changes_a_number():
    index, vectors = _layer()
    summary = measure_layer(vectors, index.occurrences, index.vocab, SETTINGS).summary
    for name in (field.name for field in dataclasses.fields(MeasureSettings)):
        assert summary[name] == getattr(SETTINGS, name), name


def test_each_row_of_the_measures_table_names_its_interval():
    """A bootstrapped mean, a sampled estimate, a plateau's range and an exact value:
    `interval` says which, and an intrinsic dimension names its scales; a row whose
    interval is empty says none."""
    from test_provenance_json import layer_summary

    from contextuality.measures.summary import (
        Baseline,
        mean_summary,
        measures_table,
        sampled_summary,
    )

    rng = np.random.default_rng(0)
    mean = mean_summary(pd.Series(rng.normal(size=50)), Baseline(0.1), 100, 0.95, rng)
    plateau = {"raw": 8.0, "raw_low": 7.8, "raw_high": 8.3, "n": 900}
    summary = layer_summary(
        {
            "selfsim": mean,
            "isoscore*": sampled_summary(np.array([0.3, 0.35, 0.4]), 200, 0.95),
            "intrinsic_dimension[twonn]": plateau
            | {"interval": "plateau range", "scale": "n=2,500–10,000"},
            "anisotropy": {"raw": 0.3, "n": 10},
            "intrinsic_dimension[gride]": sampled_summary(np.array([np.nan, 2.0]), 5, 0.95),
        }
    )
    table = measures_table([summary]).set_index("measure")
    assert table["interval"]["selfsim"] == "bootstrap"
    assert table["interval"]["isoscore*"] == "sample spread"
    assert table["interval"]["intrinsic_dimension[twonn]"] == "plateau range"
    assert table["scale"]["intrinsic_dimension[twonn]"] == "n=2,500–10,000"
    assert table["interval"]["anisotropy"] == "none"
    assert table["interval"]["intrinsic_dimension[gride]"] == "none"  # no finite interval


def test_each_row_has_the_axis_label_its_record_gives():
    """A figure's axis names a row as its record does, ``adjusted`` before it for the
    adjusted value; a row no record writes has none, and a record's labels match its rows."""
    assert registry.axis_label("selfsim", "adjusted") == "adjusted SelfSim"
    assert registry.axis_label("anisotropy[paper]") == "anisotropy, the paper's estimator"
    labels = [registry.axis_label(row) for row in registry.row_names()]
    assert len(labels) == len(set(labels)), "two rows that a reader cannot tell apart"
    with pytest.raises(KeyError, match="no measure writes the row nothing"):
        registry.axis_label("nothing")
    with pytest.raises(ValueError, match="a label for each row"):
        Measure(name="x", rows=("x", "y"), caption="X.", labels=("x",), compute=lambda layer: {})
