"""Figures read as they are labelled: one colour order for layers in every figure, a log
axis wherever the values span more than a factor 20 and only there (and said on the
axis), frequency ranks from 1 and k named, every panel's measure on its y axis, intervals
drawn, a Spearman ρ with its interval, legends that say what a line is."""

from __future__ import annotations

from statistics import NormalDist

import matplotlib.colors
import numpy as np
import pandas as pd
import pytest

from contextuality import steps
from contextuality.errors import InputDataError
from contextuality.figures import (
    alignment,
    best_layers,
    degeneration,
    early_steps,
    geometry,
    paper,
    sweeps,
)
from contextuality.figures.specs import FIGURES
from contextuality.files.tables import write_parquet
from contextuality.measures.degeneration import DegenerationSettings, bins_table, rank_bins
from contextuality.measures.ranks import spearman_correlation, spearman_interval
from contextuality.measures.registry import axis_label


@pytest.fixture
def drawn(monkeypatch):
    """Figures as drawn, kept open to be read: each module's `save_figure` records them."""
    kept = []
    for module in (paper, geometry, degeneration, sweeps, alignment, best_layers, early_steps):
        monkeypatch.setattr(
            module, "save_figure", lambda figure, outputs, source: kept.append(figure)
        )
    yield kept
    for figure in kept:
        paper.plt.close(figure)


def _lightness(colour) -> float:
    red, green, blue = matplotlib.colors.to_rgb(colour)
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def _line_colours(panel) -> dict[str, np.ndarray]:
    return {
        line.get_label(): np.array(matplotlib.colors.to_rgba(line.get_color()))
        for line in panel.get_lines()
    }


# One colour order for layers


def test_layer_colours_run_from_light_to_dark():
    lightness = [_lightness(colour) for colour in paper.layer_colours(7)]
    assert all(a > b for a, b in zip(lightness, lightness[1:], strict=False))


def _positions(norms_by_model: dict[str, list[float]]) -> pd.DataFrame:
    """A position profile: per model, layers 0–2, three buckets, the first bucket's mean
    norm `norms_by_model[model][layer]`, the others a tenth of it less."""
    return pd.DataFrame(
        [
            {
                "model": model,
                "transform": transform,
                "layer": layer,
                "bucket": bucket,
                "first_position": first,
                "mean_norm": norm * (1.0 if first == 0 else 0.9),
                "anisotropy": 0.1 * layer + 0.01 * first,
            }
            for model, norms in norms_by_model.items()
            for layer, norm in enumerate(norms)
            for first, bucket in ((0, "0"), (1, "1"), (2, "2–3"))
            for transform in ("none", "center")
        ]
    )


def test_positions_knn_and_sweep_colour_layers_alike(drawn):
    colours = paper.layer_colours(3)
    geometry.plot_positions(_positions({"m": [1.0, 2.0, 3.0]}), [])
    bins = pd.DataFrame(
        [
            {
                "bin": label,
                "rank_low": low,
                "rank_high": high,
                "vectors": vectors,
                "layer": layer,
                "knn_distance": 1.0 + layer,
            }
            for label, low, high in (("0–10", 0, 10), ("10+", 10, pd.NA))
            for vectors in ("static", "occurrences")
            for layer in range(3)
        ]
    )
    degeneration.plot_knn_by_bin(bins, [], 3)
    measures = pd.DataFrame(
        [
            {
                "model": f"m{step}",
                "transform": "none",
                "layer": layer,
                "n_layers": 2,
                "measure": measure,
                "raw": 0.1 * layer,
                "adjusted": 0.2,
            }
            for step in (0, 10)
            for layer in range(3)
            for measure, _, _ in sweeps.SERIES_PANELS
        ]
    )
    sweeps.plot_series(measures, sweeps.ModelSeries("sweep", "step", {"m0": 0, "m10": 10}), [])
    positions, knn, sweep = drawn
    panels = [*positions.axes, *knn.axes, *sweep.axes[: len(sweeps.SERIES_PANELS)]]
    for panel in panels:
        drawn_colours = _line_colours(panel)
        for layer in range(3):
            np.testing.assert_allclose(drawn_colours[f"layer {layer}"], colours[layer])


