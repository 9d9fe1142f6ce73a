"""The ablation's effects as a stage of the workflow (config ``ablation_effects``): on a
tiny GPT-2 and BERT it measures the decoder alone, its held-out perplexity that of
transformers' own loss over the sentences after the calibration ones, and a model added
or a word setting changed runs no other decoder's job."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pandas as pd
import pytest
from test_ablation_effects import _brute_force_loss
from test_workflow import _config, _write_corpus
from workflow_runs import planned_jobs, snakemake, write_config

from contextuality import workflow
from contextuality.backends import load_language_model
from contextuality.backends.settings import ModelSettings
from contextuality.cli import main
from contextuality.configuration.schema import with_defaults
from contextuality.files.tables import read_parquet, read_tsv

SENTENCES, CALIBRATION, DRAWS = 6, 3, 20


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_bert_dir, tiny_gpt2_dir) -> tuple[Path, dict]:
    directory = tmp_path_factory.mktemp("ablation-effects")
    _write_corpus(directory / "corpus.txt")
    config = _config(
        directory / "corpus.txt",
        {"bert": {"source": str(tiny_bert_dir)}, "gpt2": {"source": str(tiny_gpt2_dir)}},
    )
    config["ablation_effects"] = {
        "activate": True,
        "sentences": SENTENCES,
        "calibration_sentences": CALIBRATION,
        "draws": DRAWS,
    }
    config["geometry"] = {"activate": False}
    write_config(directory, config)
    result = snakemake(directory)
    assert result.returncode == 0, result.stderr[-3000:]
    return directory, config


def test_the_decoder_s_perplexity_is_its_own_loss_over_the_held_out_sentences(study, tiny_gpt2_dir):
    directory, _ = study
    perplexity = read_tsv(directory / "results/tables/ablation_effects_perplexity.tsv")
    assert perplexity["model"].tolist() == ["gpt2"]
    row = perplexity.iloc[0]
    assert row["condition"] == "none" and math.isnan(row["detection_block"])
    texts = read_parquet(directory / "results/corpus/sentences.parquet")["text"].tolist()
    held_out = texts[CALIBRATION : CALIBRATION + SENTENCES]
    loaded = load_language_model(ModelSettings(name="gpt2", source=str(tiny_gpt2_dir)))
    assert row["loss"] == pytest.approx(_brute_force_loss(loaded, held_out), rel=1e-5)
    assert row["low"] <= row["perplexity"] <= row["high"]
    assert (row["n_sentences"], row["draws"]) == (SENTENCES, DRAWS)
    attention = read_tsv(directory / "results/tables/ablation_effects_attention.tsv")
    shares = attention[attention["head"].notna()]
    assert set(shares["block"]) == {1, 2} and shares["first_token_share"].between(0, 1).all()
    assert (directory / "results/figures/ablation_effects.png").stat().st_size > 0


def test_a_model_added_or_a_word_setting_runs_no_other_decoder_s_job(study, tiny_gpt2_dir):
    directory, config = study
    added = copy.deepcopy(config)
    added["models"]["gpt2_again"] = {"source": str(tiny_gpt2_dir), "pooling": "last"}
    write_config(directory, added)
    planned = planned_jobs(directory)
    assert (planned.get("ablation_effects"), planned.get("ablation_effects_table")) == (1, 1)
    pooled = copy.deepcopy(config)
    pooled["models"]["gpt2"]["pooling"] = "first"
    write_config(directory, pooled)
    assert "ablation_effects" not in planned_jobs(directory)
    write_config(directory, config)


def test_decoders_without_an_ablation_are_measured_when_the_stage_is_on(
    tmp_path, tiny_gpt2_dir, tiny_bert_dir
):
    section = {"source": str(tiny_gpt2_dir), "layers": [0, 1]}
    models = {
        "gpt2": section,
        "bert": {"source": str(tiny_bert_dir)},
        "zeroed": section | {"ablation": {"block": 1}},
    }
    config = _config(tmp_path / "corpus.txt", models)
    assert workflow.ablation_effect_models(with_defaults(copy.deepcopy(config))) == []
    config["ablation_effects"] = {"activate": True}
    assert workflow.ablation_effect_models(with_defaults(copy.deepcopy(config))) == ["gpt2"]


def test_the_commands_write_what_the_workflow_writes(study, tmp_path, tiny_gpt2_dir):
    """'ablation-effects' and 'ablation-effects-table' outside Snakemake, on the run's
    decoder and sentence table: the workflow's two tables."""
    directory, config = study
    measured = tmp_path / "gpt2"
    arguments = ["ablation-effects", str(tiny_gpt2_dir), "--name", "gpt2"]
    arguments += ["--sentences", str(directory / "results/corpus/sentences.parquet")]
    arguments += ["--measured-sentences", str(SENTENCES)]
    arguments += ["--calibration-sentences", str(CALIBRATION), "--draws", str(DRAWS)]
    arguments += ["--seed", str(config["measures"]["seed"]), "--threads", "1"]
    assert main([*arguments, "-o", str(measured)]) == 0
    prefix = tmp_path / "effects"
    assert main(["ablation-effects-table", str(measured), "-o", str(prefix)]) == 0
    for kind in ("perplexity", "attention"):
        found = read_tsv(tmp_path / f"effects_{kind}.tsv")
        expected = read_tsv(directory / f"results/tables/ablation_effects_{kind}.tsv")
        pd.testing.assert_frame_equal(found, expected, check_exact=False, rtol=1e-9)
    assert (tmp_path / "effects.png").stat().st_size > 0
