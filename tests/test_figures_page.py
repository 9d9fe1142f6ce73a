"""Every figure of the package, drawn from a small table shaped like a real run's, read as a
page shows it: its text on the canvas, a colour bar wherever colour carries a value, a size
and a count of panels a page holds, layer 0 named as the embeddings on every layer axis,
and a layer without a value left as a gap in a line over layers, not bridged."""

from __future__ import annotations

import itertools
import re
from functools import partial

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.transforms import Bbox

from contextuality.benchmarks import BENCHMARKS
from contextuality.figures import (
    ablation,
    alignment,
    best_layers,
    degeneration,
    dimension,
    embedding,
    geometry,
    paper,
    sweeps,
)
from contextuality.figures.legends import legend_over_data
from contextuality.figures.specs import DIMENSION_FIGURE, FIGURES
from contextuality.geometry.alignment import ALIGNMENT_COLUMNS
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.baselines import BASELINES
from contextuality.geometry.best_layers import BEST_LAYER_COLUMNS
from contextuality.reference import LAYER_STATISTICS, WORD_TABLES

# Three models as config/instruments.yaml stores them: an encoder's 6 layers, a decoder's
# every third of 30, and an ablated copy of the decoder (its depth, its layers).
MODELS = {"minilm": list(range(7)), "smollm2": list(range(0, 31, 3))}
MODELS["smollm2-zeroed"] = MODELS["smollm2"]
HOLE = ("smollm2-zeroed", 15)  # the middle layer the gap check leaves without a value
STATISTICS = [*LAYER_STATISTICS, *(name.removesuffix(".csv") for name in WORD_TABLES)]
REFERENCE_HOLE = (STATISTICS[0], 6)  # the published comparison: BERT's layers 0–12
# A summary table's value columns, each with its offset from the value.
VALUES = {
    f"{column}{end}": offset
    for column in ("raw", "baseline", "adjusted")
    for end, offset in (("", 0.0), ("_low", -0.05), ("_high", 0.05))
}


def _punch(table: pd.DataFrame, hole: str | None, where, columns) -> pd.DataFrame:
    """`table` with the rows `where` picks left without `columns`' values (hole "nan") or
    without rows (hole "absent"); as it is without a hole."""
    if hole == "absent":
        return table[~where]
    if hole == "nan":
        return table.assign(**{column: table[column].mask(where) for column in columns})
    return table


def _summary(measures, models=MODELS, transforms=("none",), hole=None) -> pd.DataFrame:
    """A summary table (`steps.measures_table`'s columns) of `measures` at every layer of
    `models`, each value in (0, 1) with an interval; `HOLE`'s layer punched by `hole`."""
    rows = [
        {"model": model, "transform": transform, "measure": measure, "layer": layer, "n": 50}
        | {"n_layers": max(layers), "relative_layer": layer / max(layers)}
        | {column: 0.2 + 0.1 * k + 0.4 * layer / max(layers) + d for column, d in VALUES.items()}
        for k, (model, layers) in enumerate(models.items())
        for transform, measure, layer in itertools.product(transforms, measures, layers)
    ]
    table = pd.DataFrame(rows)
    return _punch(table, hole, (table["model"] == HOLE[0]) & (table["layer"] == HOLE[1]), VALUES)


def _figure(spec, hole=None):
    paper.plot_figure(_summary([series.measure for series in spec.series], hole=hole), spec, [])


def _transforms(hole=None):
    table = _summary(["selfsim", "anisotropy"], transforms=("none", "center", "abtt"), hole=hole)
    paper.plot_transforms(table, [])


def _reference(hole=None):
    table = pd.DataFrame(itertools.product(STATISTICS, range(13)), columns=["statistic", "layer"])
    k, layer = table["statistic"].map(STATISTICS.index), table["layer"]
    table = table.assign(published=0.1 * k + 0.05 * layer, ours=0.1 * k + 0.04 * layer)
    where = (table["statistic"] == REFERENCE_HOLE[0]) & (layer == REFERENCE_HOLE[1])
    paper.plot_reference(_punch(table, hole, where, ["ours"]), "bert-base-cased", [])