# Log axes where they are said to be


@pytest.mark.parametrize(("norms", "log"), [([2.0, 5.0, 19.0], False), ([1.0, 30.0, 500.0], True)])
def test_positions_norm_axis_is_log_exactly_where_it_says(drawn, norms, log):
    geometry.plot_positions(_positions({"m": norms}), [])
    norm_panel, anisotropy_panel = drawn[0].axes[:2]
    assert norm_panel.get_yscale() == ("log" if log else "linear")
    assert norm_panel.get_ylabel() == ("mean L2 norm (log scale)" if log else "mean L2 norm")
    assert anisotropy_panel.get_yscale() == "linear"


def test_positions_decide_the_scale_model_by_model(drawn):
    geometry.plot_positions(
        _positions({"decoder": [1.0, 300.0, 9.0], "encoder": [8.0, 10.0, 12.0]}), []
    )
    decoder, encoder = drawn[0].axes[0], drawn[0].axes[2]
    assert (decoder.get_yscale(), encoder.get_yscale()) == ("log", "linear")
    assert "(log scale)" in decoder.get_ylabel() and "log" not in encoder.get_ylabel()


def _words(occurrence_norm: np.ndarray) -> pd.DataFrame:
    n = len(occurrence_norm)
    return pd.DataFrame(
        {
            "frequency_rank": np.arange(1, n + 1),
            "occurrence_norm": occurrence_norm,
            "static_norm": 0.5 * occurrence_norm,
        }
    )


def test_norm_by_rank_is_log_on_the_panels_whose_norms_span_a_factor_20(drawn):
    """A decoder's layers: norms up to 25,000 where the first token sits, flat elsewhere."""
    wide = np.r_[25_000.0, np.linspace(40.0, 60.0, 50)]
    flat = np.linspace(40.0, 60.0, 51)
    degeneration.plot_norm_by_rank({0: _words(flat), 12: _words(wide), 24: _words(flat)}, [])
    panels = [panel for panel in drawn[0].axes if panel.get_visible()]
    assert [panel.get_yscale() for panel in panels] == ["linear", "log", "linear"]
    assert [panel.get_ylabel() for panel in panels] == ["L2 norm", "L2 norm (log scale)", "L2 norm"]
    assert all(panel.get_xscale() == "log" for panel in panels)
    texts = [text.get_text() for text in drawn[0].texts]
    assert "frequency rank (1 = most frequent, log scale)" in texts


# Frequency ranks from 1, and k


def test_knn_bins_are_labelled_by_their_ranks_from_1_and_name_k(drawn):
    words = pd.DataFrame(
        {
            "word_id": np.arange(6),
            "frequency_rank": np.arange(1, 7),
            "static_norm": 1.0,
            "static_knn_distance": np.arange(6.0),
            "static_knn_dot": 1.0,
            "mean_direction_cosine": 0.5,
        }
    )
    queries = words.rename(
        columns={
            "static_norm": "norm",
            "static_knn_distance": "knn_distance",
            "static_knn_dot": "knn_dot",
        }
    )
    table = bins_table(words, queries, [(0, 1), (1, 4), (4, None)]).assign(layer=0)
    degeneration.plot_knn_by_bin(table, [], 4)
    for panel in drawn[0].axes:
        assert [tick.get_text() for tick in panel.get_xticklabels()] == ["1–1", "2–4", "5+"]
        assert panel.get_xlabel() == "frequency rank (1 = most frequent)"
        assert panel.get_ylabel() == "mean L2 distance\nto the k = 4 nearest"
        # the word of frequency rank 1 (distance 0) is the first bin's only member
        assert panel.get_lines()[0].get_ydata()[0] == 0.0


