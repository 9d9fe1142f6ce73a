"""Checkpoint sweeps in config (`workflow.sweeps`): one model per training step."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextuality import workflow
from contextuality.errors import ConfigError


def test_a_sweep_becomes_one_model_per_step_in_step_order():
    config = {
        "models": {
            "minilm": {"source": "m"},
            "pythia": {
                "source": "EleutherAI/pythia-70m",
                "layers": [0, 3],
                "sweep": {"steps": [1000, 0, 143000], "revision": "step{step}"},
            },
            "local": {"sweep": {"steps": [50, 0], "source": "ckpt/step_{step}"}},
        }
    }
    workflow.expand_sweeps(config)
    assert list(config["models"]) == [
        "minilm",
        "pythia.step0",
        "pythia.step1000",
        "pythia.step143000",
        "local.step0",
        "local.step50",
    ]
    assert config["models"]["pythia.step1000"] == {
        "source": "EleutherAI/pythia-70m",
        "layers": [0, 3],
        "revision": "step1000",
    }
    assert config["models"]["local.step50"] == {"source": "ckpt/step_50"}
    assert workflow.sweeps(config) == {
        "pythia": {"pythia.step0": 0, "pythia.step1000": 1000, "pythia.step143000": 143000},
        "local": {"local.step0": 0, "local.step50": 50},
    }
    workflow.expand_sweeps(config)  # expanding again changes nothing
    assert len(config["models"]) == 6


SCHEMA = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ({"steps": [], "source": "c/{step}"}, "steps: .* should be non-empty"),
        ({"steps": [1, 1], "source": "c/{step}"}, "steps: .* non-unique"),
        ({"steps": [-1], "source": "c/{step}"}, "steps.0: -1 is less than the minimum"),
        ({"steps": [1, 2]}, "should be non-empty|does not have enough properties"),
        ({"steps": [1, 2], "revision": "main"}, "revision: 'main' does not match"),
        ({"steps": [1], "source": "c/{step}", "every": 2}, "'every' was unexpected"),
        ([1, 2], "is not of type 'object'"),
    ],
)
def test_a_malformed_sweep_is_one_line_naming_it(sweep, message):
    config = {"models": {"tiny": {"source": "x", "sweep": sweep}}}
    with pytest.raises(ConfigError, match=f"models.tiny.sweep.*({message})"):
        workflow.check_config(config, SCHEMA)


@pytest.mark.parametrize("template", ["c/{step}/{run}", "c/{0.__class__}{step}", "c/{step}/{"])
def test_a_template_names_step_alone(template):
    config = {"models": {"tiny": {"sweep": {"steps": [1, 2], "source": template}}}}
    with pytest.raises(ConfigError, match="models.tiny.sweep.source: a template may name"):
        workflow.check_config(config, SCHEMA)


def test_a_format_spec_pads_the_step():
    config = {"models": {"tiny": {"sweep": {"steps": [7, 20], "source": "c/{step:04d}"}}}}
    workflow.expand_sweeps(config)
    assert config["models"]["tiny.step7"] == {"source": "c/0007"}


@pytest.mark.parametrize("order", ["explicit first", "sweep first"])
def test_a_checkpoint_named_like_a_model_is_refused(order):
    models = {
        "ck.step1": {"source": "elsewhere"},
        "ck": {"sweep": {"steps": [1, 2], "source": "c/{step}"}},
    }
    if order == "sweep first":
        models = dict(reversed(list(models.items())))
    with pytest.raises(ConfigError, match=r"models.ck.step1: also a checkpoint of models.ck"):
        workflow.check_config({"models": models}, SCHEMA)


def test_a_single_checkpoint_is_no_sweep():
    config = {"models": {"tiny": {"sweep": {"steps": [5], "source": "c/{step}"}}}}
    workflow.expand_sweeps(config)
    assert list(config["models"]) == ["tiny.step5"]
    assert workflow.sweeps(config) == {}


def test_cka_pairs_a_sweep_s_consecutive_checkpoints_and_every_other_model():
    config = {
        "models": {
            "other": {"source": "o"},
            "run": {"sweep": {"steps": [0, 5, 9], "source": "c/{step}"}},
        },
        "geometry": {"alignment_between_models": True},
    }
    workflow.expand_sweeps(config)
    assert workflow.alignment_model_pairs(config) == [
        ("other", "run.step0"),
        ("other", "run.step5"),
        ("other", "run.step9"),
        ("run.step0", "run.step5"),
        ("run.step5", "run.step9"),
    ]