def _word_benchmarks():
    rows = [
        {"source": "this run", "protocol": "standard", "model": model, "method": "pc1"}
        | {"layer": layer, "benchmark": name, "value": 0.3 + 0.01 * k, "coverage": 0.9}
        for model, layers in MODELS.items()
        for layer in (layers[0], layers[-1])
        for k, name in enumerate(BENCHMARKS)
    ]
    rows += [
        {"source": "quoted: Ethayarajh (2019) Table 1", "protocol": "paper", "model": "BERT"}
        | {"method": "pc1", "layer": 1, "benchmark": name, "value": 0.2, "coverage": np.nan}
        for name in ("simlex999", "men")
    ]
    paper.plot_word_benchmarks(pd.DataFrame(rows), [])


def _norm_by_rank():
    rank = np.arange(1, 301)
    words = {
        layer: pd.DataFrame(
            {"frequency_rank": rank, "occurrence_norm": 20 + layer + 9 / rank}
        ).assign(static_norm=lambda table: table["occurrence_norm"] - 10)
        for layer in MODELS["smollm2"]
    }
    degeneration.plot_norm_by_rank(words, [], title="smollm2, transform none")


def _knn_by_bin():
    bins = [(0, 10), (10, 50), (50, 500), (500, 1000), (1000, pd.NA)]
    rows = [
        {"bin": f"{low}+", "rank_low": low, "rank_high": high, "vectors": vectors}
        | {"layer": layer, "knn_distance": 1.0 + place + layer / 10}
        for place, (low, high) in enumerate(bins)
        for vectors in ("static", "occurrences")
        for layer in MODELS["smollm2"]
    ]
    degeneration.plot_knn_by_bin(pd.DataFrame(rows), [], 10, title="smollm2, transform none")


def _cone():
    rng = np.random.default_rng(0)
    columns = {"x": rng.uniform(0, 5, 200), "y": rng.normal(0, 1, 200), "explained_x": 0.8}
    columns |= {"frequency_rank": rng.integers(1, 5000, 200), "explained_y": 0.05}
    cones = {layer: pd.DataFrame(columns) for layer in MODELS["smollm2"]}
    degeneration.plot_cone(cones, [], title="smollm2, transform none")


def _dimension_scales():
    scales = {"twonn": (4000, 2000, 1000, 500, 250), "gride": (1, 2, 4, 8, 16)}
    rows = [
        {"model": model, "layer": layer, "estimator": estimator, "scale": scale, "radius": place}
        | {"dimension": 5 + layer / 3 + place, "on_plateau": 1 <= place <= 3, "n": 4000}
        | {"dimension_low": 4 + layer / 3 + place, "dimension_high": 6 + layer / 3 + place}
        for model, layers in MODELS.items()
        for layer in layers
        for estimator, values in scales.items()
        for place, scale in enumerate(values)
    ]
    dimension.plot_dimension_scales(pd.DataFrame(rows), [])


def _pairs(baselines=()) -> list:
    """Every pair of models once (a model with itself too), then each with each baseline."""
    names = list(MODELS)
    pairs = [(a, b) for index, a in enumerate(names) for b in names[index:]]
    return [
        (a, b, *layers)
        for a, b in [*pairs, *itertools.product(names, baselines)]
        for layers in itertools.product(MODELS[a], MODELS.get(b, [0]))
    ]


def _cka():
    rng = np.random.default_rng(1)
    rows = [
        {"model_a": a, "model_b": b, "layer_a": layer_a, "layer_b": layer_b}
        | {"occurrences": kind, "cka": rng.uniform(), "sampled": True, "n_rows": 5000}
        for a, b, layer_a, layer_b in _pairs()
        for kind in ("all", "position>0")
    ]
    geometry.plot_cka(pd.DataFrame(rows), [])


