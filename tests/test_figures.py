"""Figures plot the table's values: each line, band and heatmap cell is read back from the
figure and compared with the table it was drawn from."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contextuality.figures import paper, specs
from contextuality.figures.specs import DIMENSION_FIGURE, FIGURES
from contextuality.measures import registry
from contextuality.measures.ranks import spearman_interval
from contextuality.measures.record import FigureRows, Measure, MeasureFigure
from contextuality.measures.registry import MEASURES, axis_label
from contextuality.measures.summary import SUMMARY_COLUMNS

MODELS = {"alpha": 4, "beta": 2}  # model → number of layers


def _summary_table(rng) -> pd.DataFrame:
    """A summary table (as `steps.measures_table` writes) with random values for every measure
    the figures draw, an interval around each value."""
    measures = {series.measure for spec in FIGURES.values() for series in spec.series}
    rows = []
    for model, n_layers in MODELS.items():
        for layer in range(n_layers + 1):
            for measure in sorted(measures):
                row = {
                    "model": model,
                    "transform": "none",
                    "layer": layer,
                    "n_layers": n_layers,
                    "relative_layer": layer / n_layers,
                    "measure": measure,
                    "n": 10,
                }
                for column in ("raw", "baseline", "adjusted"):
                    value = rng.uniform(-1, 1)
                    row |= {
                        column: value,
                        f"{column}_low": value - 0.1,
                        f"{column}_high": value + 0.1,
                    }
                rows.append(row)
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


@pytest.fixture
def drawn(monkeypatch):
    """Figures as drawn: `save_figure` is replaced by a recorder, so they stay open to be read."""
    kept = []
    monkeypatch.setattr(paper, "save_figure", lambda figure, outputs, source: kept.append(figure))
    yield kept
    for figure in kept:
        paper.plt.close(figure)


@pytest.mark.parametrize("name", sorted(FIGURES))
@pytest.mark.parametrize("relative_layers", [False, True])
def test_lines_and_bands_are_the_tables_values(drawn, name, relative_layers):
    table = _summary_table(np.random.default_rng(0))
    spec = FIGURES[name]
    paper.plot_figure(table, spec, ["unused.png"], relative_layers=relative_layers)
    (axes,) = drawn[0].axes
    lines = {line.get_label(): line for line in axes.get_lines()}
    assert len(lines) == len(spec.series) * len(MODELS)
    x_column = "relative_layer"  # asked or not: the two models differ in depth
    bands = iter(axes.collections)
    for series in spec.series:
        for model in sorted(MODELS):
            rows = table[(table["model"] == model) & (table["measure"] == series.measure)]
            rows = rows.sort_values("layer")
            line = lines[f"{model}{series.label}"]
            np.testing.assert_allclose(line.get_xdata(), rows[x_column])
            np.testing.assert_allclose(line.get_ydata(), rows[spec.column])
            band = next(bands).get_paths()[0].vertices
            low, high = rows[f"{spec.column}_low"].to_numpy(), rows[f"{spec.column}_high"]
            if spec.spearman:  # a ρ: its interval from ρ and n, not the table's
                low, high = spearman_interval(rows["raw"], rows["n"], paper.SPEARMAN_LEVEL)
            assert set(np.round(band[:, 1], 9)) == set(np.round(np.r_[low, high], 9))


def test_each_line_of_a_figure_is_called_by_its_records_label():
    """A figure of several rows calls each by its record's label, one label per row (none
    beside it), and a figure of one row has its record's label on its y axis."""
    for spec in [*FIGURES.values(), DIMENSION_FIGURE]:
        labels = [series.label for series in spec.series]
        if len(spec.series) > 1:
            assert labels == [f" {axis_label(series.measure)}" for series in spec.series]
            assert len(set(labels)) == len(labels), spec.name
        else:
            assert labels == [""]
            assert spec.ylabel == axis_label(spec.series[0].measure, spec.column), spec.name


