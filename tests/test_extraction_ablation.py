"""Sun et al.'s intervention in the forward pass: which activations it targets, what it
sets them to, and that the extracted layers before the block are untouched while the
block's own output holds the replacement."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from contextuality.backends import load_model, model_settings
from contextuality.backends.settings import Ablation, ModelSettings
from contextuality.errors import ConfigError
from contextuality.extraction.ablation import AblationHook, first_token_mask, massive_mask
from contextuality.extraction.units import sentence_units
from contextuality.storage.shards import load_shard

from extraction import extract_into_shards

REPO = Path(__file__).resolve().parents[1]
SENTENCES = [
    "the bank raised its rates again today",
    "a river bank flooded after the storm",
    "the dog ran to the bank of the river",
    "money in the bank earns little",
    "she sat on the bank and read",
    "rates rose and the money moved",
]


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2_dir):
    return load_model(ModelSettings(name="tiny-gpt2", source=str(tiny_gpt2_dir), pooling="first"))


def _extract(loaded, directory, ablation=None):
    """Every layer of `loaded` (its spec's ablation replaced by `ablation`) through the
    extract step's entry, and the report."""
    loaded = dataclasses.replace(loaded, spec=dataclasses.replace(loaded.spec, ablation=ablation))
    layers = tuple(range(loaded.n_layers + 1))
    directory.mkdir(parents=True, exist_ok=True)
    paths = {layer: directory / f"layer{layer}.h5" for layer in layers}
    units = sentence_units(loaded, SENTENCES)
    report = extract_into_shards(
        loaded, units, layers, paths, {"index_checksum": "i"}, storage_dtype=None
    )
    n_rows = int(units.counts.sum())
    vectors = np.stack([load_shard(paths[layer], "i", n_rows)[0] for layer in layers])
    first_words = np.concatenate([[0], np.cumsum(units.counts)[:-1]])
    return report, vectors.astype(np.float64), first_words


def test_first_token_set_to_zero_at_a_block(gpt2, tmp_path):
    """Block 1's output is zero on each sentence's first token (pooling ``first``: its
    word's vector is that token's state); the embedding output is as without the
    ablation, and the next block reads the change."""
    _, plain, first = _extract(gpt2, tmp_path / "plain")
    report, ablated, _ = _extract(gpt2, tmp_path / "zero", Ablation(1, "first_token", "zero"))
    np.testing.assert_array_equal(ablated[0], plain[0])
    assert np.all(ablated[1][first] == 0) and np.any(plain[1][first] != 0)
    later = np.setdiff1d(np.arange(plain.shape[1]), first)
    assert not np.allclose(ablated[2][later], plain[2][later], atol=1e-3)
    passes = len(SENTENCES) + report.parity["inputs"]  # the parity check's run alone too
    assert report.ablation["replaced"] == passes * gpt2.hidden_size
    assert report.ablation["block"] == 1 and report.ablation["value"] == "zero"


def test_first_token_set_to_its_calibrated_mean(gpt2, tmp_path):
    """``mean`` writes the mean first-token state over the calibration sentences: here all
    of them, so it is the mean of the unablated first words' vectors at that block."""
    _, plain, first = _extract(gpt2, tmp_path / "plain")
    ablation = Ablation(1, "first_token", "mean", calibration_sentences=len(SENTENCES))
    report, ablated, _ = _extract(gpt2, tmp_path / "mean", ablation)
    expected = plain[1][first].mean(axis=0)
    np.testing.assert_allclose(ablated[1][first], np.tile(expected, (len(first), 1)), atol=2e-2)
    assert report.ablation["sentences"] == len(SENTENCES)
    assert report.ablation["targets"] == len(SENTENCES) * gpt2.hidden_size


def test_massive_activations_are_found_per_sequence_never_in_padding():
    hidden = torch.randn(2, 5, 8)
    attention = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    hidden[0, 0, 3] = 5000.0
    hidden[0, 2, 6] = -150.0  # above 100 but not 1,000 × the median (about 0.7)
    hidden[1, 1, 2] = 2000.0
    hidden[1, 4, 5] = 9000.0  # padding
    chosen = massive_mask(hidden, attention)
    assert sorted(map(tuple, chosen.nonzero().tolist())) == [(0, 0, 3), (1, 1, 2)]
    small = torch.randn(1, 4, 8) * 0.01
    small[0, 2, 1] = 150.0  # 1,000 × the median is under 100: 100 decides
    small[0, 3, 1] = 60.0
    assert massive_mask(small, torch.ones(1, 4)).nonzero().tolist() == [[0, 2, 1]]
    assert first_token_mask(hidden, attention)[:, 0].all()
    assert not first_token_mask(hidden, attention)[:, 1:].any()


def test_the_hook_records_means_by_dimension_then_replaces():
    hook = AblationHook(Ablation(2, "massive", "mean"), recording=True)
    hook.attention = torch.ones(1, 3)
    hidden = torch.randn(1, 3, 4) * 0.1
    hidden[0, 0, 1], hidden[0, 2, 1] = 3000.0, 5000.0
    hidden[0, 1, 3] = -4000.0
    assert hook(None, None, (hidden,)) is None  # recording changes nothing
    hook.recording = False
    hook.replacement = torch.where(hook.counts > 0, hook.sums / hook.counts.clamp(min=1), 0.0)
    assert hook.replacement.tolist() == [0.0, 4000.0, 0.0, -4000.0]
    changed = hidden.clone()
    assert hook(None, None, (changed,)) is None  # in place
    assert changed[0, 0, 1] == changed[0, 2, 1] == 4000.0 and changed[0, 1, 3] == -4000.0
    untouched = torch.ones_like(hidden, dtype=torch.bool)
    untouched[0, 0, 1] = untouched[0, 2, 1] = untouched[0, 1, 3] = False
    assert torch.equal(changed[untouched], hidden[untouched])
    assert hook.replaced == 3


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"target": "massive"}, "block"),
        ({"block": 0}, "block"),
        ({"block": 1, "target": "sinks"}, "target"),
        ({"block": 1, "value": "median"}, "value"),
        ({"block": 1, "calibration_sentences": 0}, "calibration_sentences"),
        ({"block": 1, "layer": 2}, "'layer' was unexpected"),
    ],
)
def test_bad_ablation_settings_are_refused(section, message):
    with pytest.raises((ConfigError, TypeError), match=message):
        model_settings("m", {"source": "s", "ablation": section})


