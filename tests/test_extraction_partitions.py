"""Partitioned extraction (config ``extraction.partitions``): the sentence ranges of the
parts (`extraction.partitions.partition_bounds`), the extraction of one part, the gathering
of the parts' rows (`storage.shards.load_shard_parts`), the workflow's paths, and a
partitioned run of the workflow giving the results of a run in one job."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from contextuality import workflow
from contextuality.backends import load_model
from contextuality.backends.elmo.synthetic import write_random_files
from contextuality.backends.settings import ModelSettings
from contextuality.errors import ConfigError, ShardMismatchError
from contextuality.extraction.partitions import SEGMENT_WORDS as DEFAULT_SEGMENT_WORDS
from contextuality.extraction.partitions import part_segments, partition_bounds, segments
from contextuality.extraction.units import sentence_units, units_of_part
from contextuality.files.tables import read_tsv
from contextuality.storage.hdf5 import seal_attributes
from contextuality.storage.shards import (
    load_shard,
    load_shard_parts,
    load_shards,
    shard_attributes,
)

from extraction import extract_into_shards, with_spec

# Sentences of 1 to 13 words, so that segments of 40 words hold a few sentences, and the
# cuts between three parts cross some segments and not others.
SENTENCES = [
    f"{sentence} Case {k}."
    for k in range(3)
    for sentence in (
        "The cat sat on the mat.",
        "Bushfires",
        "A dog ran in the park, and the cat watched.",
        "Is it true that 1,650 people voted?",
        "Residents left.",
        "The bank raised interest rates; the river bank flooded.",
    )
]
SEGMENT_WORDS = 40
LAYERS = (0, 1, 2)


# --------------------------------------------------------------------------------------
# partition_bounds
# --------------------------------------------------------------------------------------


def _check_bounds(counts: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """Assert the properties `partition_bounds` promises; return its ranges."""
    bounds = partition_bounds(counts, n_parts)
    assert len(bounds) == n_parts
    assert bounds[0][0] == 0 and bounds[-1][1] == len(counts)
    for (_, end), (start, _) in zip(bounds, bounds[1:], strict=False):
        assert end == start  # contiguous, nothing skipped or repeated
    assert all(start <= end for start, end in bounds)
    rows = np.array([counts[start:end].sum() for start, end in bounds])
    assert rows.sum() == counts.sum()
    if n_parts <= np.count_nonzero(counts):
        assert (rows > 0).all()  # every part holds rows where the sentences allow it
    # balanced within one sentence's rows
    assert np.abs(rows - counts.sum() / n_parts).max() <= max(1, int(counts.max(initial=0)))
    return bounds


def test_partition_bounds_cover_every_sentence_in_balanced_contiguous_parts():
    rng = np.random.default_rng(0)
    for _ in range(300):
        counts = rng.integers(0, 40, size=int(rng.integers(0, 60)))
        counts[rng.random(len(counts)) < 0.2] = 0  # sentences without rows among them
        _check_bounds(counts, int(rng.integers(1, 12)))
    assert partition_bounds([3, 3, 3, 3], 2) == [(0, 2), (2, 4)]
    assert partition_bounds([3, 3, 3, 3], 1) == [(0, 4)]
    assert partition_bounds([10, 1, 1, 1, 1], 2) == [(0, 1), (1, 5)]
    # a sentence of more rows than a part's share pushes the next cut along
    assert partition_bounds([100, 1, 1], 3) == [(0, 1), (1, 2), (2, 3)]
    # sentences without rows stay with the part before them
    assert partition_bounds([0, 0, 5, 0, 5, 0], 2) == [(0, 4), (4, 6)]


def test_a_corpus_under_one_segment_is_split_by_rows():
    """The default segments hold 16,384 rows: 700 rows are one segment, yet each of three
    parts holds a third of them, and runs the segment's sentences of its own."""
    counts = np.full(100, 7)
    assert segments(counts, DEFAULT_SEGMENT_WORDS) == [(0, 100)]
    bounds = partition_bounds(counts, 3)
    assert bounds == [(0, 33), (33, 67), (67, 100)]
    assert [part_segments(counts, *part, DEFAULT_SEGMENT_WORDS) for part in bounds] == [
        [part] for part in bounds
    ]