def test_rank_ranges_cover_the_scaled_bins_from_1_without_gaps():
    bins = rank_bins(3052, DegenerationSettings())
    labels = [degeneration.rank_range(low, high) for low, high in bins]
    assert labels == ["1–10", "11–50", "51–500", "501–1,000", "1,001+"]


def _bins_file(path, neighbours: int, layer: int) -> str:
    table = pd.DataFrame(
        {
            "bin": ["0–10"],
            "rank_low": [0],
            "rank_high": [10],
            "vectors": ["static"],
            "knn_distance": [1.0],
            "layer": [layer],
        }
    )
    write_parquet(table, path, {"degeneration": {"neighbours": neighbours}})
    return str(path)


def test_degeneration_step_reads_k_from_the_tables_provenance(tmp_path, monkeypatch):
    got = []
    monkeypatch.setattr(degeneration, "plot_norm_by_rank", lambda *args, **kwargs: None)
    monkeypatch.setattr(degeneration, "plot_cone", lambda *args, **kwargs: None)
    monkeypatch.setattr(
        degeneration, "plot_knn_by_bin", lambda table, outputs, k, title: got.append(k)
    )
    paths = [_bins_file(tmp_path / f"{layer}.parquet", 7, layer) for layer in (0, 1)]
    steps.degeneration_figures([], paths, [], [], "m, transform none")
    assert got == [7]
    paths.append(_bins_file(tmp_path / "2.parquet", 3, 2))
    with pytest.raises(InputDataError, match=r"k = \[3, 7\]"):
        steps.degeneration_figures([], paths, [], [], "m, transform none")


# The comparison of corrections: a y label per panel, and its intervals


def test_transform_panels_name_their_measure_and_draw_intervals(drawn):
    rows = []
    for transform, shift in (("none", 0.0), ("center", 0.3)):
        for layer in range(3):
            rows.append(
                {
                    "model": "m",
                    "transform": transform,
                    "layer": layer,
                    "measure": "selfsim",
                    "adjusted": 0.5 + shift,
                    "adjusted_low": 0.4 + shift,
                    "adjusted_high": 0.6 + shift,
                }
            )
            rows.append(
                {
                    "model": "m",
                    "transform": transform,
                    "layer": layer,
                    "measure": "anisotropy",
                    "raw": 0.2 - shift / 3,
                    "raw_low": np.nan,
                    "raw_high": np.nan,
                }
            )
    paper.plot_transforms(pd.DataFrame(rows).assign(relative_layer=lambda t: t["layer"] / 2), [])
    selfsim, anisotropy = drawn[0].axes
    assert selfsim.get_ylabel() == "adjusted SelfSim"
    assert anisotropy.get_ylabel() == "anisotropy (mean cosine)"
    bands = [collection.get_paths()[0].vertices[:, 1] for collection in selfsim.collections]
    assert len(bands) == 2  # one per transform
    for band, shift in zip(bands, (0.0, 0.3), strict=True):
        np.testing.assert_allclose(sorted(set(np.round(band, 9))), [0.4 + shift, 0.6 + shift])
    assert not anisotropy.collections  # an exact value: no interval to draw


# A Spearman ρ with its interval


def test_spearman_interval_is_fisher_z_with_bonett_wright_variance():
    rho, n = np.array([-0.6, 0.0, 0.3, 0.95]), np.array([40, 10, 200, 30])
    low, high = spearman_interval(rho, n, 0.95)
    z = NormalDist().inv_cdf(0.975)
    for r, size, lo, hi in zip(rho, n, low, high, strict=True):
        se = ((1 + r * r / 2) / (size - 3)) ** 0.5
        assert lo == pytest.approx(np.tanh(np.arctanh(r) - z * se), abs=1e-12)
        assert hi == pytest.approx(np.tanh(np.arctanh(r) + z * se), abs=1e-12)
        assert -1 < lo < r < hi < 1
    wider = spearman_interval(rho, n, 0.99)
    assert np.all(wider[0] < low) and np.all(wider[1] > high)
    assert np.isnan(spearman_interval(np.array([0.5]), np.array([3]), 0.95)).all()


