"""Legends kept off the data (`figures.legends`): a legend over a line's vertices, its
segments or a scatter's markers is found and moved beside its panel, one over nothing is
left where it is, and every saved figure goes through the check."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from contextuality.figures.legends import keep_legends_off_data, legend_over_data  # noqa: E402
from contextuality.figures.paper import save_figure  # noqa: E402


@pytest.fixture
def panel():
    figure, axes = plt.subplots(figsize=(4.0, 3.0))
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    yield axes
    plt.close(figure)


def _legend_box(axes):
    figure = axes.figure
    figure.draw_without_rendering()
    return axes.get_legend().get_window_extent()


def test_a_legend_over_a_line_s_vertices_is_found(panel):
    panel.plot([0.1, 0.9], [0.95, 0.95], "o-", label="top")
    panel.legend(loc="upper right")
    panel.figure.draw_without_rendering()
    assert legend_over_data(panel)


def test_a_legend_over_a_segment_between_far_vertices_is_found(panel):
    """The vertices lie beyond the panel's sides, outside the legend: only the segment
    between them crosses it."""
    panel.plot([-1.0, 2.0], [0.93, 0.93], "-", label="across")
    panel.legend(loc="upper right")
    panel.figure.draw_without_rendering()
    box = _legend_box(panel)
    corners = panel.transData.transform([[-1.0, 0.93], [2.0, 0.93]])
    assert not any(box.contains(x, y) for x, y in corners)
    assert legend_over_data(panel)


def test_a_legend_over_scatter_markers_is_found(panel):
    panel.scatter([0.9, 0.92], [0.93, 0.95], label="points")
    panel.plot([0.0, 0.1], [0.0, 0.05], "-", label="corner")
    panel.legend(loc="upper right")
    panel.figure.draw_without_rendering()
    assert legend_over_data(panel)


def test_a_legend_over_nothing_stays_inside_and_the_figure_keeps_its_size(panel):
    panel.plot([0.0, 1.0], [0.05, 0.1], "o-", label="low")
    panel.legend(loc="upper right")
    size = panel.figure.get_size_inches().copy()
    keep_legends_off_data(panel.figure)
    assert not legend_over_data(panel)
    assert np.allclose(panel.figure.get_size_inches(), size)
    assert _legend_box(panel).x1 <= panel.get_window_extent().x1 + 1


def test_a_legend_over_data_moves_beside_the_panel_in_a_wider_figure(panel):
    for level in np.linspace(0.05, 0.95, 10):
        panel.plot([0.0, 1.0], [level, level], "-", label=f"{level:.1f}")
    panel.legend(loc="best")
    size = panel.figure.get_size_inches().copy()
    keep_legends_off_data(panel.figure)
    assert not legend_over_data(panel)
    assert _legend_box(panel).x0 >= panel.get_window_extent().x1 - 1
    assert panel.figure.get_size_inches()[0] > size[0]
    assert panel.figure.get_size_inches()[1] == size[1]


def test_a_saved_figure_has_no_legend_over_its_data(tmp_path):
    figure, axes = plt.subplots(figsize=(4.0, 3.0))
    for level in (0.2, 0.5, 0.8):
        axes.plot([0.0, 1.0], [level, level], "o-", label=f"{level}")
    axes.legend(loc="center")
    save_figure(figure, [tmp_path / "lines.png"], source="test")
    assert (tmp_path / "lines.png").stat().st_size > 0
    assert not legend_over_data(axes)
    assert _legend_box(axes).x0 >= axes.get_window_extent().x1 - 1