def test_a_part_runs_the_whole_extractions_segments_clipped_to_it():
    rng = np.random.default_rng(1)
    for _ in range(300):
        counts = rng.integers(0, 30, size=int(rng.integers(1, 80)))
        segment_words = int(rng.integers(1, 120))
        n_parts = int(rng.integers(1, 9))
        whole = segments(counts, segment_words)
        bounds = partition_bounds(counts, n_parts)
        ran = []
        for first, end in bounds:
            ours = part_segments(counts, first, end, segment_words)
            # contiguous, inside the part, covering it
            starts = [start for start, _ in ours]
            assert starts == [first, *[stop for _, stop in ours[:-1]]][: len(ours)]
            assert all(start < stop for start, stop in ours)
            assert (ours[-1][1] if ours else first) == end
            ran += ours
        # every segment no cut crosses is run as it is; at most n_parts - 1 are crossed
        cuts = {start for start, _ in bounds[1:]}
        crossed = [(a, b) for a, b in whole if any(a < cut < b for cut in cuts)]
        assert [seg for seg in whole if seg not in crossed] == [seg for seg in ran if seg in whole]
        assert len(crossed) <= n_parts - 1


def test_fewer_sentences_holding_rows_than_parts_leave_parts_without_rows():
    assert partition_bounds([5, 5], 4) == [(0, 1), (1, 1), (1, 2), (2, 2)]
    assert partition_bounds([], 3) == [(0, 0)] * 3
    assert partition_bounds([5, 0, 0], 2) == [(0, 3), (3, 3)]


@pytest.mark.parametrize("n_parts", [0, -1, 1.5, True, "2"])
def test_partition_bounds_refuse_a_bad_number_of_parts(n_parts):
    with pytest.raises(ConfigError, match="at least 1"):
        partition_bounds([1, 2, 3], n_parts)


# --------------------------------------------------------------------------------------
# extraction in parts
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bert(tiny_bert_dir):
    return load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))


def _extract(loaded, directory: Path, part: int = 0, n_parts: int = 1, checksum="index-a"):
    paths = {layer: directory / f"layer_{layer}.h5" for layer in LAYERS}
    loaded = with_spec(loaded, segment_words=SEGMENT_WORDS)
    report = extract_into_shards(
        loaded,
        sentence_units(loaded, SENTENCES),
        LAYERS,
        paths,
        {"model": loaded.spec.name, "index_checksum": checksum, "pooling": "mean"},
        part=part,
        n_parts=n_parts,
    )
    return report, paths


@pytest.fixture(scope="module")
def extracted(bert, tmp_path_factory):
    """The tiny BERT's shards of SENTENCES, whole and in 3 parts (segments of 40 words)."""
    root = tmp_path_factory.mktemp("partitions")
    whole = _extract(bert, root / "whole")
    parts = [_extract(bert, root / f"part_{part}-of-3", part, 3) for part in range(3)]
    return whole, parts


def regrouped_rows(counts: np.ndarray, n_parts: int, segment_words: int) -> np.ndarray:
    """(n_rows,) bool: the rows of the whole extraction's segments that a cut between
    `n_parts` parts crosses (run in other batches by the parts); the others run as one job
    runs them."""
    offsets = np.concatenate([[0], np.cumsum(counts)])
    cuts = [start for start, _ in partition_bounds(counts, n_parts)[1:]]
    regrouped = np.zeros(int(offsets[-1]), dtype=bool)
    for start, stop in segments(counts, segment_words):
        if any(start < cut < stop for cut in cuts):
            regrouped[offsets[start] : offsets[stop]] = True
    return regrouped


def assert_rows_agree(found: np.ndarray, expected: np.ndarray, regrouped: np.ndarray) -> None:
    """`found` (n_rows, d) float16 values is `expected` bit for bit, NaN rows included, but
    in the `regrouped` rows, where each value is within one float16 step of the expected."""
    np.testing.assert_array_equal(found[~regrouped], expected[~regrouped])
    assert np.array_equal(np.isnan(found), np.isnan(expected))
    step = np.spacing(np.abs(expected[regrouped]).astype(np.float16)).astype(np.float32)
    difference = np.abs(found[regrouped] - expected[regrouped])
    assert (np.nan_to_num(difference) <= step).all()


