"""The tiny models the workflow trains (`contextuality.training`): the unigram line's known
value, the same checkpoints from the same seed whatever the last step asked, checkpoints
that load as any local model, and the config's checkpoint sources refused in one line
where they name a run or step the config does not train."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from contextuality import backends, workflow
from contextuality.configuration.schema import with_defaults
from contextuality.errors import ConfigError, InputDataError
from contextuality.training import RunSettings, TrainingSettings
from contextuality.training.events import probe_events
from contextuality.training.loop import saver, train, unigram_loss

# The sizes of a run that trains in seconds.
TINY_SIZES = {
    "layers": 1,
    "hidden_size": 16,
    "heads": 2,
    "intermediate_size": 32,
    "vocab_size": 300,
    "block": 16,
    "batch_size": 2,
    "held_out_blocks": 4,
    "evaluation_steps": [1],
}
TINY = TrainingSettings.from_config(TINY_SIZES)
WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "dogs",
    "ran",
    "over",
    "green",
    "hills",
    "and",
    "birds",
    "sang",
]


def _sentences(count: int, shift: int) -> list[str]:
    return [
        " ".join(WORDS[(k * 3 + j + shift) % len(WORDS)] for j in range(6)) + "."
        for k in range(count)
    ]


CORPORA = (_sentences(200, 0), _sentences(40, 5))


def _weights(run: RunSettings, steps: list[int]) -> dict[int, dict[str, torch.Tensor]]:
    """Each saved step's weights, kept in memory."""
    kept = {}

    def keep(record, model, tokenizer, data) -> None:
        kept[record["step"]] = {key: value.clone() for key, value in model.state_dict().items()}

    train(run, steps, CORPORA, TINY, keep)
    return kept


def test_the_unigram_line_is_the_add_one_smoothed_frequencies_cross_entropy():
    training = torch.tensor([[0, 0, 1], [0, 2, 2]])  # counts 3, 1, 2 of a 4-token vocabulary
    targets = torch.tensor([0, 3])
    # add-one: (4, 2, 3, 1) / 10; the mean of -log 0.4 and -log 0.1
    expected = -(math.log(0.4) + math.log(0.1)) / 2
    assert unigram_loss(training, targets, 4) == pytest.approx(expected)


@pytest.mark.parametrize("architecture", ["gpt2", "bert"])
def test_a_seed_gives_the_same_checkpoint_whatever_the_last_step(architecture):
    run = RunSettings(architecture, seed=3, warmup=2)
    short, longer = _weights(run, [0, 3]), _weights(run, [0, 3, 6])
    for step in (0, 3):
        assert all(torch.equal(short[step][key], longer[step][key]) for key in short[step])
    other = _weights(RunSettings(architecture, seed=4, warmup=2), [0])
    assert not all(torch.equal(short[0][key], other[0][key]) for key in short[0])
    assert not all(torch.equal(longer[3][key], longer[6][key]) for key in longer[3])


def test_the_loss_curve_holds_every_saved_and_evaluated_step_and_falls():
    curve = train(RunSettings("gpt2", seed=0, warmup=1), [0, 40], CORPORA, TINY, lambda *_: None)
    assert [record["step"] for record in curve] == [0, 1, 40]
    assert curve[0]["train_loss"] is None
    assert curve[-1]["held_out_loss"] < curve[0]["held_out_loss"]
    assert curve[-1]["tokens_seen"] == 40 * TINY.batch_size * TINY.block
    assert len({record["unigram_loss"] for record in curve}) == 1


def test_a_saved_checkpoint_loads_as_a_local_model_with_every_hidden_state(tmp_path):
    train(RunSettings("bert", seed=0, warmup=50), [0, 2], CORPORA, TINY, saver(tmp_path))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["step_0", "step_2"]
    spec = backends.model_settings("tiny", {"source": str(tmp_path / "step_2")})
    loaded = backends.load_model(spec)
    assert backends.model_layers(spec) == (0, 1)
    assert loaded.model.config.hidden_size == TINY.hidden_size
    assert set(loaded.file_checksums) >= {"model.safetensors", "config.json"}


def test_sentences_that_make_no_batch_are_refused():
    with pytest.raises(InputDataError, match="a run needs a batch of 2"):
        train(
            RunSettings("gpt2", seed=0, warmup=50),
            [0],
            (["one."], CORPORA[1]),
            TINY,
            lambda *_: None,
        )


def _planned(models: dict, steps: list[int] | None = None) -> dict:
    config = with_defaults(
        {
            "corpus": {"source": "text", "text": {"path": "x.txt"}},
            "training": {"runs": {"g": {"architecture": "gpt2"}}, "steps": steps or [0, 5]},
            "models": models,
        }
    )
    workflow.expand_sweeps(config)
    workflow.expand_trained_sources(config)
    return config


def test_a_checkpoint_source_becomes_its_run_s_directory_with_every_layer():
    config = _planned({"g": {"sweep": {"steps": [0, 5], "source": "training:g/step_{step}"}}})
    assert config["models"]["g.step5"]["source"] == "./results/training/g/checkpoints/step_5"
    assert config["models"]["g.step5"]["layers"] == [0, 1, 2, 3, 4]
    assert workflow.trained_model_inputs(config, "g.step0") == {
        "trained": "results/training/g/checkpoints"
    }
    assert workflow.outside_files(config, workflow.MODEL_SOURCE + "g.step0") == {}


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"source": "training:h/step_0"}, "no training run named 'h' under training.runs"),
        ({"source": "training:g/step_3"}, "training saves no step 3"),
        ({"source": "training:g/step_5", "layers": [0, 7]}, r"beyond the trained model's hidden"),
    ],
)
def test_a_checkpoint_the_config_does_not_train_is_refused(section, message):
    with pytest.raises(ConfigError, match=message):
        _planned({"m": section})


def test_a_layer_s_events_are_read_off_its_probes():
    steps = [0, 1, 2, 3, 4, 5]
    table = pd.DataFrame(
        {
            "run": "r",
            "architecture": "gpt2",
            "seed": 0,
            "warmup": 3,
            "layer": 1,
            "step": steps,
            "anisotropy": [0.1, 0.3, 0.9, 0.5, 0.4, 0.2],
            "cos_mean_unigram": [0.0, 0.2, 0.95, 0.7, 0.6, 0.5],
            "cos_pc1_unigram": [0.1, 0.1, 0.8, 0.2, 0.2, 0.2],
            "held_out_loss": [9.0, 8.0, 7.5, 7.1, 6.9, 6.5],
            "unigram_loss": 7.0,
        }
    ).sample(frac=1, random_state=0)  # the events do not depend on the rows' order
    events = probe_events(table).iloc[0]
    assert events["peak_step"] == 2 and events["peak_anisotropy"] == 0.9
    assert events["half_peak_step"] == 2  # 0.9 / 2 = 0.45: first exceeded at step 2
    assert events["half_rise_step"] == 2  # (0.1 + 0.9) / 2 = 0.5: at step 2
    assert events["unigram_crossing"] == 4 and events["warmup_end"] == 3
    assert events["cos_mean_unigram_at_peak"] == 0.95 and events["cos_pc1_unigram_at_peak"] == 0.8
    assert events["cos_mean_unigram_last"] == 0.5
