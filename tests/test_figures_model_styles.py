"""One colour and marker per model across every figure: a model's name decides them
(`figures.model_styles`), whichever other models a figure draws, and the figures that tell
models apart draw them so."""

from __future__ import annotations

import itertools
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib.colors import to_hex
from test_figures import _summary_table

from contextuality.figures import downstream, embedding, paper
from contextuality.figures.model_styles import MARKERS, PALETTE, model_colours, model_styles
from contextuality.figures.specs import FIGURES

ROOT = Path(__file__).resolve().parents[1]


def _same_colour(first: str, second: str) -> tuple[str, str]:
    """Two names whose CRC-32 picks the same colour (found by counting up)."""
    for number in itertools.count():
        name = f"model-{number}"
        if zlib.crc32(name.encode()) % len(PALETTE) == zlib.crc32(first.encode()) % len(PALETTE):
            return first, name
    raise AssertionError  # pragma: no cover


def test_a_model_keeps_its_style_whatever_else_a_figure_draws():
    alone = model_styles(["minilm"])["minilm"]
    for others in (["gemma3"], ["smollm2", "gemma3"], ["bert-base-cased", "gpt2", "elmo"]):
        assert model_styles([*others, "minilm"])["minilm"] == alone
    assert alone.colour == PALETTE[zlib.crc32(b"minilm") % len(PALETTE)]
    assert alone.marker in MARKERS


def test_two_models_that_pick_one_colour_get_two():
    first, second = _same_colour("minilm", "")
    styles = model_styles([second, first])
    assert styles[first].colour != styles[second].colour
    earlier, later = sorted((first, second))
    assert styles[earlier] == model_styles([earlier])[earlier]  # the earlier keeps its own
    colours = model_colours(f"m{k}" for k in range(len(PALETTE)))
    assert len(set(colours.values())) == len(PALETTE)  # ten models, ten colours


@pytest.mark.parametrize("config", sorted((ROOT / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_s_models_keep_their_own_colours(config):
    """So that a docs figure from one run and one from another colour a model alike."""
    models = list((yaml.safe_load(config.read_text()) or {}).get("models") or {})
    for name, style in model_styles(models).items():
        assert style == model_styles([name])[name], name


@pytest.fixture
def drawn(monkeypatch):
    kept = []

    def keep(figure, outputs, source):
        kept.append(figure)

    for module in (paper, downstream, embedding):
        monkeypatch.setattr(module, "save_figure", keep)
    yield kept
    for figure in kept:
        paper.plt.close(figure)


def test_the_paper_s_figures_and_the_downstream_figure_colour_a_model_alike(drawn):
    table = _summary_table(np.random.default_rng(0))
    paper.plot_figure(table, FIGURES[sorted(FIGURES)[0]], ["unused.png"])
    lines = drawn[0].axes[0].get_lines()
    expected = model_colours(["alpha", "beta"])
    for line in lines:
        model = next(name for name in expected if line.get_label().startswith(name))
        assert to_hex(line.get_color()) == expected[model]
    layers = range(3)
    scores = pd.DataFrame(
        [
            {"model": model, "pooling": "mean", "layer": layer, "n_layers": 2,
             "spearman": 0.1 * layer, "low": 0.0, "high": 0.3}
            for model in ("beta", "alpha")
            for layer in layers
        ]
    )  # fmt: skip
    downstream.plot_downstream(scores, {"alpha": pd.DataFrame(), "beta": pd.DataFrame()}, [], "")
    drawn_lines = [line for line in drawn[1].axes[0].get_lines() if line.get_label() in expected]
    assert {line.get_label() for line in drawn_lines} == set(expected)
    for line in drawn_lines:
        assert to_hex(line.get_color()) == expected[line.get_label()]