def test_the_parts_rows_are_the_whole_extractions_rows(bert, extracted):
    (whole_report, whole), parts = extracted
    n_rows = whole_report.n_occurrences
    units = sentence_units(bert, SENTENCES)
    bounds = partition_bounds(units.counts, 3)
    regrouped = regrouped_rows(units.counts, 3, SEGMENT_WORDS)
    assert 0 < regrouped.sum() < n_rows  # some rows run as one job runs them, some not
    first_row = 0
    for part, ((report, paths), (start, end)) in enumerate(zip(parts, bounds, strict=True)):
        rows = int(units.counts[start:end].sum())
        assert rows > 0  # every part holds rows
        assert (report.n_sentences, report.n_occurrences) == (end - start, rows)
        attributes = shard_attributes(paths[1])
        assert {key: attributes[key] for key in ("part", "n_parts", "first_row")} == {
            "part": part,
            "n_parts": 3,
            "first_row": first_row,
        }
        assert attributes["n_rows_total"] == n_rows
        assert (attributes["first_sentence"], attributes["end_sentence"]) == (start, end)
        meta = report.as_dict()
        assert (meta["part"], meta["first_row"], meta["n_occurrences"]) == (part, first_row, rows)
        with h5py.File(paths[1]) as shard:
            assert shard["vectors"].shape == (rows, bert.hidden_size)
        first_row += rows
    assert first_row == n_rows
    for layer in LAYERS:
        expected, attributes = load_shard(whole[layer], "index-a", n_rows)
        gathered, combined = load_shard_parts(
            [paths[layer] for _, paths in parts], "index-a", n_rows
        )
        assert gathered.dtype == np.float32 and gathered.shape == expected.shape
        assert_rows_agree(gathered, expected, regrouped)
        assert combined["layer"] == layer and combined["model"] == attributes["model"]
        assert "part" not in combined and "first_row" not in combined
        assert combined["n_missing"] == attributes["n_missing"]
        # As stored (float16), in any order of the paths, and through load_shards.
        stored, _ = load_shard_parts(
            [paths[layer] for _, paths in reversed(parts)], "index-a", dtype=None
        )
        assert stored.dtype == np.float16
        np.testing.assert_array_equal(stored.astype(np.float32), gathered)
        np.testing.assert_array_equal(
            load_shards([paths[layer] for _, paths in parts], "index-a")[0], gathered
        )
        np.testing.assert_array_equal(load_shards(whole[layer], "index-a")[0], expected)
        np.testing.assert_array_equal(load_shards([whole[layer]], "index-a")[0], expected)
    # An unpartitioned extraction records nothing of parts.
    assert "part" not in shard_attributes(whole[0])
    assert "part" not in whole_report.as_dict()


def test_the_units_of_a_part_are_the_corpus_units_of_its_sentences(bert):
    """A part's job tokenizes its own sentences alone (`units_of_part`), and encodes them
    as the units of the whole corpus would."""
    whole = sentence_units(bert, SENTENCES)
    first, end = 5, 12
    part = units_of_part(sentence_units(bert, SENTENCES[first:end]), whole.counts, first)
    np.testing.assert_array_equal(part.counts, whole.counts)
    for ours, theirs in zip(part.encode(6, 10), whole.encode(6, 10), strict=True):
        np.testing.assert_array_equal(ours.input_ids, theirs.input_ids)
        np.testing.assert_array_equal(ours.word_index, theirs.word_index)
        assert (ours.n_words, ours.truncated, ours.sentence) == (
            theirs.n_words,
            theirs.truncated,
            theirs.sentence,
        )
    with pytest.raises(ValueError, match="outside this part"):
        part.encode(0, 3)
    with pytest.raises(ValueError, match="disagree"):
        units_of_part(sentence_units(bert, SENTENCES[first:end]), whole.counts, first + 1)


def test_more_parts_than_sentences_give_empty_parts_that_gather_too(bert, extracted, tmp_path):
    (whole_report, whole), _ = extracted
    n_parts = 40  # more than the sentences
    parts = [_extract(bert, tmp_path / str(part), part, n_parts)[1] for part in range(n_parts)]
    rows = [_rows(paths[2]) for paths in parts]
    assert rows.count(0) == n_parts - len(SENTENCES)  # a sentence in each of the others
    totals = {shard_attributes(paths[2])["n_rows_total"] for paths in parts}
    assert totals == {whole_report.n_occurrences}
    gathered, _ = load_shard_parts([paths[2] for paths in parts], "index-a")
    counts = sentence_units(bert, SENTENCES).counts
    regrouped = regrouped_rows(counts, n_parts, SEGMENT_WORDS)
    assert_rows_agree(gathered, load_shard(whole[2], "index-a")[0], regrouped)