def test_a_records_own_figure_is_drawn_from_the_record():
    """A record's figure (`MeasureFigure`) becomes a figure of its rows, with its name,
    title and axis, each row called by the record's label."""
    figure = MeasureFigure("norms", "Norms by layer", "norm", "raw")
    record = Measure(
        name="norm",
        rows=("norm", "norm[squared]"),
        caption="The mean norm of a layer's occurrences, and of their squares.",
        step="layer_dimension",
        labels=("mean norm", "mean squared norm"),
        figure=figure,
    )
    spec = specs.record_figure(record)
    assert (spec.name, spec.title, spec.ylabel, spec.column) == (
        figure.name,
        figure.title,
        figure.ylabel,
        figure.column,
    )
    assert [series.measure for series in spec.series] == list(record.rows)
    assert [series.label.strip() for series in spec.series] == list(record.labels)
    assert len({series.linestyle for series in spec.series}) == len(record.rows)


def test_a_records_drawn_in_puts_its_rows_in_that_figure_at_its_place(monkeypatch):
    """Each record's `FigureRows` puts its rows in that figure, from its place on; a new
    record joins a figure by its own, and one that takes a taken place is refused."""
    for record in MEASURES:
        for drawn in record.drawn_in:
            if drawn.figure in specs.PANEL_FIGURES:
                continue
            rows = drawn.rows or record.rows
            series = FIGURES[drawn.figure].series[drawn.place : drawn.place + len(rows)]
            assert [line.measure for line in series] == list(rows), record.name
    name, spec = next(iter(FIGURES.items()))
    joining = Measure(
        name="norm",
        rows=("norm",),
        caption="The mean norm of a layer's occurrences.",
        step="layer_dimension",
        drawn_in=(FigureRows(name, place=len(spec.series)),),
    )
    monkeypatch.setattr(specs, "MEASURES", (*MEASURES, joining))
    assert specs.rows_drawn_in(name) == (*(line.measure for line in spec.series), "norm")
    clashing = Measure(
        name="norm",
        rows=("norm",),
        caption="The mean norm of a layer's occurrences.",
        step="layer_dimension",
        drawn_in=(FigureRows(name),),
    )
    monkeypatch.setattr(specs, "MEASURES", (*MEASURES, clashing))
    with pytest.raises(ValueError, match=name):
        specs.rows_drawn_in(name)


def test_a_figure_of_a_panel_per_row_draws_each_records_rows_in_their_column(monkeypatch):
    """The figures of a panel per row (the transforms figure, the ablation's, a series')
    have a panel for each row their records place there, in the column the record names,
    called by its axis label; a new record adds a panel, and a record without a column, or
    one with a column in a figure of several rows' lines, is refused."""
    for name in specs.PANEL_FIGURES:
        for row, column, label in specs.panels_drawn_in(name):
            assert column in ("raw", "adjusted") and label == axis_label(row, column)
    name = specs.PANEL_FIGURES[0]
    panels = specs.panels_drawn_in(name)

    def norm(*drawn_in: FigureRows) -> Measure:
        return Measure(
            name="norm",
            rows=("norm",),
            caption="The mean norm of a layer's occurrences.",
            step="layer_dimension",
            drawn_in=drawn_in,
        )

    joining = norm(FigureRows(name, column="raw", place=len(panels)))
    monkeypatch.setattr(specs, "MEASURES", (*MEASURES, joining))
    monkeypatch.setattr(registry, "MEASURES", (*MEASURES, joining))  # its axis label
    assert specs.panels_drawn_in(name) == (*panels, ("norm", "raw", axis_label("norm", "raw")))
    monkeypatch.setattr(specs, "MEASURES", (*MEASURES, norm(FigureRows(name, place=len(panels)))))
    with pytest.raises(ValueError, match="says which column"):
        specs.panels_drawn_in(name)
    lines, spec = next(iter(FIGURES.items()))
    with_column = norm(FigureRows(lines, column="raw", place=len(spec.series)))
    monkeypatch.setattr(specs, "MEASURES", (*MEASURES, with_column))
    with pytest.raises(ValueError, match="draws its own column"):
        specs.rows_drawn_in(lines)


