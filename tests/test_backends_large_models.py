"""Settings for models larger than one GPU: weights loaded in bfloat16, and accelerate's
device_map placing the layers (here, on the CPU, the one device a test machine has)."""

from __future__ import annotations

import numpy as np
import pytest

from contextuality.backends import load_model, model_settings, recorded_settings
from contextuality.errors import ConfigError, ModelLoadError

from extraction import extract_every_layer

SENTENCES = ["The bank raised its rates again.", "She sat on the river bank.", "Rates fell."]


def test_defaults_leave_every_existing_models_settings_unchanged():
    """At their defaults the keys are not recorded, so no model's config hash moved."""
    spec = model_settings("m", {"source": "some/model"})
    assert "weights_dtype" not in recorded_settings(spec) and "device_map" not in recorded_settings(
        spec
    )
    large = model_settings(
        "m", {"source": "some/model", "weights_dtype": "bfloat16", "device_map": "auto"}
    )
    assert recorded_settings(large)["weights_dtype"] == "bfloat16"
    assert recorded_settings(large)["device_map"] == "auto"
    assert model_settings("m", recorded_settings(large)) == large


def test_bad_settings_are_refused():
    with pytest.raises(ConfigError, match="weights_dtype"):
        model_settings("m", {"source": "some/model", "weights_dtype": "int8"})
    with pytest.raises(ConfigError, match="device_map cannot be set for loader: elmo"):
        model_settings("m", {"source": "elmo-original", "loader": "elmo", "device_map": "auto"})


def test_device_map_gives_the_same_vectors(tiny_bert_dir, tmp_path, monkeypatch):
    """accelerate's placement moves the layers, not the arithmetic: identical vectors."""
    from transformers import AutoModel

    plain = load_model(model_settings("tiny", {"source": str(tiny_bert_dir)}))
    real = AutoModel.from_pretrained
    placements = []

    def recording(*arguments, **options):
        placements.append(options.get("device_map"))
        return real(*arguments, **options)

    monkeypatch.setattr(AutoModel, "from_pretrained", recording)
    mapped = load_model(
        model_settings("tiny", {"source": str(tiny_bert_dir), "device_map": "auto"})
    )
    assert placements == ["auto"]
    _, expected = extract_every_layer(plain, SENTENCES, tmp_path / "plain")
    _, got = extract_every_layer(mapped, SENTENCES, tmp_path / "mapped")
    np.testing.assert_array_equal(got, expected)


def test_bfloat16_weights_are_close_to_float32(tiny_bert_dir, tmp_path):
    """bfloat16 weights (8 significant bits) move every vector a little and no more."""
    source = {"source": str(tiny_bert_dir), "storage_dtype": "float32"}
    full = load_model(model_settings("tiny", source))
    half = load_model(model_settings("tiny", {**source, "weights_dtype": "bfloat16"}))
    assert next(half.model.parameters()).dtype.is_floating_point
    assert str(next(half.model.parameters()).dtype) == "torch.bfloat16"
    _, expected = extract_every_layer(full, SENTENCES, tmp_path / "full")
    _, got = extract_every_layer(half, SENTENCES, tmp_path / "half")
    assert got.dtype == np.float32
    difference = np.linalg.norm(got - expected, axis=2) / np.linalg.norm(expected, axis=2)
    assert 0 < difference.max() < 0.1


def test_device_map_without_accelerate_is_a_clear_error(tiny_bert_dir, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "accelerate" else real(name, *rest),
    )
    spec = model_settings("tiny", {"source": str(tiny_bert_dir), "device_map": "auto"})
    with pytest.raises(ModelLoadError, match=r"contextuality\[large\]"):
        load_model(spec)