def test_a_part_outside_the_parts_is_refused(bert, tmp_path):
    for part, n_parts in [(3, 3), (-1, 3), (0, 0)]:
        with pytest.raises(ConfigError):
            _extract(bert, tmp_path, part, n_parts)
    assert not list(tmp_path.glob("*.h5"))


def test_a_model_carrying_its_states_is_not_partitioned(tmp_path):
    write_random_files(tmp_path / "elmo")
    spec = ModelSettings("e", str(tmp_path / "elmo"), loader="elmo", lstm_states="carried")
    carried = load_model(spec)
    with pytest.raises(ConfigError, match="one sequence"):
        _extract(carried, tmp_path / "shards", 1, 2)
    assert not list((tmp_path / "shards").glob("*.h5"))
    config = {"models": {"e": {"source": "x", "loader": "elmo", "lstm_states": "carried"}}}
    config["extraction"] = {"partitions": 4}
    assert workflow.extraction_partitions(config, "e") == 1


# --------------------------------------------------------------------------------------
# load_shard_parts refuses what is not every part of one extraction
# --------------------------------------------------------------------------------------


def _rows(path: Path) -> int:
    with h5py.File(path) as shard:
        return shard["vectors"].shape[0]


def _changed_copy(path: Path, directory: Path, **attributes) -> Path:
    """A copy of shard `path` in `directory` with `attributes` set, as if written so (their
    digest sealed anew: changed alone, they are damage)."""
    directory.mkdir(parents=True, exist_ok=True)
    copy = directory / path.name
    shutil.copy(path, copy)
    with h5py.File(copy, "r+") as shard:
        shard.attrs.update(attributes)
        seal_attributes(shard)
    return copy


def test_load_shard_parts_refuses_anything_but_every_part_of_one_extraction(
    bert, extracted, tmp_path
):
    (whole_report, whole), parts = extracted
    n_rows = whole_report.n_occurrences
    p0, p1, p2 = (paths[1] for _, paths in parts)
    refused = {
        "a missing part": ([p0, p2], "missing \\[1\\]"),
        "a part given twice": ([p0, p1, p1, p2], "given twice \\[1\\]"),
        "no part": ([], "no shard parts"),
        "a whole shard": ([p0, whole[1]], "not a part of a partitioned extraction"),
        "an overlapping part": (
            [p0, _changed_copy(p1, tmp_path / "overlap", first_row=1), p2],
            "overlap",
        ),
        "an incomplete part": (
            [p0, _changed_copy(p1, tmp_path / "incomplete", complete=False), p2],
            "incomplete shard",
        ),
        "a part of another index": (
            [p0, _changed_copy(p1, tmp_path / "index", index_checksum="index-b"), p2],
            "occurrence index index-b",
        ),
        "a part of other settings": (
            [p0, _changed_copy(p1, tmp_path / "pooling", pooling="first"), p2],
            "pooling = 'first'.*not parts of one extraction",
        ),
        "a part of another layer": ([p0, parts[1][1][2], p2], "layer = 2"),
        "a part of another partition": (
            [p0, _changed_copy(p1, tmp_path / "n", n_parts=4), p2],
            "n_parts = 4",
        ),
        "parts short of their rows": (
            [p0, p1, _changed_copy(p2, tmp_path / "short", n_rows_total=n_rows + 1)],
            "n_rows_total",
        ),
        "a missing file": ([p0, p1, tmp_path / "nothing.h5"], "not a readable HDF5 shard"),
    }
    for name, (paths, message) in refused.items():
        with pytest.raises(ShardMismatchError, match=message):
            load_shard_parts(paths, "index-a", n_rows)
            pytest.fail(f"{name} was not refused")
    # The parts of another index, and a count of rows the index does not have.
    with pytest.raises(ShardMismatchError, match="occurrence index index-a"):
        load_shard_parts([p0, p1, p2], "index-b", n_rows)
    with pytest.raises(ShardMismatchError, match="occurrence index has"):
        load_shard_parts([p0, p1, p2], "index-a", n_rows + 1)
    with pytest.raises(ShardMismatchError, match="model"):
        load_shard_parts([p0, p1, p2], "index-a", expected={"model": "another"})
    # A part that ends short of the next one's first row.
    with pytest.raises(ShardMismatchError, match="gap"):
        load_shard_parts(
            [p0, p1, _changed_copy(p2, tmp_path / "gap", first_row=n_rows - 1)], "index-a"
        )


