"""An alignment stopped part-way takes up where it stopped: what it had found is kept on
disk under a key of all it rests on (a layer's neighbours under their search's alone), and
the table of a resumed run is the table of a run never stopped."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from contextuality.geometry import alignment as alignment_module
from contextuality.geometry import resume
from contextuality.geometry.alignment import (
    AlignmentSettings,
    SampledLayers,
    SampleRows,
    alignment_between,
)
from contextuality.geometry.neighbours import cosine_neighbours
from contextuality.geometry.resume import (
    PACKAGE,
    SEARCH_SOURCES,
    SEARCHES,
    SECONDS,
    SOURCES,
    ResumeStore,
    code_digest,
    digest,
    resumable,
)

SETTINGS = AlignmentSettings(k=4, permutations=5, bootstrap=6, baselines=())


def _layers(rng: np.random.Generator, n: int = 80) -> SampledLayers:
    signal = rng.normal(size=(n, 3))
    vectors = {
        layer: (signal @ rng.normal(size=(3, 6)) + rng.normal(scale=1 + layer, size=(n, 6)))
        for layer in range(3)
    }
    return SampledLayers({layer: v.astype(np.float16) for layer, v in vectors.items()}, {})


def _sample(n: int = 80) -> SampleRows:
    positions = np.tile(np.arange(8), n // 8)
    return SampleRows(later=positions > 0, sentences=np.repeat(np.arange(n // 8), 8), sampled=False)


class _Stopped(Exception):
    pass


def _stop_after(count: int | None = None, told: list[bool] | None = None):
    """A progress callback that stops the run at its `count`-th call (None: never),
    keeping in `told` whether each resample was read."""
    calls = [] if told is None else told

    def progress(*, read: bool) -> None:
        calls.append(read)
        if len(calls) == count:
            raise _Stopped

    return progress


def _counting(monkeypatch) -> list[int]:
    computed = []
    original = alignment_module.measure_grids

    def measure_grids(*arguments, **keywords):
        computed.append(1)
        return original(*arguments, **keywords)

    monkeypatch.setattr(alignment_module, "measure_grids", measure_grids)
    return computed


def test_a_stopped_alignment_resumes_to_the_table_of_one_never_stopped(tmp_path, monkeypatch):
    """Stopped after 14 of the 22 resamples (11 for each set of occurrences: 3 nulls into
    the second), a second run computes only the 8 left, searches nothing again, tells
    its progress the 14 read (not computed: no rate of them) and writes the table that a
    run without a store writes."""
    layers = _layers(np.random.default_rng(0))
    arguments = (("m", layers), None, _sample(), 7, 0.95, SETTINGS)
    fresh = alignment_between(*arguments).table
    with pytest.raises(_Stopped):
        alignment_between(*arguments, progress=_stop_after(14), resume_in=tmp_path)
    (store,) = [path for path in tmp_path.iterdir() if path.name != SEARCHES]
    kept = sorted(path.name for path in (store / "position_0").glob("*.npz"))
    assert kept == sorted(["values.npz", *(f"null-{index}.npz" for index in range(3))])
    assert len(list((tmp_path / SEARCHES).glob("*.npz"))) == 3 * 2  # each layer, both sets
    computed = _counting(monkeypatch)
    searched = []
    monkeypatch.setattr(alignment_module, "layer_neighbours", lambda *a: searched.append(1))
    told: list[bool] = []
    resumed = alignment_between(
        *arguments, progress=_stop_after(told=told), resume_in=tmp_path
    ).table
    assert len(computed) == 22 - 14 and not searched
    assert told == [True] * 14 + [False] * (22 - 14)
    pd.testing.assert_frame_equal(resumed, fresh)


def test_a_change_in_what_it_rests_on_starts_afresh(tmp_path, monkeypatch):
    """Another seed, one vector changed, another setting: a key of its own, nothing read."""
    rng = np.random.default_rng(1)
    layers = _layers(rng)
    alignment_between(("m", layers), None, _sample(), 7, 0.95, SETTINGS, resume_in=tmp_path)
    changed = SampledLayers({**layers.vectors, 2: layers.vectors[2].copy()}, {})
    changed.vectors[2][5, 1] += 1
    others = [
        (("m", changed), None, _sample(), 7, 0.95, SETTINGS),
        (("m", layers), None, _sample(), 8, 0.95, SETTINGS),
        (("m", layers), None, _sample(), 7, 0.95, AlignmentSettings(k=5, permutations=5)),
    ]
    for arguments in others:
        computed = _counting(monkeypatch)
        alignment_between(*arguments, occurrences=("all",), resume_in=tmp_path)
        assert len(computed) == 1 + arguments[-1].permutations + arguments[-1].bootstrap
    assert len([path for path in tmp_path.iterdir() if path.name != SEARCHES]) == 4


def _searches(monkeypatch) -> list[int]:
    searched = []
    original = alignment_module.layer_neighbours

    def layer_neighbours(*arguments):
        searched.append(1)
        return original(*arguments)

    monkeypatch.setattr(alignment_module, "layer_neighbours", layer_neighbours)
    return searched


def test_a_change_in_the_measures_keeps_the_searches_a_change_in_the_search_does_not(
    tmp_path, monkeypatch, caplog
):
    """Another alignment key (a change in the code of the measures, `SOURCES`) reads every
    layer's neighbours its search found, and computes its values and resamples afresh to
    the table of a run without a store; a change in the search's code
    (`SEARCH_SOURCES`) searches every layer again."""
    layers = _layers(np.random.default_rng(3))
    arguments = (("m", layers), None, _sample(), 7, 0.95, SETTINGS, "none", ("all",))
    fresh = alignment_between(*arguments).table
    alignment_between(*arguments, resume_in=tmp_path)
    monkeypatch.setattr(resume, "SOURCES", tuple(set(SOURCES) - {"rows.py"}))
    searched, computed = _searches(monkeypatch), _counting(monkeypatch)
    with caplog.at_level("INFO", logger=alignment_module.__name__):
        measured = alignment_between(*arguments, resume_in=tmp_path).table
    assert not searched and len(computed) == 1 + SETTINGS.permutations + SETTINGS.bootstrap
    assert [record.getMessage() for record in caplog.records] == [
        f"layer {layer} ({layer + 1} of 3): neighbours of 80 rows kept by their search"
        for layer in range(3)
    ]
    pd.testing.assert_frame_equal(measured, fresh)
    monkeypatch.setattr(resume, "SEARCH_SOURCES", SEARCH_SOURCES[1:])
    caplog.clear()
    with caplog.at_level("INFO", logger=alignment_module.__name__):
        alignment_between(*arguments, resume_in=tmp_path)
    assert len(searched) == len(layers.vectors)
    searched_lines = [
        record.getMessage()
        for record in caplog.records
        if "rows searched in" in record.getMessage()
    ]
    assert [line.split(" in ")[0] for line in searched_lines] == [
        f"layer {layer} ({layer + 1} of 3): neighbours of 80 rows searched" for layer in range(3)
    ]


@pytest.mark.parametrize("kept", [True, False], ids=["in-a-folder", "without-one"])
def test_the_word_baselines_read_the_searches_of_the_layer_pairs(tmp_path, monkeypatch, kept):
    """The workflow's alignment within a model searches each layer once for each set of
    occurrences, and each word baseline once: the baselines, on every occurrence, read the
    layers' neighbours the pairs of layers found there. Without a folder (the API's
    default) the same, in a temporary folder removed after the call, to the same table."""
    import tempfile

    from contextuality.api import GeometrySettings
    from contextuality.api.geometry import within_model_alignment

    layers = _layers(np.random.default_rng(4))
    words = np.arange(80) % 9
    positions = np.arange(80) % 8
    sample = SampleRows(positions > 0, np.repeat(np.arange(10), 8), False, words, positions)
    settings = GeometrySettings(
        seed=2, confidence=0.9, sample_size=None, alignment=AlignmentSettings(k=4)
    )
    arguments = ("m", layers, sample, settings, "none")
    kept_in = tmp_path / "kept"
    searched = _searches(monkeypatch)
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    table = within_model_alignment(*arguments, resume_in=kept_in if kept else None)
    assert {"word_identity", "word_position"} <= set(table["model_b"])
    assert len(searched) == 2 * len(layers.vectors) + len(settings.alignment.baselines)
    assert kept_in.exists() == kept and not any(temporary.iterdir())
    if not kept:
        pd.testing.assert_frame_equal(table, within_model_alignment(*arguments, resume_in=kept_in))


def test_a_resumed_job_counts_the_parts_and_seconds_it_read_of_the_stopped_run(tmp_path):
    """A job stopped part-way and run again reads every part the first kept, and counts
    them and the seconds each took to compute there; what a job reads of parts it wrote
    itself (the word baselines' neighbours) is not counted; the folder goes once the
    output is written."""
    from contextuality.api import GeometrySettings
    from contextuality.api.geometry import within_model_alignment

    layers = _layers(np.random.default_rng(6))
    arguments = (("m", layers), None, _sample(), 7, 0.95, SETTINGS)
    output = tmp_path / "alignment.parquet"
    with pytest.raises(_Stopped), resumable(output) as folder:
        alignment_between(*arguments, progress=_stop_after(14), **folder.keywords)
    kept = list(tmp_path.glob("alignment.parquet.resume/**/*.npz"))
    took = []
    for path in kept:
        with np.load(path) as stored:
            took.append(float(stored[SECONDS]))
    assert len(kept) == 3 * 2 + 1 + 11 + 1 + 3 and all(np.isfinite(took)) and min(took) > 0
    with resumable(output) as again:
        alignment_between(*arguments, **again.keywords)
    assert again.resumed.parts == len(kept)
    assert again.resumed.seconds == pytest.approx(sum(took))
    assert not output.with_name("alignment.parquet.resume").exists()

    positions = np.arange(80) % 8
    words = SampleRows(positions > 0, np.repeat(np.arange(10), 8), False, positions, positions)
    settings = GeometrySettings(seed=2, confidence=0.9, sample_size=None, alignment=SETTINGS)
    with resumable(output) as fresh:
        within_model_alignment("m", layers, words, settings, "none", **fresh.keywords)
    assert (fresh.resumed.parts, fresh.resumed.seconds) == (0, 0.0)


def test_the_store_round_trips_neighbours_and_grids(tmp_path):
    rows = np.random.default_rng(2).normal(size=(30, 4))
    found = cosine_neighbours(rows, 3)
    store = ResumeStore(tmp_path / "key", tmp_path / SEARCHES).scoped("all")
    assert store.neighbours(store.searched([rows, 3])) is None and store.grids("g") is None
    store.keep_neighbours(store.searched([rows, 3]), found, 0.5)
    store.keep_grids("g", {"cka": np.eye(2), "mutual_knn": np.full((2, 2), np.nan)}, 0.25)
    for other in ([rows, 4], [rows[1:], 3]):
        assert store.neighbours(store.searched(other)) is None
    again = store.neighbours(store.searched([rows, 3]))
    np.testing.assert_array_equal(again.indices, found.indices)
    np.testing.assert_array_equal(again.cosines, found.cosines)
    assert again.recall == found.recall
    grids = store.grids("g")
    assert set(grids) == {"cka", "mutual_knn"}  # the seconds apart
    np.testing.assert_array_equal(grids["cka"], np.eye(2))
    assert np.isnan(grids["mutual_knn"]).all()
    assert ResumeStore(tmp_path / "key", tmp_path / SEARCHES).count() == 1
    assert not [path for path in (tmp_path / "key" / "all").iterdir() if "partial" in path.name]


def test_the_key_tells_arrays_apart_by_values_dtype_shape_and_sparsity():
    values = np.arange(6.0)
    assert digest([values]) == digest([values.copy()])
    assert digest([values]) != digest([values.astype(np.float32)])
    assert digest([values]) != digest([values.reshape(2, 3)])
    assert digest([values]) != digest([sparse.csr_matrix(values.reshape(1, 6))])
    assert digest([{1: values, 2: None}]) == digest([{2: None, 1: values}])
    assert digest([np.array(["a", "b"], dtype=object)]) != digest(
        [np.array(["a", "c"], dtype=object)]
    )


def test_the_key_holds_the_code_the_parts_come_from(monkeypatch, tmp_path):
    """Every source the key names exists, and a change in one of them is another key; a
    search's sources are among them."""
    assert all((PACKAGE / source).exists() for source in (*SOURCES, *SEARCH_SOURCES))
    assert all(source.startswith(SOURCES) for source in SEARCH_SOURCES)
    before = code_digest()
    copy = tmp_path / "contextuality"
    for source in SOURCES:
        (copy / source).parent.mkdir(parents=True, exist_ok=True)
        copied = shutil.copytree if (PACKAGE / source).is_dir() else shutil.copy
        copied(PACKAGE / source, copy / source)
    monkeypatch.setattr("contextuality.geometry.resume.PACKAGE", copy)
    assert code_digest() == before
    (copy / "rows.py").write_text((copy / "rows.py").read_text() + "\n# changed\n")
    assert code_digest() != before


@pytest.mark.parametrize("words", [False, True])
def test_the_api_s_alignment_stopped_part_way_resumes_to_the_same_table(
    tmp_path, monkeypatch, words
):
    """`contextuality.alignment` within one model (each unordered pair once, and with
    words the word baselines too) stopped at its 9th resample and called again with the
    same arguments gives the table of a call never stopped; a third call computes
    nothing."""
    import contextuality
    from contextuality.api import GeometrySettings
    from contextuality.geometry import layer_pairs

    rng = np.random.default_rng(5)
    layers = {
        layer: rng.normal(size=(60, 5)) + layer * rng.normal(size=(60, 1)) for layer in range(3)
    }
    sentences = np.repeat(np.arange(12), 5)
    keywords = dict(
        sentences=sentences,
        words=[f"w{index % 7}" for index in range(60)] if words else None,
        settings=GeometrySettings(
            seed=2,
            confidence=0.9,
            sample_size=None,
            alignment=AlignmentSettings(k=4, permutations=5, bootstrap=6),
        ),
        progress=False,
    )
    fresh = contextuality.alignment(layers, **keywords).table
    original = layer_pairs.pair_grids
    calls = []

    def stopping(*arguments, **named):
        calls.append(1)
        if len(calls) == 9:
            raise _Stopped
        return original(*arguments, **named)

    monkeypatch.setattr(layer_pairs, "pair_grids", stopping)
    with pytest.raises(_Stopped):
        contextuality.alignment(layers, **keywords, resume_in=tmp_path)
    monkeypatch.setattr(layer_pairs, "pair_grids", original)
    resumed = contextuality.alignment(layers, **keywords, resume_in=tmp_path).table
    pd.testing.assert_frame_equal(resumed, fresh)
    computed = _counting(monkeypatch)
    monkeypatch.setattr(layer_pairs, "pair_grids", lambda *a, **k: computed.append(1))
    again = contextuality.alignment(layers, **keywords, resume_in=tmp_path).table
    assert not computed
    pd.testing.assert_frame_equal(again, fresh)
