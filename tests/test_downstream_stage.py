"""Layers against a downstream task as a stage of the workflow (config ``downstream``):
on a tiny BERT and GPT-2 it scores every layer as a brute-force Spearman over the same
pairs does, sets the run's measures against the scores as a brute-force Spearman across
layers does, plans a model added alone, and refuses a bad setting in one line."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from test_workflow import _config, _write_corpus
from workflow_runs import planned_jobs, snakemake, write_config

from contextuality import backends, workflow
from contextuality.cli import main
from contextuality.configuration.schema import with_defaults
from contextuality.extraction.sentence_vectors import sentence_vectors
from contextuality.files.tables import read_parquet_with_provenance, read_tsv
from contextuality.measures.downstream import pair_cosines

PAIRS, DRAWS = 40, 30
STAGE_JOBS = ("sts_pairs", "sts_by_layer", "downstream_table")


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_bert_dir, tiny_gpt2_dir, shared_data) -> tuple[Path, dict]:
    """A finished run of the tiny models with the stage on: (its directory, its config)."""
    directory = tmp_path_factory.mktemp("downstream")
    _write_corpus(directory / "corpus.txt")
    config = _config(
        directory / "corpus.txt",
        {"bert": {"source": str(tiny_bert_dir)}, "gpt2": {"source": str(tiny_gpt2_dir)}},
    )
    config["corpus"]["sts"] = {"mirror": str(shared_data / "sts")}
    config["downstream"] = {"activate": True, "pairs": PAIRS, "draws": DRAWS}
    config["geometry"] = {"activate": False}
    write_config(directory, config)
    result = snakemake(directory)
    assert result.returncode == 0, result.stderr[-3000:]
    return directory, config


def test_every_layer_s_score_is_spearman_s_rho_over_the_drawn_pairs(study):
    directory, config = study
    pairs, provenance = read_parquet_with_provenance(
        directory / "results/downstream/sts_pairs.parquet"
    )
    sentences, _ = read_parquet_with_provenance(
        directory / "results/downstream/sts_sentences.parquet"
    )
    assert len(pairs) == PAIRS and provenance["n_scored"] == 12_544
    assert pairs["gold"].between(0, 5).all()
    scores = read_tsv(directory / "results/tables/downstream.tsv")
    for model in ("bert", "gpt2"):
        spec = backends.model_settings(model, config["models"][model])
        loaded = backends.load_model(spec)
        layers = tuple(range(loaded.n_layers + 1))
        vectors = sentence_vectors(loaded, sentences["text"].tolist(), layers)["mean"]
        rows = scores[(scores["model"] == model) & (scores["pooling"] == "mean")]
        assert rows["layer"].tolist() == list(layers)
        for position, layer in enumerate(layers):
            cosines = pair_cosines(vectors[position], pairs["left"], pairs["right"])
            expected = spearmanr(cosines, pairs["gold"]).statistic
            row = rows[rows["layer"] == layer].iloc[0]
            assert row["spearman"] == pytest.approx(expected, abs=1e-6)
            assert row["low"] <= row["high"] and (row["n_pairs"], row["draws"]) == (PAIRS, DRAWS)
    assert set(scores["pooling"]) == {"mean", "past_first"}


def test_each_measure_s_agreement_is_spearman_s_rho_across_the_layers(study):
    directory, _ = study
    scores = read_tsv(directory / "results/tables/downstream.tsv")
    measures = read_tsv(directory / "results/tables/measures.tsv")
    agreement = read_tsv(directory / "results/tables/downstream_agreement.tsv")
    anisotropy = agreement[agreement["measure"] == "anisotropy"]
    assert set(zip(anisotropy["model"], anisotropy["pooling"], strict=True)) == {
        (model, pooling) for model in ("bert", "gpt2") for pooling in ("mean", "past_first")
    }
    for row in anisotropy.itertuples():
        measured = measures[
            (measures["model"] == row.model)
            & (measures["measure"] == "anisotropy")
            & (measures["transform"] == "none")
        ].set_index("layer")["raw"]
        score = scores[(scores["model"] == row.model) & (scores["pooling"] == row.pooling)]
        score = score.set_index("layer")["spearman"].reindex(measured.index)
        expected = spearmanr(measured, score).statistic  # NaN where a tiny model's layers tie
        assert row.rho == pytest.approx(expected, abs=1e-9, nan_ok=True)
        assert row.n_layers == len(measured)
        assert np.isnan(row.p_value) if np.isnan(expected) else 0 < row.p_value <= 1


def test_a_model_added_is_scored_alone_and_a_word_setting_scores_nothing(study, tiny_bert_dir):
    directory, config = study
    added = copy.deepcopy(config)
    added["models"]["bert_first"] = {"source": str(tiny_bert_dir), "pooling": "first"}
    write_config(directory, added)
    planned = planned_jobs(directory)
    assert {job: planned.get(job) for job in STAGE_JOBS} == {
        "sts_pairs": None,
        "sts_by_layer": 1,
        "downstream_table": 1,
    }
    pooled = copy.deepcopy(config)
    pooled["models"]["bert"]["pooling"] = "first"
    pooled["models"]["gpt2"]["layers"] = [0, 2]
    write_config(directory, pooled)
    assert "sts_by_layer" not in planned_jobs(directory)
    write_config(directory, config)


def test_the_stage_is_off_by_default_skips_ablated_models_and_refuses_too_few_pairs(
    tmp_path, tiny_gpt2_dir
):
    section = {"source": str(tiny_gpt2_dir), "layers": [0, 1]}
    models = {"gpt2": section, "zeroed": section | {"ablation": {"block": 1}}}
    config = _config(tmp_path / "corpus.txt", models)
    assert workflow.downstream_models(with_defaults(copy.deepcopy(config))) == []
    config["downstream"] = {"activate": True}
    assert workflow.downstream_models(with_defaults(copy.deepcopy(config))) == ["gpt2"]
    _write_corpus(tmp_path / "corpus.txt")
    config["downstream"]["pairs"] = 2
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    problems = [line.strip() for line in result.stderr.splitlines() if "downstream" in line]
    assert problems == ["downstream.pairs: 2 is less than the minimum of 3"]


def test_the_pairs_are_the_same_draw_for_every_seed_s_run_and_another_for_another(
    tmp_path, shared_data
):
    from contextuality import steps

    archives = {year: shared_data / "sts" / f"STS{year}-en-test.zip" for year in range(2012, 2017)}
    drawn = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        files = steps.PairFiles(
            tmp_path / f"{name}.parquet", tmp_path / f"{name}.sentences.parquet"
        )
        task = steps.sts_pairs(archives, 25, seed, True, files)
        drawn[name] = pd.DataFrame({"gold": task.gold, "dataset": task.dataset})
    pd.testing.assert_frame_equal(drawn["a"], drawn["b"])
    assert not drawn["a"].equals(drawn["c"])
    every = steps.sts_pairs(
        archives,
        None,
        0,
        True,
        steps.PairFiles(tmp_path / "all.parquet", tmp_path / "all.s.parquet"),
    )
    assert len(every.gold) == 12_544 and np.isfinite(every.gold).all()


def test_the_commands_write_what_the_workflow_writes(study, tmp_path, shared_data, tiny_bert_dir):
    """'sts-by-layer' and 'downstream-table' outside Snakemake, on the run's model, pairs
    and measures table: the same scores and agreement as the workflow's tables."""
    directory, config = study
    scored = tmp_path / "bert"
    arguments = ["sts-by-layer", str(tiny_bert_dir), "--name", "bert"]
    arguments += ["--sts", str(shared_data / "sts"), "--pairs", str(PAIRS)]
    arguments += ["--draws", str(DRAWS), "--seed", str(config["measures"]["seed"])]
    assert main([*arguments, "--threads", "1", "-o", str(scored)]) == 0
    measures = directory / "results/tables/measures.tsv"
    prefix = tmp_path / "downstream"
    assert (
        main(["downstream-table", str(scored), "--measures", str(measures), "-o", str(prefix)]) == 0
    )
    for name, workflow_table in (
        ("downstream.tsv", "downstream.tsv"),
        ("downstream_agreement.tsv", "downstream_agreement.tsv"),
    ):
        found = read_tsv(tmp_path / name)
        expected = read_tsv(directory / "results/tables" / workflow_table)
        expected = expected[expected["model"] == "bert"].reset_index(drop=True)
        pd.testing.assert_frame_equal(found, expected, check_exact=False, rtol=1e-9)
    assert (tmp_path / "downstream.png").stat().st_size > 0
    # a directory without the STS archives is one line, before any model loads
    assert (
        main(["sts-by-layer", str(tiny_bert_dir), "--sts", str(tmp_path), "-o", str(scored)]) == 1
    )