# --------------------------------------------------------------------------------------
# workflow paths
# --------------------------------------------------------------------------------------


def test_one_partition_keeps_the_paths_of_an_unpartitioned_extraction():
    config = {"models": {"m": {"source": "x", "layers": [0, 2]}}}
    expected = {
        "layers": ["results/embeddings/m/layer_0.h5", "results/embeddings/m/layer_2.h5"],
        "meta": "results/embeddings/m/meta.json",
    }
    for extraction in (None, {}, {"partitions": 1}):
        if extraction is not None:
            config["extraction"] = extraction
        assert workflow.extraction_outputs(config, "m") == expected
        assert workflow.extraction_outputs(config, "m")["layers"] == [
            path for layer in (0, 2) for path in workflow.layer_shards(config, "m", layer)["shard"]
        ]
        assert workflow.extraction_log(config, "m") == "logs/extract/m.log"
        assert workflow.extraction_log(config, "m", "benchmarks") == "benchmarks/extract/m.tsv"
        assert workflow.streamed_models(config, streamed=False) == ["m"]
        assert workflow.extraction_partitions(config, "m") == 1
        assert workflow.extraction_rule(config, "m") == "extract_m"
        assert workflow.layer_shards(config, "m", 2) == {
            "shard": ["results/embeddings/m/layer_2.h5"]
        }
        assert workflow.extraction_metas(config, "m") == ["results/embeddings/m/meta.json"]


def test_partitions_name_one_directory_per_part():
    config = {"models": {"m": {"source": "x", "layers": [0, 2]}}, "extraction": {"partitions": 3}}
    assert workflow.extraction_outputs(config, "m") == {
        "layers": [
            "results/embeddings/m/part_{part}/layer_0.h5",
            "results/embeddings/m/part_{part}/layer_2.h5",
        ],
        "meta": "results/embeddings/m/part_{part}/meta.json",
    }
    assert workflow.extraction_log(config, "m") == "logs/extract/m/part_{part}.log"
    assert workflow.extraction_partitions(config, "m") == 3
    assert workflow.extraction_rule(config, "m") == "extract_m"
    assert workflow.layer_shards(config, "m", 2) == {
        "shard": [f"results/embeddings/m/part_{part}-of-3/layer_2.h5" for part in range(3)]
    }
    assert workflow.extraction_metas(config, "m") == [
        f"results/embeddings/m/part_{part}-of-3/meta.json" for part in range(3)
    ]
    assert workflow.parse_part("2-of-3") == (2, 3)
    for label in ("3-of-3", "1of3", "a-of-3"):
        with pytest.raises(ConfigError):
            workflow.parse_part(label)
    schema = Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml"
    workflow.check_config(config, schema)
    for bad in (0, "2"):
        with pytest.raises(ConfigError, match="extraction.partitions"):
            workflow.check_config({**config, "extraction": {"partitions": bad}}, schema)
    config["measures"] = {"transforms": ["none"]}
    config["geometry"] = {"alignment_between_models": True}
    outputs = workflow.final_outputs(config)
    assert "results/embeddings/m/part_2-of-3/meta.json" in outputs
    assert "results/embeddings/m/meta.json" not in outputs