def _alignment_table() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    rows = []
    for a, b, layer_a, layer_b in _pairs(BASELINES):
        row = {"model_a": a, "layer_a": layer_a, "model_b": b, "layer_b": layer_b}
        row |= {"transform": "none", "occurrences": "all", "k": 10, "n_rows": 5000}
        for record in ALIGNMENT_MEASURES:
            row[record.name] = rng.uniform(*record.limits)
            row[f"null_{record.name}"] = row[f"threshold_{record.name}"] = 0.05
        rows.append(row)
    return pd.DataFrame(rows, columns=ALIGNMENT_COLUMNS)


def _best_layers():
    rows = [
        {"model": model, "layer": layer, "other_model": other, "transform": "none"}
        | {"occurrences": "all", "measure": record.name, "best_layer": MODELS[other][-1]}
        | {"value": 0.5, "low": 0.4, "high": 0.6, "null": 0.05, "stays_best": 0.9}
        | {"best_threshold": 0.1}
        for model, other in itertools.permutations(MODELS, 2)
        for layer in MODELS[model]
        for record in alignment.PANELS
    ]
    table = pd.DataFrame(rows, columns=BEST_LAYER_COLUMNS)
    best_layers.plot_best_layers(table, _alignment_table(), [])


def _geometry_transforms(hole=None):
    transforms = ("none", "drop_rogue")
    measures = _summary(["intrinsic_dimension[twonn]"], transforms=transforms, hole=hole)
    rows = [
        {"model_a": model, "model_b": model, "layer_a": a, "layer_b": b, "transform": transform}
        | {"occurrences": kind, "cka": 0.8, "null_cka": 0.1, "mutual_knn": 0.5}
        | {"null_mutual_knn": 0.05}
        for model, layers in MODELS.items()
        for transform, kind in itertools.product(transforms, ("all", "position>0"))
        for a, b in zip(layers, layers[1:], strict=False)
    ]
    geometry.plot_geometry_transforms(measures, pd.DataFrame(rows), [])


def _positions():
    buckets = (("0", 0), ("1", 1), ("2–3", 2), ("4–7", 4), ("8+", 8))
    tokens = {"minilm": (("[CLS]", 0), ("[SEP]", -1)), "smollm2": (("<bos>", 0),)}
    rows = [
        {"model": model, "transform": "none", "layer": layer, "bucket": bucket}
        | {"first_position": first, "mean_norm": 10 + layer, "anisotropy": 0.3}
        | {"kind": "word position"}
        for model, layers in MODELS.items()
        for layer in layers
        for bucket, first in buckets
    ]
    rows += [
        {"model": model, "transform": "none", "layer": layer, "bucket": token}
        | {"first_position": first, "mean_norm": 900.0, "anisotropy": 0.9, "kind": "special token"}
        for model, special in tokens.items()
        for layer in MODELS[model]
        for token, first in special
    ]
    geometry.plot_positions(pd.DataFrame(rows), [])


def _series(by_depth: bool):
    measures = [measure for measure, _, _ in sweeps.SERIES_PANELS]
    if by_depth:  # a family of sizes: models of different depths against parameters
        models = {"smollm2-135m": MODELS["smollm2"], "smollm2-360m": list(range(0, 33, 4))}
        models["smollm2-1.7b"] = list(range(0, 25, 3))
        x = dict(zip(models, (134_515_008, 361_821_120, 1_711_376_384), strict=True))
        series = sweeps.ModelSeries("Model family: smollm2", "parameters", x, by_depth=True)
    else:  # a checkpoint sweep: one model's layers against training step
        x = {f"step-{step}": step for step in (0, 1000, 10_000, 100_000, 400_000)}
        models = {name: MODELS["minilm"] for name in x}
        series = sweeps.ModelSeries("Checkpoint sweep: minilm", "training step", x)
    sweeps.plot_series(_summary(measures, models=models), series, [])