def test_ablation_round_trips_and_is_refused_for_elmo():
    spec = model_settings("m", {"source": "s", "ablation": {"block": 2, "value": "zero"}})
    assert spec.ablation == Ablation(2, "massive", "zero")
    assert ModelSettings.from_config("m", spec.common_settings()) == spec
    assert "ablation" not in model_settings("m", {"source": "s"}).common_settings()
    with pytest.raises(ConfigError, match="ablation"):
        model_settings("e", {"source": "s", "loader": "elmo", "ablation": {"block": 1}})


def test_a_block_outside_the_model_is_refused(gpt2, tmp_path):
    with pytest.raises(ConfigError, match="outside its blocks"):
        _extract(gpt2, tmp_path / "far", Ablation(gpt2.n_layers + 1, "first_token", "zero"))


def _config(tiny_gpt2_dir, **ablated):
    """A config of a tiny GPT-2 and its ablated copy, as the schema fills it."""
    from test_workflow import _with_defaults

    source = str(tiny_gpt2_dir)
    models = {
        "gpt2": {"source": source},
        "gpt2-ablated": {"source": source, "ablation": {"block": 1, **ablated}},
    }
    return _with_defaults(
        {"corpus": {"source": "text", "text": {"path": "corpus.txt"}}, "models": models}
    )


def test_the_workflow_pairs_an_ablated_model_with_its_model_and_draws_it(tiny_gpt2_dir):
    from contextuality import workflow

    config = _config(tiny_gpt2_dir)
    assert workflow.ablated_models(config) == {"gpt2-ablated": "gpt2"}
    outputs = workflow.final_outputs(config)
    assert "results/figures/ablation/gpt2-ablated.png" in outputs
    assert workflow.ablation_alignment(config) == ["results/tables/alignment.tsv"]
    config["models"]["other"] = {"source": str(tiny_gpt2_dir), "pooling": "last"}
    config["models"]["other-ablated"] = {**config["models"]["other"], "ablation": {"block": 2}}
    assert workflow.ablated_models(config)["other-ablated"] == "other"