def test_the_ablation_draws_every_similarity_by_its_records_label(monkeypatch):
    """The ablation's alignment at the same layer draws each alignment measure that is a
    similarity (its record's label in the legend), and no distance."""
    from contextuality.figures import ablation
    from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES

    kept = []
    monkeypatch.setattr(
        ablation, "save_figure", lambda figure, outputs, source: kept.append(figure)
    )
    measures = pd.DataFrame(
        {"model": ["base", "ablated"], "transform": "none", "layer": 0, "measure": "anisotropy"}
        | {"raw": [0.5, 0.4]}
    )
    pair = pd.DataFrame(
        {"model_a": "base", "layer_a": [0, 1], "model_b": "ablated", "layer_b": [0, 1]}
        | {"occurrences": "all", "n_rows": 10, "null_cka": 0.1}
        | {record.name: 0.5 for record in ALIGNMENT_MEASURES}
    )
    ablation.plot_ablation(measures, pair, "base", "ablated", 1, [])
    legend = [text.get_text() for text in kept[0].axes[-1].get_legend().get_texts()]
    paper.plt.close(kept[0])
    for record in ALIGNMENT_MEASURES:
        assert (record.label in legend) == (not record.distance), record.name


def test_the_corrections_figure_draws_a_panel_for_each_record_that_asks(monkeypatch):
    """The corrections figure's panels come from the records: the geometry step's
    measures, then each alignment measure whose record asks for a corrections panel,
    called by its label; a new record that asks gets a panel of its own."""
    import dataclasses

    from contextuality.figures import geometry
    from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES

    asking = [record for record in ALIGNMENT_MEASURES if record.corrections_panel]
    assert asking and len(asking) < len(ALIGNMENT_MEASURES)
    joining = dataclasses.replace(
        next(record for record in ALIGNMENT_MEASURES if not record.corrections_panel),
        name="overlap",
        label="overlap",
        corrections_panel=True,
    )
    monkeypatch.setattr(geometry, "ALIGNMENT_MEASURES", (*ALIGNMENT_MEASURES, joining))
    panels = geometry.correction_panels()
    assert [(column, label) for kind, column, label in panels if kind == "dimension"] == [
        (row, label) for row, _, label in specs.panels_drawn_in(specs.CORRECTIONS_FIGURE)
    ]
    assert [(column, label) for kind, column, label in panels if kind == "alignment"] == [
        (record.name, f"{record.label} with the previous layer") for record in (*asking, joining)
    ]
    aligned = [column for kind, column, _ in panels if kind == "alignment"]
    kept = []
    monkeypatch.setattr(
        geometry, "save_figure", lambda figure, outputs, source: kept.append(figure)
    )
    measures = pd.DataFrame(
        {"model": "m", "transform": "none", "layer": [0, 1], "measure": panels[0][1]}
        | {"raw": [5.0, 6.0]}
    )
    alignment = pd.DataFrame(
        {"model_a": "m", "model_b": "m", "layer_a": [0], "layer_b": [1], "transform": "none"}
        | {"occurrences": "position>0"}
        | {column: [0.5] for column in aligned}
        | {f"null_{column}": [0.1] for column in aligned}
    )
    geometry.plot_geometry_transforms(measures, alignment, [])
    titles = [panel.get_title() for panel in kept[0].axes]
    paper.plt.close(kept[0])
    assert titles == [f"m: {label}" for _, _, label in panels]


def test_models_of_one_depth_share_layer_indices_and_of_two_depths_relative_depth(drawn):
    table = _summary_table(np.random.default_rng(3))
    alone = table[table["model"] == "alpha"]
    for rows in (alone, table):
        paper.plot_figure(rows, FIGURES["fig1_anisotropy"], ["unused.png"])
    same, mixed = (figure.axes[0] for figure in drawn)
    assert same.get_xlabel().startswith("layer (0: embedding output)")
    assert list(same.get_lines()[0].get_xdata()) == [0, 1, 2, 3, 4]
    assert mixed.get_xlabel().startswith("layer / number of layers")
    assert max(max(line.get_xdata()) for line in mixed.get_lines()) == 1.0