def _ablation(hole=None):
    base, ablated = "smollm2", "smollm2-zeroed"
    measures = _summary([measure for measure, _, _ in ablation.MEASURE_PANELS], hole=hole)
    pair = pd.DataFrame(
        {"model_a": base, "layer_a": MODELS[base], "model_b": ablated, "layer_b": MODELS[base]}
        | {name: 0.9 - 0.1 * place for place, name in enumerate(ablation.SAME_LAYER_LINES)}
        | {"occurrences": "all", "null_cka": 0.05, "n_rows": 5000}
    )
    ablation.plot_ablation(measures, pair, base, ablated, 12, [])


def _embedding_matrices():
    tied = {"minilm": False, "smollm2": True}  # their spectra and norms of two shapes
    spectra = pd.DataFrame(
        {"model": model, "matrix": "input", "centered": centered, "rank": rank}
        | {"share": 0.2 / rank ** (1.5 if tied[model] else 0.5)}
        for model in tied
        for centered in (False, True)
        for rank in range(1, 101)
    )
    bins = [("1–100", 1, 100), ("101–1,000", 101, 1000), ("1,001+", 1001, pd.NA)]
    bins.append(("unseen", pd.NA, pd.NA))
    norms = pd.DataFrame(
        {"model": model, "matrix": "input", "frequency_corpus": corpus, "bin": label}
        | {"rank_low": low, "rank_high": high, "n_tokens": 100 * (place + 1)}
        | {"mean_count": 10.0 / (place + 1), "mean_norm": 1.0 + 0.05 * place * (-1) ** tied[model]}
        | {"cone_cosine": 0.1}
        for model in tied
        for corpus in ("lee-background", "sts-2012-2016")
        for place, (label, low, high) in enumerate(bins)
    )
    embedding.plot_embedding_matrices(spectra, norms.astype({"rank_low": "Int64"}), [])


# Each figure, named by the function that draws it, and what draws it from a small table.
DRAW = {
    f"plot_figure[{spec.name}]": partial(_figure, spec)
    for spec in [*FIGURES.values(), DIMENSION_FIGURE]
}
DRAW |= {
    f"plot{builder.__name__}": builder
    for builder in (_transforms, _reference, _word_benchmarks, _norm_by_rank, _knn_by_bin)
    + (_cone, _dimension_scales, _cka, _geometry_transforms, _positions, _best_layers, _ablation)
    + (_embedding_matrices,)
}
DRAW["plot_alignment"] = lambda: alignment.plot_alignment(_alignment_table(), [])
DRAW |= {f"plot_series[{kind}]": partial(_series, kind == "family") for kind in ("sweep", "family")}

# The figures drawing lines over layers, each with (the start of the titles of the panels,
# the model) whose lines lack a value, and at which layer. Of the geometry under the
# corrections, only the intrinsic dimension is a value of one layer: CKA and mutual k-NN
# join each stored layer to the stored one before it, which no missing layer interrupts.
# The measures' figures draw these models, of different depths, at relative depth.
RELATIVE_HOLE = HOLE[1] / max(MODELS[HOLE[0]])
GAPS = {name: ("", HOLE[0], RELATIVE_HOLE) for name in DRAW if name.startswith("plot_figure[")}
GAPS |= {
    "plot_transforms": (f"{HOLE[0]}:", None, HOLE[1]),
    "plot_geometry_transforms": (f"{HOLE[0]}: {geometry.correction_panels()[0][2]}", None, HOLE[1]),
    "plot_reference": (REFERENCE_HOLE[0], None, REFERENCE_HOLE[1]),
    "plot_ablation": ("", HOLE[0], HOLE[1]),
}