def test_more_partitions_than_the_corpus_holds_sentences_are_refused_at_plan_time(
    tmp_path, monkeypatch
):
    """Known before the run, the corpus's sentences bound ``extraction.partitions``:
    ``corpus.max_sentences``, or this config's sentence table at hand; refused in one
    line naming the key, before any job runs."""
    from test_workflow import _config

    from contextuality.configuration.schema import with_defaults
    from contextuality.files.tables import write_parquet
    from contextuality.workflow.study_files import SENTENCES, check_partitions, stage_digest

    monkeypatch.chdir(tmp_path)
    Path("corpus.txt").write_text("One cat.\nTwo dogs.\nThree birds.\n")
    config = with_defaults(_config(Path("corpus.txt"), {"m": {"source": "x", "layers": [0]}}))
    config["extraction"]["partitions"] = 4
    check_partitions(config)  # the corpus's size not known yet: nothing refused
    config["corpus"]["max_sentences"] = 3
    with pytest.raises(SystemExit) as refused:
        workflow.check_planned_inputs(config)
    assert str(refused.value.code) == (
        "error: extraction.partitions: 4 parts of a corpus of 3 sentences "
        "(corpus.max_sentences); set it to at most 3, since a part is a range of whole "
        "sentences"
    )
    config["corpus"]["max_sentences"] = None
    SENTENCES.parent.mkdir(parents=True)
    provenance = {"config_hash": stage_digest(config, "corpus"), "n_sentences": 3}
    write_parquet(
        pd.DataFrame({"text": ["One cat.", "Two dogs.", "Three birds."]}), SENTENCES, provenance
    )
    with pytest.raises(ConfigError, match=r"4 parts of a corpus of 3 sentences \(results/corpus/"):
        check_partitions(config)
    config["extraction"]["partitions"] = 3  # a sentence for each part
    check_partitions(config)
    config["extraction"]["partitions"] = 4
    config["corpus"]["text"]["split_sentences"] = True  # the table at hand is not this config's
    check_partitions(config)
    config["models"]["m"] = {"source": "x", "loader": "elmo", "lstm_states": "carried"}
    config["corpus"]["text"]["split_sentences"] = False
    check_partitions(config)  # a model read as one sequence runs as one job


# --------------------------------------------------------------------------------------
# the workflow: a partitioned run gives the results of a run in one job
# --------------------------------------------------------------------------------------


WORKFLOW_SEGMENT_WORDS = 4096  # models.<name>.segment_words: five blocks in the corpus below


def _large_corpus(path: Path) -> int:
    """Unique sentences of about 20,000 words (five blocks of `WORKFLOW_SEGMENT_WORDS`);
    returns the number of sentences."""
    from test_workflow import BASE_SENTENCES

    lines = [f"{sentence} Case {k}." for k in range(430) for sentence in BASE_SENTENCES]
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def _assert_tables_agree(found: pd.DataFrame, expected: pd.DataFrame) -> None:
    """The same rows and columns, the text equal and the numbers within 10⁻⁴ (relative):
    what rows one float16 step apart in a few segments can change."""
    assert list(found.columns) == list(expected.columns) and len(found) == len(expected)
    numbers = expected.select_dtypes("number").columns
    pd.testing.assert_frame_equal(found.drop(columns=numbers), expected.drop(columns=numbers))
    np.testing.assert_allclose(found[numbers], expected[numbers], rtol=1e-4, atol=1e-6)


def _static_vectors(path: Path) -> tuple[list[str], np.ndarray]:
    """A static-vector file's words and vectors (word2vec's text format)."""
    lines = path.read_text().splitlines()[1:]
    words = [line.split(" ", 1)[0] for line in lines]
    return words, np.array([line.split(" ")[1:] for line in lines], dtype=np.float64)