def test_the_config_check_refuses_what_cannot_run(tiny_gpt2_dir):
    from contextuality import workflow

    schema = REPO / "workflow/schemas/config.schema.yaml"
    config = _config(tiny_gpt2_dir)
    workflow.check_config(config, schema)
    with pytest.raises(ConfigError, match="partitions"):
        workflow.check_config({**config, "extraction": {"partitions": 2}}, schema)
    workflow.check_config(
        {**_config(tiny_gpt2_dir, value="zero"), "extraction": {"partitions": 2}}, schema
    )
    with pytest.raises(ConfigError, match="ablation.block: 9 beyond"):
        workflow.check_config(_config(tiny_gpt2_dir, block=9), schema)


def test_an_ablated_model_runs_through_the_workflow_beside_its_model(tmp_path, tiny_gpt2_dir):
    """The ablated copy is extracted, measured and aligned like any model: its embedding
    output is the model's, its block 1 is not, meta.json says what was replaced, and the
    ablation figure is drawn."""
    import json

    import pandas as pd
    from test_workflow import _config, _write_corpus
    from workflow_runs import snakemake, write_config

    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    source = str(tiny_gpt2_dir)
    ablation = {"block": 1, "target": "first_token", "calibration_sentences": 8}
    models = {"gpt2": {"source": source}, "gpt2-ablated": {"source": source, "ablation": ablation}}
    config = _config(corpus, models)
    config["measures"]["transforms"] = ["none"]
    write_config(tmp_path, config)
    result = snakemake(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "results/figures/ablation/gpt2-ablated.png").stat().st_size > 0
    meta = json.loads((tmp_path / "results/embeddings/gpt2-ablated/meta.json").read_text())
    width = meta["hidden_size"]
    assert meta["ablation"]["sentences"] == 8 and meta["ablation"]["value"] == "mean"
    passes = meta["n_sentences"] + meta["parity"]["inputs"]  # the parity check's run alone too
    assert meta["ablation"]["replaced"] == passes * width
    assert meta["settings"]["ablation"]["block"] == 1
    table = pd.read_csv(tmp_path / "results/tables/measures.tsv", sep="\t")
    anisotropy = table[table["measure"] == "anisotropy"].set_index(["model", "layer"])["raw"]
    assert anisotropy["gpt2", 0] == anisotropy["gpt2-ablated", 0]
    assert anisotropy["gpt2", 1] != anisotropy["gpt2-ablated", 1]
    alignment = pd.read_csv(tmp_path / "results/tables/alignment.tsv", sep="\t")
    same = alignment[(alignment["model_a"] != alignment["model_b"])]
    same = same[(same["layer_a"] == 0) & (same["layer_b"] == 0) & (same["occurrences"] == "all")]
    assert same["cka"].iloc[0] == pytest.approx(1.0, abs=1e-6)


def test_an_ablation_that_replaces_nothing_is_refused_before_anything_is_written(gpt2, tmp_path):
    """A random GPT-2 has no massive activation: ablating them replaces nothing, and the
    model would be the one without the ablation. Refused, naming the setting, before any
    shard is committed."""
    with pytest.raises(ConfigError, match=r"models.tiny-gpt2.ablation: no massive .* at block 1"):
        _extract(gpt2, tmp_path / "none", Ablation(1, "massive", "zero"))
    assert not [path for path in (tmp_path / "none").iterdir() if path.suffix == ".h5"]


def test_an_ablation_after_every_layer_extracted_is_refused(tmp_path):
    section = {"source": "s", "layers": [0, 2, 3], "ablation": {"block": 5, "value": "zero"}}
    with pytest.raises(ConfigError, match=r"ablation.block: 5, after the last layer extracted"):
        model_settings("m", section)
    assert model_settings("m", {**section, "layers": [0, 5]}).ablation.block == 5
    assert model_settings("m", {**section, "layers": None}).layers is None