@pytest.fixture(scope="module")
def draw():
    """`draw(name, hole)`: the figure `DRAW[name]` draws (with `hole`), kept open to be read:
    each module's `save_figure` records it; drawn once, closed after the module."""
    captured, kept = [], {}

    def drawn(name: str, hole: str | None = None):
        if (name, hole) not in kept:
            captured.clear()
            DRAW[name](**({"hole": hole} if hole else {}))
            (kept[name, hole],) = captured
        return kept[name, hole]

    def keep(figure, outputs, source):
        paper.finish_figure(figure)  # as `save_figure` does before its first file
        captured.append(figure)

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(matplotlib.rcParams, "figure.max_open_warning", 0)  # all kept open
        for module in (ablation, alignment, best_layers, degeneration, dimension, geometry):
            patch.setattr(module, "save_figure", keep)
        patch.setattr(paper, "save_figure", keep)
        patch.setattr(embedding, "save_figure", keep)
        patch.setattr(sweeps, "save_figure", keep)
        yield drawn
    for figure in kept.values():
        paper.plt.close(figure)


def _is_bar(axes) -> bool:
    return axes.get_label() == "<colorbar>"


@pytest.mark.parametrize("name", DRAW)
def test_every_text_lies_on_the_canvas(draw, name):
    """Each panel's title, axis labels, tick labels and legend, and the figure's own title,
    labels and legends, lie inside the figure as its file is first drawn: none is cut at
    an edge of the page."""
    figure = draw(name)
    figure.canvas.draw()
    renderer, edge = figure.canvas.get_renderer(), figure.bbox.padded(1)  # a pixel's rounding
    shown = [axes for axes in figure.axes if axes.get_visible()]
    outside = [
        getattr(artist, "get_title", artist.__str__)() or str(artist)
        for artist in [*shown, *figure.texts, *figure.legends]
        if Bbox.union([artist.get_tightbbox(renderer), edge]).bounds != edge.bounds
    ]
    assert not outside, f"{name}, text outside the canvas: {outside}"


@pytest.mark.parametrize("name", DRAW)
def test_no_legend_lies_over_the_data(draw, name):
    """No panel's legend covers a line's points or segments, or a scatter's markers."""
    figure = draw(name)
    covering = [panel.get_title() or str(panel) for panel in figure.axes if legend_over_data(panel)]
    assert not covering, f"{name}: a legend over the data of {covering}"


def _colour_key(mappable) -> tuple:
    return mappable.get_cmap().name, *np.round(mappable.get_clim(), 9)


@pytest.mark.parametrize("name", DRAW)
def test_every_colour_that_carries_a_value_has_its_colour_bar(draw, name):
    """Every image, and every scatter coloured by a value, is read through a colour bar of
    its colour map and limits (one bar may serve panels that share them); an image of one
    colour (a mask: the low-coverage cells of Table 1) carries no value and needs none."""
    figure = draw(name)
    # A colour bar's axes keep it as `_colorbar`; its mappable may stand apart (plot_cone).
    bars = {_colour_key(axes._colorbar.mappable) for axes in figure.axes if _is_bar(axes)}
    unread = [
        axes.get_title()
        for axes in figure.axes
        if not _is_bar(axes)
        for mappable in [*axes.get_images(), *axes.collections]
        if mappable.get_array() is not None
        and mappable.get_cmap().N > 1
        and _colour_key(mappable) not in bars
    ]
    assert not unread, f"{name}, coloured without a colour bar: panels {unread}"


@pytest.mark.parametrize("name", DRAW)
def test_the_figure_fits_a_page(draw, name):
    """At most 20 × 24 inches and 12 visible panels (colour bars aside): a page shows it
    whole, each panel still large enough to read."""
    figure = draw(name)
    width, height = figure.get_size_inches()
    panels = [axes for axes in figure.axes if axes.get_visible() and not _is_bar(axes)]
    assert width <= 20 and height <= 24, f"{name}, size {width:.1f} × {height:.1f} in"
    assert len(panels) <= 12, f"{name}, {len(panels)} panels"


# The quantity on an axis is the layer where "layer" is its label's first word, or its
# second after a model's name: "layer", "layer / number of layers", "smollm2 layer (…)".
# Labels naming a value of a pair of layers are left alone: "linear CKA with the previous
# layer" (plot_geometry_transforms), "alignment at the same layer" (plot_ablation); so is
# a panel titled "layer 3" (plot_norm_by_rank, plot_cone), a title and not an axis.
LAYER_AXIS = re.compile(r"^(?:\S+ )?layers?\b")