def test_spearman_interval_covers_the_population_rho_about_95_times_in_100():
    """Bivariate normal, Pearson r = 0.6: Spearman's population ρ is (6/π) asin(r/2)."""
    rng = np.random.default_rng(11)
    r, n = 0.6, 40
    population = 6 / np.pi * np.arcsin(r / 2)
    covered = []
    for _ in range(1500):
        x = rng.standard_normal(n)
        y = r * x + np.sqrt(1 - r * r) * rng.standard_normal(n)
        rho = spearman_correlation(x, y)
        low, high = spearman_interval(np.array([rho]), np.array([n]), 0.95)
        covered.append(low[0] <= population <= high[0])
    assert 0.93 <= np.mean(covered) <= 0.97


def test_selfsim_frequency_band_is_the_interval_of_rho_from_n(drawn):
    table = pd.DataFrame(
        {
            "model": "m",
            "transform": "none",
            "layer": range(3),
            "measure": "selfsim~frequency",
            "raw": [-0.2, -0.4, 0.1],
            "raw_low": np.nan,
            "raw_high": np.nan,
            "n": [50, 400, 30],
        }
    )
    paper.plot_figure(table, FIGURES["selfsim_frequency"], [])
    (band,) = drawn[0].axes[0].collections
    low, high = spearman_interval(
        table["raw"].to_numpy(), table["n"].to_numpy(), paper.SPEARMAN_LEVEL
    )
    assert set(np.round(band.get_paths()[0].vertices[:, 1], 9)) == set(
        np.round(np.r_[low, high], 9)
    )


# Legends


@pytest.mark.parametrize("name", ["fig1_anisotropy", "fig2_selfsim", "fig3_intrasim"])
def test_the_papers_estimator_is_not_labelled_as_the_papers_values(drawn, name):
    spec = FIGURES[name]
    table = pd.DataFrame(
        [
            {
                "model": "m",
                "transform": "none",
                "layer": layer,
                "measure": series.measure,
                spec.column: 0.1 * layer,
            }
            for series in spec.series
            for layer in range(2)
        ]
    )
    paper.plot_figure(table, spec, [])
    labels = [text.get_text() for text in drawn[0].axes[0].get_legend().get_texts()]
    assert labels == [f"m {axis_label(series.measure)}" for series in spec.series]
    assert labels[1].endswith("the paper's estimator")  # the record's label, one per row


def test_the_published_values_keep_their_own_label(drawn):
    comparison = pd.DataFrame(
        {"statistic": "anisotropy", "layer": [0, 1], "published": [0.1, 0.2], "ours": [0.1, 0.3]}
    )
    paper.plot_reference(comparison, "m", [])
    labels = [text.get_text() for text in drawn[0].axes[0].get_legend().get_texts()]
    assert labels == ["published", "this run"]


def test_positions_draw_the_special_tokens_beside_the_words(drawn):
    words = _positions({"m": [1.0, 2.0, 3.0]}).assign(kind="word position")
    special = pd.DataFrame(
        [
            {
                "model": "m",
                "transform": "none",
                "layer": layer,
                "bucket": token,
                "first_position": first,
                "mean_norm": 50.0 + layer,
                "anisotropy": 0.9,
                "kind": "special token",
            }
            for layer in range(3)
            for token, first in (("[CLS]", 0), ("[SEP]", -1))
        ]
    )
    geometry.plot_positions(pd.concat([words, special], ignore_index=True), [])
    norm_panel, anisotropy_panel = drawn[0].axes[:2]
    labels = [label.get_text() for label in norm_panel.get_xticklabels()]
    assert labels == ["0", "1", "2–3", "[CLS]", "[SEP]"]
    # Three layers' lines over the words, and per layer one marker per special token.
    drawn_norms = sorted(
        float(y)
        for line in norm_panel.get_lines()
        if len(line.get_xdata()) == 1
        for y in line.get_ydata()
    )
    assert drawn_norms == [50.0, 50.0, 51.0, 51.0, 52.0, 52.0]
    assert norm_panel.get_yscale() == "log"  # 1 to 52: a factor above 20
    assert anisotropy_panel.get_xticklabels()[3].get_text() == "[CLS]"


