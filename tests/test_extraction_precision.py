"""The forward pass's precision on a GPU (`forward.precision`), decided from the model as
loaded: weights held in the forward dtype run as they are, widen to float32 for a batch
run again after an overflow and come back bit for bit, and a pass in another half
precision is refused. The GPU itself is not needed for these decisions: a device whose
type is ``cuda`` is all `precision` reads (tests/test_cuda.py runs them on one)."""

from __future__ import annotations

import copy
import dataclasses
from types import SimpleNamespace

import pytest
import torch

from contextuality.backends import load_model
from contextuality.backends.base import weights_dtype_on
from contextuality.backends.settings import ModelSettings
from contextuality.extraction.forward import precision, widened

ON_A_GPU = SimpleNamespace(type="cuda")


@pytest.fixture(scope="module")
def bert(tiny_bert_dir):
    return load_model(ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)))


def _held_in(bert, dtype: torch.dtype):
    """The model with its weights held in `dtype`, as a GPU load holds them."""
    model = copy.deepcopy(bert.model).to(dtype)
    return dataclasses.replace(bert, model=model, holds_forward_dtype=True)


def _state(model) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in model.state_dict().items()}


def test_weights_widen_to_float32_for_a_rerun_and_come_back_bit_for_bit(bert):
    loaded = _held_in(bert, torch.bfloat16)
    before = _state(loaded.model)
    parameter = next(loaded.model.parameters())
    with precision(loaded, ON_A_GPU, "float32"):
        assert {p.dtype for p in loaded.model.parameters()} == {torch.float32}
        assert next(loaded.model.parameters()) is parameter  # a parameter stays one
        widened_values = _state(loaded.model)
    after = _state(loaded.model)
    for name, value in before.items():
        assert after[name].dtype == value.dtype and torch.equal(after[name], value)
        assert torch.equal(widened_values[name].to(value.dtype), value)  # exact widening


def test_weights_run_as_held_and_another_half_precision_is_refused(bert):
    loaded = _held_in(bert, torch.float16)
    before = _state(loaded.model)
    with precision(loaded, ON_A_GPU, "float16"):
        assert {p.dtype for p in loaded.model.parameters()} == {torch.float16}
    refused = pytest.raises(ValueError, match="held in float16.*cuda_dtype: bfloat16")
    with refused, precision(loaded, ON_A_GPU, "bfloat16"):
        pass
    assert all(torch.equal(value, before[name]) for name, value in _state(loaded.model).items())


def test_widening_restores_weights_even_after_an_error(bert):
    loaded = _held_in(bert, torch.float16)
    before = _state(loaded.model)
    with pytest.raises(RuntimeError, match="inside"), widened(loaded.model):
        raise RuntimeError("inside")
    assert all(torch.equal(value, before[name]) for name, value in _state(loaded.model).items())


def test_on_the_cpu_the_weights_run_as_loaded(bert):
    with precision(bert, torch.device("cpu"), "float32"):
        assert {p.dtype for p in bert.model.parameters()} == {torch.float32}


@pytest.mark.parametrize(
    ("settings", "on_gpu", "elsewhere"),
    [
        ({}, "float16", "float32"),
        ({"cuda_dtype": "bfloat16"}, "bfloat16", "float32"),
        ({"weights_dtype": "bfloat16"}, "float16", "bfloat16"),
        ({"autocast": True}, "float32", "float32"),
        ({"autocast": True, "weights_dtype": "bfloat16"}, "bfloat16", "bfloat16"),
    ],
)
def test_the_weights_are_held_in_the_forward_dtype_on_a_gpu(settings, on_gpu, elsewhere):
    spec = ModelSettings(name="m", source="some/model", **settings)
    assert weights_dtype_on(spec, "cuda") == on_gpu
    assert weights_dtype_on(spec, "cpu") == elsewhere