@pytest.mark.parametrize("name", DRAW)
def test_a_layer_axis_names_layer_0_as_the_embeddings(draw, name):
    """Every axis whose quantity is the layer says that layer 0 is the embedding output,
    which a reader of a layer index cannot otherwise tell from the first block's."""
    figure = draw(name)
    labels = [
        label
        for axes in figure.axes
        if axes.get_visible()
        for label in (axes.get_xlabel(), axes.get_ylabel())
        if LAYER_AXIS.match(label) and "embedding" not in label
    ]
    assert not labels, f"{name}, layer axes without the embeddings: {sorted(set(labels))}"


def _lines(figure, title: str = "", model: str | None = None) -> list:
    """The labelled lines (not a rule or a null, unlabelled) of the panels of `figure`
    whose title starts with `title`, of `model` only (its label's first word) if given."""
    return [
        line
        for axes in figure.axes
        if axes.get_title().startswith(title)
        for line in axes.get_lines()
        if not line.get_label().startswith("_") and model in (None, line.get_label().split()[0])
    ]


@pytest.mark.parametrize("name", [f"{n}|{h}" for n in GAPS for h in ("nan", "absent")])
def test_a_layer_without_a_value_is_a_gap_in_its_line(draw, name):
    """One model's middle layer left NaN (|nan), or without rows where a model of its depth
    has it (|absent): each of its lines stops on either side of that layer rather than
    joining its neighbours, which would show a value nobody measured."""
    figure_name, hole = name.split("|")
    title, model, missing = GAPS[figure_name]
    lines = _lines(draw(figure_name, hole), title, model)
    assert lines, f"{name}, gap: no line of the model lacking layer {missing}"
    for line in lines:
        x, y = (np.asarray(data, dtype=float) for data in line.get_data())
        finite = np.isfinite(x) & np.isfinite(y)
        assert (finite & (x < missing)).any() and (finite & (x > missing)).any(), name
        joined = [
            (x[i], x[i + 1])
            for i in range(len(x) - 1)
            if finite[i] and finite[i + 1] and min(x[i], x[i + 1]) < missing < max(x[i], x[i + 1])
        ]
        assert not joined, f"{name}, gap: {line.get_label()!r} joins {joined} across {missing}"


def test_the_norms_panel_draws_no_line_across_a_bin_a_corpus_has_no_token_in(monkeypatch):
    """A corpus without tokens in a frequency bin (the Lee corpus past rank 10,000) has a
    gap there, its line not joining the bins on either side."""
    kept = []
    monkeypatch.setattr(
        embedding, "save_figure", lambda figure, outputs, source: kept.append(figure)
    )
    bins = ["1–100", "101–1,000", "1,001+", "unseen"]
    norms = pd.DataFrame(
        {"model": "minilm", "matrix": "input", "frequency_corpus": corpus, "bin": label}
        | {"rank_low": 1 + 100 * place, "n_tokens": 10, "mean_norm": 1.0 + 0.1 * place}
        for corpus in ("sts", "lee")
        for place, label in enumerate(bins)
        if not (corpus == "lee" and label == "1,001+")
    )
    spectra = pd.DataFrame(
        {"model": "minilm", "matrix": "input", "centered": False, "rank": [1, 2], "share": 0.5}
    )
    embedding.plot_embedding_matrices(spectra, norms, [])
    lines = [line for line in kept[0].axes[1].get_lines() if len(line.get_xdata()) == len(bins)]
    lee = next(line for line in lines if line.get_linestyle() == ":")
    heights = np.asarray(lee.get_ydata(), dtype=float)
    assert np.isnan(heights[bins.index("1,001+")])
    assert np.isfinite(np.delete(heights, bins.index("1,001+"))).all()
    paper.plt.close(kept[0])
