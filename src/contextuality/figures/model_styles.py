"""One colour and one marker per model, the same in every figure: a model's name decides
them, whatever other models a figure draws.

Every figure that tells models apart takes their colours from `model_styles`, so that
MiniLM is one colour in the paper's figures, the downstream task's and the embedding
matrices', in every run.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass

# matplotlib's tab10 with its grey (the colour of the figures' reference lines) made black.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#000000",
    "#bcbd22",
    "#17becf",
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")


@dataclass(frozen=True)
class ModelStyle:
    """How a figure draws one model: its line and fill colour and its marker."""

    colour: str
    marker: str


def _choice(name: str) -> int:
    """A number the name alone fixes, the same on every machine (its CRC-32)."""
    return zlib.crc32(name.encode("utf-8"))


def model_styles(models: Iterable[str]) -> dict[str, ModelStyle]:
    """The style of each of `models`: the colour of `PALETTE` and the marker of `MARKERS`
    at the place its name picks (`_choice`; a colour and its marker go together, so that
    a reader who cannot tell two colours apart still tells the markers), the same from
    figure to figure and run to run. Where two models of one figure pick the same place,
    the later in name order takes the next one free; past ten models they repeat."""
    styles, taken = {}, set()
    for name in sorted(dict.fromkeys(models)):
        place = _free_place(_choice(name) % len(PALETTE), taken)
        styles[name] = ModelStyle(PALETTE[place], MARKERS[place])
    return styles


def _free_place(start: int, taken: set[int]) -> int:
    """The first place of the palette from `start` on (cyclically) not in `taken`, added
    to it; `start` itself where every place is taken."""
    for step in range(len(PALETTE)):
        place = (start + step) % len(PALETTE)
        if place not in taken:
            taken.add(place)
            return place
    return start


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """Each of `models`' colour (`model_styles`)."""
    return {name: style.colour for name, style in model_styles(models).items()}
