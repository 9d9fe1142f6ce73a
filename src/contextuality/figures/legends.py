"""Legends kept off the data: a legend drawn inside a panel over a line's points or
segments, or a scatter's markers, is moved beside the panel before a figure is saved.

Matplotlib's ``loc="best"`` only ranks the places it tries; where every one covers data it
draws over it anyway, and a reader cannot read the values beneath.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.collections import PathCollection

# Points checked along each segment of a line between its vertices.
SEGMENT_SAMPLES = 24


def _line_points(line: Any) -> np.ndarray:
    """A line's vertices and points along its drawn segments, in display pixels (n × 2)."""
    xy = np.asarray(line.get_xydata(), dtype=np.float64)
    if len(xy) == 0 or line.get_linestyle() in ("None", "", " "):
        points = xy
    else:
        steps = np.linspace(0.0, 1.0, SEGMENT_SAMPLES)[:, None, None]
        points = (xy[:-1] + steps * (xy[1:] - xy[:-1])).reshape(-1, 2)
        points = np.vstack([xy, points])
    points = points[np.isfinite(points).all(axis=1)]
    return line.get_transform().transform(points) if len(points) else points


def _marker_points(collection: Any) -> np.ndarray:
    """A scatter's marker centres in display pixels (n × 2)."""
    offsets = np.asarray(collection.get_offsets(), dtype=np.float64).reshape(-1, 2)
    offsets = offsets[np.isfinite(offsets).all(axis=1)]
    return collection.get_offset_transform().transform(offsets) if len(offsets) else offsets


def legend_over_data(panel: Any) -> bool:
    """Whether `panel`'s legend covers any of its lines (vertices and segments) or
    scatter markers, as the figure is laid out now."""
    legend = panel.get_legend()
    if legend is None or not legend.get_visible():
        return False
    box = legend.get_window_extent()
    drawn = [_line_points(line) for line in panel.lines if line.get_visible()]
    drawn += [
        _marker_points(collection)
        for collection in panel.collections
        if collection.get_visible() and isinstance(collection, PathCollection)
    ]
    for points in drawn:
        inside = (
            (points[:, 0] >= box.x0)
            & (points[:, 0] <= box.x1)
            & (points[:, 1] >= box.y0)
            & (points[:, 1] <= box.y1)
        )
        if inside.any():
            return True
    return False


def keep_legends_off_data(figure: Any) -> None:
    """Move each panel legend of `figure` that covers data beside its panel (its right,
    centred), the figure widened by the legend's width so that the panel keeps its own."""
    if not any(panel.get_legend() for panel in figure.axes):
        return  # no layout pass: a figure without panel legends is drawn as before
    figure.draw_without_rendering()
    for panel in figure.axes:
        if legend_over_data(panel):
            legend = panel.get_legend()
            width, height = figure.get_size_inches()
            added = legend.get_window_extent().width / figure.dpi
            figure.set_size_inches(width + added, height)
            legend.set_loc("center left")
            legend.set_bbox_to_anchor((1.0, 0.5), transform=panel.transAxes)
            figure.draw_without_rendering()