@pytest.mark.parametrize(
    "values, said",
    [
        ([0.6, 0.7, 0.8], "not 0"),  # all above 0: the axis leaves 0 out, and says so
        ([-0.8, -0.7, -0.6], "not 0"),  # all below
        ([-0.2, 0.3, 0.8], None),  # the axis holds 0: nothing to say
    ],
)
def test_a_line_plot_whose_axis_leaves_out_0_says_so(values, said):
    figure, panel = paper.plt.subplots()
    panel.plot([0, 1, 2], values)
    panel.set_ylabel("adjusted SelfSim")
    paper.say_where_the_axis_starts(panel)
    label = panel.get_ylabel()
    paper.plt.close(figure)
    assert label.startswith("adjusted SelfSim")
    assert (said in label) if said else label == "adjusted SelfSim"


def test_a_log_axis_or_a_heatmap_is_left_alone():
    figure, (log_panel, heatmap) = paper.plt.subplots(1, 2)
    log_panel.plot([0, 1], [10, 1000])
    log_panel.set_yscale("log")
    heatmap.imshow(np.ones((2, 2)))
    for panel in (log_panel, heatmap):
        panel.set_ylabel("y")
        paper.say_where_the_axis_starts(panel)
    assert [log_panel.get_ylabel(), heatmap.get_ylabel()] == ["y", "y"]
    paper.plt.close(figure)


def test_only_the_requested_transform_is_drawn(drawn):
    table = _summary_table(np.random.default_rng(1))
    other = table.assign(transform="whiten", raw=table["raw"] + 5)
    paper.plot_figure(pd.concat([table, other]), FIGURES["fig1_anisotropy"], ["unused.png"])
    (axes,) = drawn[0].axes
    assert all(max(line.get_ydata()) < 5 for line in axes.get_lines())


def test_word_benchmarks_heatmap_cells_are_the_scores(drawn, caplog):
    rng = np.random.default_rng(2)
    rows = [
        {
            "source": "this run",
            "protocol": protocol,
            "model": "alpha",
            "method": "pc1",
            "layer": layer,
            "benchmark": benchmark,
            "value": rng.uniform(),
            "coverage": 0.0 if (layer, benchmark) == (1, "google") else 0.9,
        }
        for protocol in ("standard", "paper")
        for layer in (0, 1)
        for benchmark in ("simlex999", "men", "google")
    ]
    rows.append(
        {
            "source": "quoted: Ethayarajh (2019) Table 1",
            "protocol": "paper",
            "model": "BERT",
            "method": "pc1",
            "layer": 1,
            "benchmark": "men",
            "value": 0.2,
            "coverage": np.nan,
        }
    )
    table = pd.DataFrame(rows)
    with caplog.at_level("WARNING"):
        paper.plot_word_benchmarks(table, ["unused.png"])
    axes = drawn[0].axes[0]
    image = axes.get_images()[0].get_array()
    row_labels = [label.get_text() for label in axes.get_yticklabels()]
    column_labels = [label.get_text() for label in axes.get_xticklabels()]
    assert column_labels == ["simlex999", "men", "google"]  # the registry's order
    assert "BERT pc1 L1 (paper)" in row_labels
    for item in rows[:-1]:
        label = f"alpha pc1 L{item['layer']} [{item['protocol']}]"
        cell = image[row_labels.index(label), column_labels.index(item["benchmark"])]
        if item["coverage"] < paper.MINIMUM_COVERAGE:  # greyed out: masked, and a warning
            assert cell is np.ma.masked
        else:
            assert cell == pytest.approx(item["value"])
    assert "2 of 13 Table 1 scores cover under 50% of their benchmark's items" in caplog.text
    assert "alpha pc1 L1 [paper] on google" in caplog.text