def test_the_alignment_figure_outlines_each_best_match_and_scales_each_panel(drawn):
    """Every model's layers in one heatmap per measure, a block per pair: a pair computed
    once fills both its blocks, a pair not computed stays blank (NaN, no value written);
    in each block of two models each row's best match is outlined (the largest
    similarity, the smallest distance) and its value stays written; every panel has its
    colour bar, a distance's saying its scale runs the other way."""
    from contextuality.geometry.alignment import ALIGNMENT_COLUMNS
    from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES

    rng = np.random.default_rng(2)
    rows = []
    for layer_a in range(3):
        for layer_b in range(4):
            row = {"model_a": "a", "layer_a": layer_a, "model_b": "b", "layer_b": layer_b}
            row |= {"transform": "none", "occurrences": "all", "k": 10, "n_rows": 9}
            for record in ALIGNMENT_MEASURES:
                row[record.name] = rng.uniform(*record.limits)
                row[f"null_{record.name}"] = row[f"threshold_{record.name}"] = 0.0
            rows.append(row)
    table = pd.DataFrame(rows, columns=ALIGNMENT_COLUMNS)
    alignment.plot_alignment(table, [])
    (figure,) = drawn
    panels = [axes for axes in figure.axes if axes.get_label() != "<colorbar>"]
    panels = [axes for axes in panels if axes.get_visible()]
    bars = [axes for axes in figure.axes if axes.get_label() == "<colorbar>"]
    assert len(panels) == len(bars) == len(alignment.PANELS)
    for panel, bar, record in zip(panels, bars, alignment.PANELS, strict=True):
        grid = table.pivot(index="layer_a", columns="layer_b", values=record.name).to_numpy()
        shown = panel.get_images()[0].get_array()
        assert np.allclose(shown[:3, 3:], grid) and np.allclose(shown[3:, :3], grid.T)
        assert shown.mask[:3, :3].all() and shown.mask[3:, 3:].all()  # not computed: blank
        best = grid.argmin(axis=1) if record.distance else grid.argmax(axis=1)
        best_back = grid.argmin(axis=0) if record.distance else grid.argmax(axis=0)
        outlined = sorted(
            (round(patch.get_y() + 0.5), round(patch.get_x() + 0.5)) for patch in panel.patches
        )
        expected = [(row, 3 + column) for row, column in enumerate(best)]
        expected += [(3 + row, column) for row, column in enumerate(best_back)]
        assert outlined == sorted(expected), record.name
        assert len(panel.texts) == 2 * grid.size  # every value written, none where blank
        assert ("reversed" in bar.get_ylabel()) == record.distance, record.name
        ticks = [tick.get_text() for tick in panel.get_yticklabels()]
        assert ticks == ["a 0", "1", "2", "b 0", "1", "2", "3"]
    assert "outlined: each layer's best match" in figure.get_suptitle()


