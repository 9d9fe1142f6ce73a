"""Training as a stage of the workflow (config ``training``): on the STS mirror it trains
tiny runs by rule, measures their checkpoints as models, gathers their loss curves, and a
run added or changed trains and extracts that run alone."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from test_training import TINY_SIZES
from test_workflow import _config, _write_corpus
from transformers import AutoModelForCausalLM, AutoTokenizer
from workflow_runs import planned_jobs, snakemake, write_config

from contextuality.api import word_rows
from contextuality.cli import main
from contextuality.configuration import random_streams
from contextuality.corpus.sentences import (
    normalize_sentence,
    read_sts_archive,
    sts_archive_name,
    sts_sentences,
)
from contextuality.files.tables import read_parquet_with_provenance, read_tsv

TRAINING = {
    "runs": {"g": {"architecture": "gpt2", "seed": 1}, "b": {"architecture": "bert"}},
    "steps": [0, 4],
    **TINY_SIZES,
    "evaluation_steps": [2],
    "probes": {"steps": "1-2, 4", "sentences": 12},
}


@pytest.fixture(scope="module")
def study(tmp_path_factory, shared_data) -> tuple[Path, dict]:
    """A finished run of a GPT-2 sweep over both checkpoints and BERT's last one."""
    directory = tmp_path_factory.mktemp("training")
    _write_corpus(directory / "corpus.txt")
    config = _config(
        directory / "corpus.txt",
        {
            "g": {"sweep": {"steps": [0, 4], "source": "training:g/step_{step}"}},
            "b": {"source": "training:b/step_4"},
        },
    )
    config["corpus"]["sts"] = {"mirror": str(shared_data / "sts")}
    config["training"] = copy.deepcopy(TRAINING)
    config["geometry"] = {"activate": False}
    write_config(directory, config)
    result = snakemake(directory)
    assert result.returncode == 0, result.stderr[-3000:]
    return directory, config


def test_the_runs_train_on_every_distinct_sts_sentence(study, shared_data):
    directory, _ = study
    table, provenance = read_parquet_with_provenance(
        directory / "results/corpus/sts_sentences.parquet"
    )
    distinct = set()
    for year in range(2012, 2017):
        archive = shared_data / "sts" / sts_archive_name(year)
        pairs, _ = read_sts_archive(archive, year, verify_checksums=True)
        distinct |= {normalize_sentence(s.text) for s in sts_sentences(pairs)} - {""}
    assert len(table) == len(distinct) == provenance["sentences"]
    assert set(table["text"]) == distinct


def test_each_checkpoint_is_measured_and_each_run_s_curve_gathered(study):
    directory, _ = study
    measures = read_tsv(directory / "results/tables/measures.tsv")
    assert set(measures["model"]) == {"g.step0", "g.step4", "b"}
    assert set(measures["layer"]) == {0, 1}
    losses = read_tsv(directory / "results/tables/training_losses.tsv")
    evaluated = [0, 1, 2, 4]  # saved, evaluated and probed
    assert sorted(zip(losses["run"], losses["step"], strict=True)) == [
        (run, step) for run in ("b", "g") for step in evaluated
    ]
    assert set(zip(losses["run"], losses["architecture"], losses["seed"], strict=True)) == {
        ("g", "gpt2", 1),
        ("b", "bert", 0),
    }
    for name in ("sweeps/g.png", "training_losses.png", "training_probes/gpt2.png"):
        assert (directory / "results/figures" / name).stat().st_size > 0
    checkpoint = directory / "results/training/g/checkpoints/step_4"
    assert (checkpoint / "training.json").is_file()


def test_a_run_added_or_changed_trains_and_extracts_that_run_alone(study):
    directory, config = study
    added = copy.deepcopy(config)
    added["training"]["runs"]["g2"] = {"architecture": "gpt2", "seed": 2}
    added["models"]["g2"] = {"source": "training:g2/step_4"}
    write_config(directory, added)
    planned = planned_jobs(directory)
    assert planned["train_model"] == 1 and planned["extract_g2"] == 1
    assert not {"sts_sentences", "extract_b", "extract_g.step4"} & set(planned)
    changed = copy.deepcopy(config)
    changed["training"]["runs"]["b"]["warmup"] = 3
    write_config(directory, changed)
    planned = planned_jobs(directory)
    assert planned["train_model"] == 1 and planned["extract_b"] == 1
    assert not {"extract_g.step0", "extract_g.step4"} & set(planned)
    write_config(directory, config)
    assert planned_jobs(directory) == {}