def test_transform_comparison_lines_are_the_tables_values(drawn):
    """One row of panels per model; in each, one line per transform of adjusted SelfSim or
    of the raw anisotropy baseline, equal to the table's values."""
    base = _summary_table(np.random.default_rng(3))
    table = pd.concat(
        [base, base.assign(transform="center", raw=base["raw"] - 2, adjusted=base["adjusted"] + 3)]
    )
    paper.plot_transforms(table, ["unused.png"])
    axes = drawn[0].axes
    assert len(axes) == len(MODELS) * len(paper.TRANSFORM_PANELS)
    panels = iter(axes)
    for model in sorted(MODELS):
        for measure, column, _ in paper.TRANSFORM_PANELS:
            lines = {line.get_label(): line for line in next(panels).get_lines()}
            for transform in ("none", "center"):
                rows = table[
                    (table["model"] == model)
                    & (table["measure"] == measure)
                    & (table["transform"] == transform)
                ].sort_values("layer")
                np.testing.assert_allclose(lines[transform].get_ydata(), rows[column])
                np.testing.assert_allclose(lines[transform].get_xdata(), rows["layer"])


def test_geometry_transform_lines_are_the_tables_values(monkeypatch):
    """The corrections' geometry figure: per transform, the intrinsic dimension by layer and
    each layer's CKA and mutual k-NN with the stored layer before it past the first words
    (and their nulls), equal to the tables' values; other pairs of layers, and every
    occurrence's rows, ignored."""
    from contextuality.figures import geometry

    kept = []
    monkeypatch.setattr(
        geometry, "save_figure", lambda figure, outputs, source: kept.append(figure)
    )
    rng = np.random.default_rng(4)
    layers = [0, 2, 5]
    measures = pd.DataFrame(
        [
            {
                "model": "m",
                "transform": transform,
                "layer": layer,
                "raw": rng.uniform(1, 20),
                "measure": "intrinsic_dimension[twonn]",
            }
            for transform in ("none", "drop_rogue")
            for layer in layers
        ]
    )
    alignment = pd.DataFrame(
        [
            {
                "model_a": "m",
                "model_b": "m",
                "layer_a": a,
                "layer_b": b,
                "transform": transform,
                "occurrences": occurrences,
                "cka": rng.uniform(),
                "null_cka": rng.uniform(),
                "mutual_knn": rng.uniform(),
                "null_mutual_knn": rng.uniform(),
            }
            for transform in ("drop_rogue", "none")
            for occurrences in ("all", "position>0")
            for a in layers
            for b in layers
        ]
    )
    alignment = alignment.assign(cka_low=alignment["cka"] - 0.01, cka_high=alignment["cka"] + 0.01)
    geometry.plot_geometry_transforms(measures, alignment, ["unused.png"])
    panels = kept[0].axes
    # CKA's interval shaded for each transform; mutual k-NN, without one here, none
    assert len(panels[1].collections) == 2 and not panels[2].collections
    for transform in ("none", "drop_rogue"):
        line = {line.get_label(): line for line in panels[0].get_lines()}[transform]
        expected = measures[measures["transform"] == transform].sort_values("layer")["raw"]
        np.testing.assert_allclose(line.get_ydata(), expected)
        for panel, column in zip(panels[1:3], ("cka", "mutual_knn"), strict=True):
            lines = panel.get_lines()
            drawn = {line.get_label(): line for line in lines}[transform]
            chosen = alignment[
                (alignment["transform"] == transform) & (alignment["occurrences"] == "position>0")
            ].set_index(["layer_a", "layer_b"])
            pairs = [(0, 2), (2, 5)]
            np.testing.assert_allclose(drawn.get_xdata(), [2, 5])
            np.testing.assert_allclose(drawn.get_ydata(), chosen.loc[pairs, column])
            nulls = [line.get_ydata() for line in lines if line.get_linestyle() == ":"]
            assert any(np.allclose(null, chosen.loc[pairs, f"null_{column}"]) for null in nulls)
    # raw wide and beneath, so that a correction equal to it (center) does not hide it
    drawn = {line.get_label(): line for line in panels[1].get_lines()}
    assert drawn["none"].get_linewidth() > drawn["drop_rogue"].get_linewidth()
    assert drawn["none"].get_zorder() < drawn["drop_rogue"].get_zorder()
    paper.plt.close(kept[0])