def test_a_model_s_heatmap_holds_its_layers_against_the_word_baselines(drawn):
    """Within one model, the word baselines are columns after its own layers, labelled,
    their values written, behind a white rule; no best match is outlined."""
    from contextuality.geometry.alignment import ALIGNMENT_COLUMNS

    rows = []
    for layer_a in range(2):
        for model_b, layers_b in (("m", range(2)), ("word_identity", [0]), ("word_position", [0])):
            for layer_b in layers_b:
                row = {"model_a": "m", "layer_a": layer_a, "model_b": model_b, "layer_b": layer_b}
                row |= {"transform": "none", "occurrences": "all", "k": 10, "n_rows": 9}
                for record in alignment.PANELS:
                    row[record.name] = 0.3 if model_b.startswith("word") else 0.9
                    row[f"null_{record.name}"] = row[f"threshold_{record.name}"] = 0.0
                rows.append(row)
    alignment.plot_alignment(pd.DataFrame(rows, columns=ALIGNMENT_COLUMNS), [])
    (figure,) = drawn
    panel = figure.axes[0]
    ticks = [tick.get_text() for tick in panel.get_xticklabels()]
    assert ticks == ["m 0", "1", "word", "word+pos"]
    assert sorted(text.get_text() for text in panel.texts).count("0.30") == 4
    assert not panel.patches  # nothing outlined within one model
    assert "outlined" not in figure.get_suptitle()  # nor said to be
    assert any(line.get_xdata()[0] == 1.5 for line in panel.lines)  # the rule


def test_the_cka_figure_is_one_heatmap_per_set_of_occurrences_for_any_number_of_models(
    drawn,
):
    """Five models (every pair computed once) make two panels, not a panel per pair:
    every model's layers down and across, each pair's values in both its blocks."""
    from contextuality.figures.geometry import plot_cka

    models = {"a": 2, "b": 3, "c": 2, "d": 1, "e": 2}
    names = list(models)
    rows = []
    for index, left in enumerate(names):
        for right in names[index:]:
            for layer_a in range(models[left]):
                for layer_b in range(models[right]):
                    for kind in ("all", "position>0"):
                        value = 0.1 * (index + 1) + 0.01 * (layer_a + layer_b) + 0.001
                        rows.append(
                            {"model_a": left, "layer_a": layer_a, "model_b": right}
                            | {"layer_b": layer_b, "occurrences": kind, "cka": value}
                            | {"sampled": True, "n_rows": 9}
                        )
    table = pd.DataFrame(rows)
    plot_cka(table, [])
    (figure,) = drawn
    panels = [axes for axes in figure.axes if axes.get_label() != "<colorbar>"]
    assert len(panels) == 2
    shown = panels[0].get_images()[0].get_array()
    assert shown.shape == (10, 10) and not np.ma.getmaskarray(shown).any()
    assert np.allclose(shown, shown.T)
    assert shown[2 + 1, 0] == pytest.approx(0.1 + 0.01 + 0.001)  # b 1 × a 0, from a × b
    _text_inside_the_canvas(figure)