def test_the_command_line_trains_the_same_checkpoints_bit_for_bit(study, shared_data, tmp_path):
    directory, config = study
    sizes = {
        key: value for key, value in TRAINING.items() if key not in ("runs", "steps", "probes")
    }
    options = [
        part
        for key, value in sizes.items()
        for part in (
            f"--{key.replace('_', '-')}",
            *map(str, value if isinstance(value, list) else [value]),
        )
    ]
    main(
        [
            "train",
            "gpt2",
            "--sts",
            str(shared_data / "sts"),
            "--sentences",
            str(directory / "results/corpus/sentences.parquet"),
            "--seed",
            "1",
            "--steps",
            "0",
            "4",
            *options,
            "--probe-steps",
            TRAINING["probes"]["steps"],
            "--probe-sentences",
            str(TRAINING["probes"]["sentences"]),
            "--probe-seed",
            str(config["measures"]["seed"]),
            "--threads",
            "2",
            "-o",
            str(tmp_path / "g"),
        ]
    )
    for step in (0, 4):
        ours = tmp_path / "g" / "checkpoints" / f"step_{step}" / "model.safetensors"
        workflow_s = directory / f"results/training/g/checkpoints/step_{step}/model.safetensors"
        assert ours.read_bytes() == workflow_s.read_bytes()
    main(["training-losses-table", str(tmp_path / "g"), "-o", str(tmp_path / "losses")])
    by_command = read_tsv(tmp_path / "losses.tsv")
    by_workflow = read_tsv(directory / "results/tables/training_losses.tsv")
    by_workflow = by_workflow[by_workflow["run"] == "g"].reset_index(drop=True)
    columns = ["step", "held_out_loss", "unigram_loss", "train_loss"]
    assert by_command[columns].equals(by_workflow[columns])
    probed = read_parquet_with_provenance(tmp_path / "g" / "probes.parquet")[0]
    by_workflow = read_parquet_with_provenance(directory / "results/training/g/probes.parquet")[0]
    assert probed.equals(by_workflow)


def _brute_force_anisotropy(rows: np.ndarray, sentences: np.ndarray) -> float:
    """The mean cosine over every ordered pair of words in different sentences."""
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cosines = unit @ unit.T
    apart = sentences[:, None] != sentences[None, :]
    return float(cosines[apart].mean())


def test_a_probe_is_the_saved_checkpoint_s_anisotropy_on_the_drawn_sentences(study):
    directory, config = study
    probes = read_tsv(directory / "results/tables/training_probes.tsv")
    assert sorted(set(zip(probes["run"], probes["step"], strict=True))) == [
        (run, step) for run in ("b", "g") for step in (1, 2, 4)
    ]
    texts = read_parquet_with_provenance(directory / "results/corpus/sentences.parquet")[0]
    rng = random_streams.generator(config["measures"]["seed"], "training_probes")
    chosen = np.sort(rng.choice(len(texts), 12, replace=False))
    sentences = texts["text"].iloc[chosen].tolist()
    checkpoint = directory / "results/training/g/checkpoints/step_4"
    model = AutoModelForCausalLM.from_pretrained(checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    tokenizer.pad_token = tokenizer.eos_token
    encoded = tokenizer(  # the window is the block: the words past it get no row
        sentences, return_offsets_mapping=True, padding=True, truncation=True, return_tensors="pt"
    )
    with torch.no_grad():
        hidden = model.base_model(
            input_ids=encoded["input_ids"],
            attention_mask=encoded["attention_mask"],
            output_hidden_states=True,
        ).hidden_states
    rows = word_rows(
        hidden, encoded["offset_mapping"], sentences, attention_mask=encoded["attention_mask"]
    )
    kept = np.isfinite(rows.layers[0]).all(axis=1)
    assert 0 < kept.sum() < len(kept)
    for layer in (0, 1):
        probed = probes[(probes["run"] == "g") & (probes["step"] == 4) & (probes["layer"] == layer)]
        expected = _brute_force_anisotropy(rows.layers[layer][kept], rows.sentences[kept])
        assert probed["anisotropy"].item() == pytest.approx(expected, abs=1e-5)
        assert probed["words"].item() == kept.sum()
    events = read_tsv(directory / "results/tables/training_probe_events.tsv")
    assert len(events) == 2 * 2  # two runs, two layers
    assert (events["warmup_end"] == 50).all()
