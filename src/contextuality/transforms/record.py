"""What a correction of a space is (`Correction`): the record that fitting a transform, the
config check of the transforms' names and the docs' list of corrections read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextuality.catalogue.record import Instrument

# What a correction's fit returns: the affine map's mean (d,) and matrix (d, k), float64,
# and the settings as fitted (`affine.FittedTransform`'s).
AffineParameters = tuple[np.ndarray, np.ndarray, dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class Correction(Instrument):
    """One correction of a space: a transform other than ``none``.

    name: the transform's name (config ``measures.transforms``, the ``{transform}`` of the
    outputs' paths); caption: what it does, in one sentence (`Instrument`).
    label: what the docs and the figures call it.
    fit: its affine map estimated from the fitting rows, (n, d) finite rows, n ≥ 2, of the
    held-out sentences of a split (`fitting.fit_split`; past each sentence's first word
    with ``measures.transform_fit.fit_without_first_words``), never the rows it is applied
    to; also given the settings (`fitting.TransformSettings`) and the dtype the rows were
    stored in (whose rounding a fit may need to tell noise from signal). A setting it
    cannot use with these rows is a ConfigError naming the setting.
    settings: the keys of ``measures.transform_fit`` (fields of `TransformSettings`) it reads.
    """

    label: str
    fit: Callable[[np.ndarray, Any, np.dtype], AffineParameters]
    settings: tuple[str, ...] = ()
