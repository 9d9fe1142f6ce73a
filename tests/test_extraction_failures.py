"""What a user is told when a model gives non-finite vectors or needs its own code: the
cause that applies on this device and the setting that changes it, never another's."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from contextuality import backends
from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.errors import ModelLoadError, NonFiniteValueError
from contextuality.extraction.forward import non_finite_cause
from contextuality.extraction.units import sentence_units

from extraction import extract_into_shards

SENTENCES = ["The cat sat on the mat."]


def _extract(loaded, tmp_path) -> str:
    """The NonFiniteValueError message of extracting layers 0 and 2 with `loaded`."""
    paths = {layer: tmp_path / f"layer{layer}.h5" for layer in (0, 2)}
    with pytest.raises(NonFiniteValueError) as caught:
        extract_into_shards(
            loaded, sentence_units(loaded, SENTENCES), (0, 2), paths, {"index_checksum": "i"}
        )
    return str(caught.value)


def test_non_finite_weights_are_named(tiny_bert_dir, tmp_path):
    loaded = load_model(ModelSettings(name="bert", source=str(tiny_bert_dir)))
    with torch.no_grad():
        loaded.model.embeddings.LayerNorm.weight[3] = float("nan")
    message = _extract(loaded, tmp_path)
    assert "weights hold ±inf or NaN (first in embeddings.LayerNorm.weight)" in message
    assert "cuda_dtype" not in message


def test_only_an_autocast_overflow_suggests_cuda_dtype():
    model = torch.nn.Linear(3, 2)
    spec = ModelSettings(name="m", source="m")
    half = non_finite_cause(spec, model, "cuda", "float16")
    assert "set models.m.cuda_dtype to bfloat16 or float32" in half
    assert "cuda_dtype to float32" in non_finite_cause(spec, model, "cuda", "bfloat16")
    for device in ("cuda", "cpu"):
        assert "cuda_dtype" not in non_finite_cause(spec, model, device, "float32")
    half_weights = dataclasses.replace(spec, weights_dtype="bfloat16")
    cause = non_finite_cause(half_weights, model, "cpu", "float32")
    assert "set models.m.weights_dtype: float32" in cause


def test_a_model_with_its_own_code_asks_for_trust_remote_code(tmp_path):
    """transformers refuses a config whose auto_map names code of its own unless
    trust_remote_code is set: the message names that setting, not the hub."""
    config = {
        "model_type": "own-code",
        "auto_map": {"AutoConfig": "configuration_own.OwnConfig"},
        "num_hidden_layers": 2,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec = backends.model_settings("own", {"source": str(tmp_path)})
    with pytest.raises(ModelLoadError) as caught:
        backends.count_hidden_layers(spec)
    message = str(caught.value)
    assert "set models.own.trust_remote_code: true" in message and "hub" not in message
    trusted = backends.model_settings("own", {"source": str(tmp_path), "trust_remote_code": True})
    with pytest.raises(ModelLoadError, match="configuration_own.py") as caught:
        backends.count_hidden_layers(trusted)  # allowed, but the code is not there
    assert "trust_remote_code: true" not in str(caught.value)


class _RunsCode:
    """Pickles as a call of print: what a malicious weights file would hold."""

    def __reduce__(self):
        return (print, ("code ran",))


def test_pickled_weights_holding_code_are_refused_in_words(tiny_bert_dir, tmp_path, capsys):
    import shutil

    directory = shutil.copytree(tiny_bert_dir, tmp_path / "pickled")
    (directory / "model.safetensors").unlink()
    torch.save({"embeddings.word_embeddings.weight": _RunsCode()}, directory / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="hold objects other than tensors") as caught:
        load_model(ModelSettings(name="bert", source=str(directory)))
    assert "weights_only" not in str(caught.value)
    assert "code ran" not in capsys.readouterr().out


def test_damaged_local_weights_ask_for_the_files_again_not_the_hub(tiny_bert_dir, tmp_path):
    import shutil

    directory = shutil.copytree(tiny_bert_dir, tmp_path / "damaged")
    (directory / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(ModelLoadError, match="may be damaged or incomplete") as caught:
        load_model(ModelSettings(name="bert", source=str(directory)))
    assert "hub" not in str(caught.value)