@pytest.mark.workflow
def test_a_partitioned_run_gives_the_results_of_one_job(tmp_path, tiny_bert_dir):
    from test_workflow import _config
    from workflow_runs import snakemake, write_config

    _large_corpus(tmp_path / "corpus.txt")
    bert = {"source": str(tiny_bert_dir), "segment_words": WORKFLOW_SEGMENT_WORDS}
    config = _config(tmp_path / "corpus.txt", {"bert": bert})
    config["measures"]["transforms"] = ["none"]
    tables = ["results/tables/measures.tsv", "results/tables/words/bert.none.tsv"]
    vectors = [
        "results/static/bert/none/pc1/layer_2.txt",
        "results/static/bert/none/mean/layer_1.txt",
    ]
    write_config(tmp_path, config)
    result = snakemake(tmp_path, *tables, *vectors)
    assert result.returncode == 0, result.stderr[-3000:]
    one_job = {path: read_tsv(tmp_path / path) for path in tables}
    one_job_vectors = {path: _static_vectors(tmp_path / path) for path in vectors}
    per_layer = {
        layer: pd.read_parquet(tmp_path / f"results/measures/bert/none/layer_{layer}.parquet")
        for layer in LAYERS
    }
    occurrences = pd.read_parquet(tmp_path / "results/corpus/occurrences.parquet")
    assert len(occurrences) > 4 * WORKFLOW_SEGMENT_WORDS  # five segments of the extraction

    config["extraction"] = {"partitions": 3}
    write_config(tmp_path, config)
    planned = snakemake(tmp_path, "--dry-run", *tables, *vectors)
    assert planned.returncode == 0, planned.stderr[-3000:]
    stats = (planned.stdout + planned.stderr).split("Job stats:")[1]
    assert re.search(r"^extract_bert\s+3$", stats, re.MULTILINE)
    assert re.search(r"^measure_layer\s+3$", stats, re.MULTILINE)
    assert not re.search(r"^(sentences|occurrence_index)\s", stats, re.MULTILINE)
    result = snakemake(tmp_path, *tables, *vectors)
    assert result.returncode == 0, result.stderr[-3000:]

    # every measure, word and static vector: the one job's, within the rounding of the
    # rows that the cuts between parts run in other batches
    for path in tables:
        _assert_tables_agree(read_tsv(tmp_path / path), one_job[path])
    for path in vectors:
        words, found = _static_vectors(tmp_path / path)
        assert words == one_job_vectors[path][0]
        np.testing.assert_allclose(found, one_job_vectors[path][1], rtol=1e-3, atol=1e-4)
    for layer, words in per_layer.items():
        partitioned = pd.read_parquet(
            tmp_path / f"results/measures/bert/none/layer_{layer}.parquet"
        )
        _assert_tables_agree(partitioned, words)
    parts = [tmp_path / path for path in workflow.layer_shards(config, "bert", 1)["shard"]]
    rows = [_rows(path) for path in parts]
    assert sum(rows) == len(occurrences) and min(rows) > 0  # every part holds rows
    index = json.loads((tmp_path / "results/corpus/index.json").read_text())["index_checksum"]
    whole, _ = load_shard(tmp_path / "results/embeddings/bert/layer_1.h5", index)
    counts = np.bincount(occurrences["sentence_id"].to_numpy())
    regrouped = regrouped_rows(counts, 3, WORKFLOW_SEGMENT_WORDS)
    assert_rows_agree(load_shard_parts(parts, index)[0], whole, regrouped)
    for part, path in enumerate(workflow.extraction_metas(config, "bert")):
        meta = json.loads((tmp_path / path).read_text())
        assert (meta["part"], meta["n_parts"], meta["n_occurrences"]) == (part, 3, rows[part])


def test_parts_from_the_command_line(tmp_path, tiny_bert_dir, capsys):
    """`extract --partitions N --part K` writes one part; `measure` given every part's shard
    measures what it measures on the whole extraction's (within the rounding of the batches
    the cut regroups)."""
    from contextuality.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"The cat sat on mat {k}. The dog ran." for k in range(6)) + "\n")
    sentences, index = str(tmp_path / "sentences.parquet"), str(tmp_path / "index")
    assert main(["sentences", "--text", str(corpus), "-o", sentences]) == 0
    assert main(["index", sentences, "-o", index, "--min-contexts", "3"]) == 0
    extract = ["extract", str(tiny_bert_dir), "--name", "tiny", "--sentences", sentences]
    extract += ["--index", index, "--layers", "1"]
    assert main([*extract, "-o", str(tmp_path / "whole")]) == 0
    for part in range(2):
        output = str(tmp_path / f"part{part}")
        assert main([*extract, "--partitions", "2", "--part", str(part), "-o", output]) == 0
    assert main([*extract, "--partitions", "2", "--part", "2", "-o", str(tmp_path / "no")]) == 1
    assert "parts are numbered 0 to 1" in capsys.readouterr().err
    tables = {}
    for name, shards in {
        "whole": [tmp_path / "whole/layer_1.h5"],
        "parts": [tmp_path / "part1/layer_1.h5", tmp_path / "part0/layer_1.h5"],
    }.items():
        prefix = tmp_path / "measures" / name
        arguments = ["measure", *map(str, shards), "--sentences", sentences, "--index", index]
        assert main([*arguments, "-o", str(prefix)]) == 0
        tables[name] = pd.read_parquet(f"{prefix}.parquet")
    _assert_tables_agree(tables["parts"], tables["whole"])