def _text_inside_the_canvas(figure) -> None:
    """Every axes' title, labels, tick labels and legend lie inside the figure."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axes in figure.axes:
        box = axes.get_tightbbox(renderer)
        assert box.x0 >= -1 and box.y0 >= -1, axes.get_title()
        assert box.x1 <= figure.bbox.x1 + 1 and box.y1 <= figure.bbox.y1 + 1, axes.get_title()


def test_the_best_layers_figure_draws_each_match_with_its_interval_and_the_null_of_choosing(
    drawn,
):
    """A panel per measure and direction; each layer's best match drawn with its interval
    (a bar from low to high), its layer written above it, hollow where it stays best
    in under half the draws; the critical value of choosing drawn as a line. Less the
    bootstrap's bias an interval need not hold its value (layer 2 here): still drawn."""
    from contextuality.geometry.best_layers import BEST_LAYER_COLUMNS

    rows = []
    for model, other, count in (("a", "b", 3), ("b", "a", 4)):
        for layer in range(count):
            for record in alignment.PANELS:
                rows.append(
                    {
                        "model": model,
                        "layer": layer,
                        "other_model": other,
                        "transform": "none",
                        "occurrences": "all",
                        "measure": record.name,
                        "best_layer": (layer + 1) % 3,
                        "value": 0.75 if layer == 2 else 0.5,
                        "low": 0.4,
                        "high": 0.7,
                        "null": 0.05,
                        "stays_best": 0.3 if layer == 0 else 0.9,
                        "best_threshold": 0.1,
                    }
                )
    table = pd.DataFrame(rows, columns=BEST_LAYER_COLUMNS)
    word = pd.DataFrame(
        {
            "model_a": "a",
            "layer_a": range(3),
            "model_b": "word_identity",
            "layer_b": 0,
            "occurrences": "all",
            **{record.name: 0.25 for record in alignment.PANELS},
        }
    )
    best_layers.plot_best_layers(table, word, [])
    (figure,) = drawn
    assert len(figure.axes) == 2 * len(alignment.PANELS)
    first = figure.axes[0]
    bars = [line for line in first.collections if len(line.get_segments())]
    spans = sorted(
        (round(segment[0][1], 3), round(segment[1][1], 3))
        for collection in bars
        for segment in collection.get_segments()
    )
    assert spans == [(0.4, 0.7)] * 3
    assert sorted(text.get_text() for text in first.texts) == ["0", "1", "2"]
    hollow = [line for line in first.lines if line.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [0]
    assert any(list(line.get_ydata()) == [0.1] * 3 for line in first.lines)
    assert any(list(line.get_ydata()) == [0.25] * 3 for line in first.lines)  # word alone
    _text_inside_the_canvas(figure)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_figure_of_the_measures_keeps_its_text_on_the_canvas(drawn, name):
    """Each measures figure drawn from a small table of three models (a legend of two series
    goes beside the plot): its title, axis labels, tick labels and legend lie inside the
    figure, none cut at an edge."""
    spec = FIGURES[name]
    rows = [
        {
            "model": model,
            "transform": "none",
            "layer": layer,
            "n_layers": 6,
            "relative_layer": layer / 6,
            "measure": series.measure,
            spec.column: 0.1 * layer + shift,
            "n": 50,
        }
        for model, shift in (("smollm2-zeroed", 0.0), ("gemma3", 0.2), ("minilm", 0.4))
        for layer in range(7)
        for series in spec.series
    ]
    paper.plot_figure(pd.DataFrame(rows), spec, [])
    (figure,) = drawn
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    canvas = figure.bbox
    for axes in figure.axes:  # its title, labels, tick labels and legend, as drawn
        box = axes.get_tightbbox(renderer)
        inside = (
            box.x0 >= canvas.x0 - 1
            and box.x1 <= canvas.x1 + 1
            and box.y0 >= canvas.y0 - 1
            and box.y1 <= canvas.y1 + 1
        )
        assert inside, (name, box, canvas)


def test_a_line_is_broken_where_its_model_lacks_layers_and_a_model_without_values_is_named(
    drawn,
):
    """A model measured at fewer layers than another of its depth (an ablated one) is not
    drawn across the layers it lacks; one whose every value is NaN draws no line and is
    named as having none, not listed in the legend."""
    rows = [
        {"model": model, "transform": "none", "layer": layer, "n_layers": 12}
        | {"measure": "anisotropy", "raw": value, "relative_layer": layer / 12, "n": 9}
        for model, layers, value in (
            ("base", range(0, 13, 3), 0.5),
            ("ablated", (0, 9, 12), 0.4),
            ("empty", range(0, 13, 3), np.nan),
        )
        for layer in layers
    ]
    paper.plot_figure(pd.DataFrame(rows), FIGURES["fig1_anisotropy"], [])
    (figure,) = drawn
    (axes,) = figure.axes
    lines = {line.get_label(): line for line in axes.get_lines()}
    ablated = lines[f"ablated {axis_label('anisotropy')}"].get_ydata()
    assert np.isnan(ablated).sum() == 1 and list(np.isfinite(ablated)) == [1, 0, 1, 1]
    assert not any(label.startswith("empty") for label in lines)
    assert any(text.get_text() == "no value: empty" for text in axes.texts)


@pytest.mark.parametrize(("threshold", "drawn_as_line"), [(0.001, False), (0.1, True)])
def test_a_critical_value_on_the_axis_is_written_not_hidden(drawn, threshold, drawn_as_line):
    """The critical value of the best of a row near 0 (a permutation null), which a dashed
    line along the axis would hide, is written in the panel instead; one clear of the
    axis stays a line."""
    from contextuality.geometry.best_layers import BEST_LAYER_COLUMNS

    rows = [
        {"model": model, "layer": layer, "other_model": other, "transform": "none"}
        | {"occurrences": "all", "measure": record.name, "best_layer": 0, "value": 0.5}
        | {"low": 0.4, "high": 0.6, "null": 0.0, "stays_best": 0.9}
        | {"best_threshold": threshold}
        for model, other in (("a", "b"), ("b", "a"))
        for layer in range(3)
        for record in alignment.PANELS
    ]
    best_layers.plot_best_layers(
        pd.DataFrame(rows, columns=BEST_LAYER_COLUMNS),
        pd.DataFrame(columns=["model_a", "layer_a", "model_b", "occurrences"]),
        [],
    )
    (figure,) = drawn
    cka = figure.axes[0]  # debiased CKA: a similarity whose axis starts at 0
    lines = [line for line in cka.lines if list(line.get_ydata()) == [threshold] * 3]
    written = [text.get_text() for text in cka.texts if "critical value" in text.get_text()]
    assert bool(lines) == drawn_as_line
    assert written == (
        []
        if drawn_as_line
        else [f"critical value of the best of the row ≤ {threshold:.3f} (on the axis)"]
    )
    _text_inside_the_canvas(figure)


def test_the_early_steps_figure_draws_each_layer_s_mean_over_seeds_and_the_events(drawn):
    """Per warm-up and column, each layer's thick line is the mean over seeds at each step,
    a thin line each seed; the end of warm-up and each seed's unigram crossing are
    vertical lines at their steps."""
    rng = np.random.default_rng(0)
    rows = [
        {"architecture": "gpt2", "seed": seed, "warmup": warmup, "step": step, "layer": layer}
        | {column: rng.uniform(-1, 1) for column in early_steps.PLOTTED}
        for seed in (0, 1)
        for warmup in (10, 50)
        for step in range(6)
        for layer in (0, 1)
    ]
    table = pd.DataFrame(rows)
    events = pd.DataFrame(
        {
            "architecture": "gpt2",
            "seed": seed,
            "warmup": warmup,
            "layer": 0,
            "unigram_crossing": 3 + seed,
        }
        for seed in (0, 1)
        for warmup in (10, 50)
    )
    early_steps.plot_early_steps(table, events, "gpt2", "tiny GPT-2", "Lee", [])
    (figure,) = drawn
    assert figure.get_suptitle().startswith("tiny GPT-2: ")
    assert "held-out Lee sentences" in figure.get_suptitle()
    assert len(figure.axes) == len(early_steps.PLOTTED) * 2
    panel = figure.axes[0]  # anisotropy, warm-up 10
    chosen = table[(table["warmup"] == 10) & (table["layer"] == 1)]
    mean = chosen.groupby("step")["anisotropy"].mean()
    thick = next(line for line in panel.get_lines() if line.get_label() == "layer 1")
    np.testing.assert_allclose(thick.get_ydata(), mean.to_numpy())
    vertical = sorted(
        line.get_xdata()[0]
        for line in panel.get_lines()
        if len(set(line.get_xdata())) == 1 and len(line.get_xdata()) == 2
    )
    assert vertical == [3, 4, 10]
    assert panel.get_xlim()[1] == 50  # the warm-ups end past the last step: drawn (shared x)
    _text_inside_the_canvas(figure)
