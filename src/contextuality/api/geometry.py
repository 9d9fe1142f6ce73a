"""The geometry of layers from arrays. Intrinsic dimension over scale, and the alignment
between the layers of one model, or between two models (every alignment measure with its
bootstrap interval, permutation null and calibrated score), each computed by the functions
the geometry steps call (`steps.geometry` calls these; within one model each unordered
pair of layers once, `within_model_alignment`). Each call tells its progress through this
module's logger (`progress.Told`)."""

from __future__ import annotations

import contextlib
import logging
import math
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextuality.api.arguments import (
    as_matrix,
    layer_labels,
    layer_number,
    one_sentence_warning,
    vector_rows,
    words_of,
)
from contextuality.api.progress import Told
from contextuality.api.rows import row_sentences
from contextuality.configuration.random_streams import generator
from contextuality.configuration.schema import default
from contextuality.errors import ConfigError, warn
from contextuality.geometry import dimension
from contextuality.geometry.alignment import (
    ALIGNMENT_OCCURRENCES,
    AlignmentResult,
    SampledLayers,
    SampleRows,
    alignment_between,
)
from contextuality.geometry.baselines import word_baselines
from contextuality.geometry.best_layers import empty_best_layers
from contextuality.geometry.layer_pairs import layer_pair_alignment
from contextuality.geometry.resume import ResampleDone
from contextuality.geometry.settings import GeometrySettings
from contextuality.measures.summary import measures_table as summary_table

log = logging.getLogger(__name__)
# What an alignment does before its first null or draw, said in its progress until then.
BEFORE_THE_DRAWS = "each layer's neighbours searched, then the values measured"


def default_settings() -> GeometrySettings:
    """The geometry's settings as the workflow's defaults give them, on every row given
    (no sample): seed and confidence the measures', the schema's."""
    return GeometrySettings(
        seed=default("measures", "seed"),
        confidence=default("measures", "confidence"),
        sample_size=None,
    )


@dataclass(frozen=True)
class LayerDimension:
    """A layer's intrinsic dimension: its summary for the measures table (rows
    ``intrinsic_dimension[twonn]`` and ``[gride]``: the value on each curve's plateau) and
    its curves' rows (`dimension.CURVE_COLUMNS`)."""

    summary: dict[str, Any]
    curve_rows: list[dict[str, Any]]

    @property
    def measures(self) -> pd.DataFrame:
        """The layer's rows of measures.tsv (`summary.measures_table`)."""
        return summary_table([self.summary]).reset_index(drop=True)

    @property
    def curves(self) -> pd.DataFrame:
        """The curves over scale, a row per (estimator, scale) (`dimension.CURVE_COLUMNS`),
        as results/tables/dimension_scales.tsv holds them."""
        return pd.DataFrame(self.curve_rows, columns=list(dimension.CURVE_COLUMNS))


def intrinsic_dimension(
    vectors: Any,
    settings: GeometrySettings | None = None,
    *,
    model: str = "arrays",
    layer: int = 0,
    n_layers: int | None = None,
    layer_output: str = "",
    transform: str = "none",
    progress: bool | None = None,
) -> LayerDimension:
    """Both intrinsic-dimension curves (TwoNN and GRIDE over scale) of one layer's
    `vectors` ((n, d) numpy array or torch tensor; rows without a vector skipped as
    `measure_layer` skips them, repeats removed: `dimension.neighbourhoods`) and the value
    on each plateau, warning where the points are few or a curve has no plateau. The
    geometry step calls it on each layer's sampled rows; `model`, `layer`, `n_layers`
    (default: `layer`, at least 1) and `layer_output` label the rows.

    Cost: a search of each row's ``range_max`` nearest neighbours among the n rows
    (O(n² d) exact; an index past its size), every scale of both curves read from it. Its
    stages are logged (a line at the start, one every 15 s, one at the end); progress: a
    tqdm bar (None: where stderr is a terminal or the call runs in a notebook)."""
    settings = settings or default_settings()
    layer, n_layers = layer_labels(layer, n_layers)
    vectors = as_matrix(vectors)
    has_vector = vector_rows(vectors, required=False)  # none: NaN, with a warning below
    dimension_settings = settings.intrinsic_dimension
    cost = (
        f"{int(has_vector.sum()):,} rows × {vectors.shape[1]} dimensions, "
        f"{dimension_settings.range_max} nearest neighbours of each"
    )
    what = f"{model} layer {layer}: intrinsic dimension"
    with Told(log, what, cost, progress=progress) as told:
        told.stage("nearest neighbours")
        searching = generator(settings.seed, "neighbour_search")  # the same in every layer
        neighbours = dimension.neighbourhoods(
            np.asarray(vectors[has_vector]),
            dimension_settings.range_max,
            dimension_settings.search,
            searching,
        )
        told.stage("curves over scale")
        rng = generator(settings.seed, "dimension_samples")  # the same cuts for every layer
        level = settings.confidence
        curves = dimension.dimension_curves(neighbours, dimension_settings, level, rng)
    points = neighbours.points
    layer_fields = {
        "model": model,
        "layer": layer,
        "n_layers": n_layers,
        "layer_output": layer_output,
        "transform": transform,
    }
    measures, rows, flat = {}, [], []
    for name, curve in curves.items():
        found = dimension.plateau(
            curve, dimension_settings.plateau_width, dimension_settings.plateau_tolerance
        )
        measures[f"intrinsic_dimension[{name}]"] = dimension.plateau_summary(
            curve, found, len(points)
        )
        rows += dimension.curve_rows(layer_fields, curve, found, len(points))
        flat.append(
            f"{name} {found.value:.1f} at {found.scale(curve)}" if found else f"{name} none"
        )
    missing = [
        name for name in curves if math.isnan(measures[f"intrinsic_dimension[{name}]"]["raw"])
    ]
    _dimension_warnings(f"{model} layer {layer} ({transform})", len(points), missing, settings)
    log.info("layer %d: plateau %s (%d distinct points)", layer, ", ".join(flat), len(points))
    summary = layer_fields | {"measures": measures}
    return LayerDimension(summary, rows)


def _dimension_warnings(
    where: str, points: int, missing: list[str], settings: GeometrySettings
) -> None:
    """Warn where a layer's intrinsic dimension rests on too few distinct `points`, or
    else where the curves named `missing` have no plateau."""
    if points < dimension.MIN_DIMENSION_POINTS:
        warn(
            [
                f"{where}: intrinsic dimension from {points} distinct points (fewer than "
                f"{dimension.MIN_DIMENSION_POINTS}): its estimate means little, and is NaN "
                "where too few to estimate"
            ]
        )
    elif missing:
        found = settings.intrinsic_dimension
        warn(
            [
                f"{where}: no plateau in the {' and '.join(missing)} "
                f"curve{'s' if len(missing) > 1 else ''} "
                f"(no {found.plateau_width} consecutive scales within "
                f"{found.plateau_tolerance:.0%} of each other): its intrinsic "
                "dimension moves with the scale it is read at, so the measures table gives "
                "NaN; results/tables/dimension_scales.tsv gives the curve"
            ]
        )


def baselines_at_once(
    name: str,
    layers: SampledLayers,
    sample: SampleRows,
    settings: GeometrySettings,
    transform: str,
    progress: ResampleDone | None = None,
    resume_in: str | Path | None = None,
) -> pd.DataFrame:
    """The alignment between every layer of a model and each word baseline of
    ``settings.alignment.baselines`` on every occurrence (`ALIGNMENT_COLUMNS`, a
    baseline's rows after another's), from one alignment with the baselines as the layers
    of one model: each null and draw multiplies and searches the model's layers once for
    every baseline. The same permutations and draws as each baseline aligned alone (whose
    streams start afresh, as these do), the same values to rounding; `progress` called
    after each null and draw; `resume_in` as `alignment_between` takes it."""
    baselines = word_baselines(sample.words, sample.positions, settings.alignment.baselines)
    named = list(baselines)
    joined = SampledLayers(
        {place: baselines[each].vectors[0] for place, each in enumerate(named)}, {}
    )
    arguments = (sample, settings.seed, settings.confidence, settings.alignment, transform)
    table = alignment_between(
        (name, layers), ("baselines", joined), *arguments, ("all",), progress, resume_in
    ).table
    table["model_b"] = np.asarray(named, dtype=object)[table["layer_b"].to_numpy()]
    table["layer_b"] = 0
    order = np.argsort(table["model_b"].map(named.index).to_numpy(), kind="stable")
    return table.iloc[order].reset_index(drop=True)


def sample_of(
    sentences: Sequence[Any],
    positions: Sequence[int] | None,
    words: Sequence[str] | None,
    where: str,
) -> SampleRows:
    """What the alignment reads of the rows given (`SampleRows`): each one's sentence (any
    label; a bootstrap draw resamples sentences, a warning naming `where` if there is one
    only), its position (default: a sentence's rows in the order given; the
    ``position>0`` occurrences are those past the first word) and its word (the word
    baselines; None: no baseline)."""
    n_rows = len(sentences) if hasattr(sentences, "__len__") else 0
    codes, labels, position = row_sentences(sentences, positions, n_rows)
    one_sentence_warning(codes, labels, where)
    word_codes = None
    if words is not None:
        word_codes = pd.factorize(pd.Series(words_of(words, len(codes))))[0]
    return SampleRows(
        later=position > 0, sentences=codes, sampled=False, words=word_codes, positions=position
    )


def _layers(layers: Mapping[int, Any] | Sequence[Any], n_rows: int, side: str) -> SampledLayers:
    """A model's layers given as {layer: (n, d) array} or a list (layer i at i), checked
    to have the `n_rows` rows, some with a vector (`arguments.vector_rows`)."""
    items = layers.items() if isinstance(layers, Mapping) else enumerate(layers)
    vectors = {
        layer_number(layer, f"{side}'s layer key"): as_matrix(array, f"{side} layer {layer}")
        for layer, array in items
    }
    if not vectors:
        raise ConfigError(f"{side}: no layer given")
    for layer, matrix in vectors.items():
        if len(matrix) != n_rows:
            raise ConfigError(f"{side} layer {layer}: {len(matrix)} rows, not the {n_rows} given")
        vector_rows(matrix, f"{side} layer {layer}")
    return SampledLayers(vectors, {layer: {} for layer in vectors})


def _cost(
    pairs: int, settings: GeometrySettings, n_rows: int, occurrences: tuple[str, ...]
) -> tuple[str, int]:
    """What an alignment computes, in words, and its count of resamples (each a null or a
    bootstrap draw: the progress's unit)."""
    alignment = settings.alignment
    draws = 1 + alignment.permutations + alignment.bootstrap
    said = (
        f"{pairs} pair{'s' * (pairs != 1)} of layers × {draws} computations (the value, "
        f"{alignment.permutations} permutations, {alignment.bootstrap} bootstrap draws) × "
        f"{n_rows:,} rows, on {' and '.join(occurrences)} occurrences"
    )
    return said, len(occurrences) * (draws - 1)


@contextlib.contextmanager
def _searches_shared(resume_in: str | Path | None, baselines: bool) -> Iterator[str | Path | None]:
    """`resume_in`; where there is none and word baselines follow the pairs of layers, a
    temporary folder for the call, removed after it, so that the baselines read the
    layers' neighbours the pairs found on every occurrence (`resume.ResumeStore.searched`)
    rather than search each layer a third time (minutes a layer on a million rows)."""
    if resume_in is not None or not baselines:
        yield resume_in
        return
    with tempfile.TemporaryDirectory(prefix="contextuality-alignment-") as folder:
        yield folder


def within_model_alignment(
    name: str,
    layers: SampledLayers,
    sample: SampleRows,
    settings: GeometrySettings,
    transform: str,
    occurrences: tuple[str, ...] = ALIGNMENT_OCCURRENCES,
    progress: bool | None = None,
    resume_in: str | Path | None = None,
) -> pd.DataFrame:
    """The alignment between every two layers of a model on the `occurrences` named
    (`alignment.ALIGNMENT_COLUMNS`), each unordered pair once and listed in both orders
    (`layer_pairs.layer_pair_alignment`), then each layer with each word baseline on
    every occurrence where `sample` has words (`baselines_at_once`): `alignment` within
    one model, and the geometry step's table. Its cost and progress told
    (`progress.Told`); `resume_in` as `alignment_between` takes it."""
    count = len(layers.vectors)
    cost, total = _cost(count * (count - 1) // 2, settings, len(sample.sentences), occurrences)
    baselines = settings.alignment.baselines if sample.words is not None else ()
    if baselines:
        cost += f"; and {count} layers × {len(baselines)} word baselines on all occurrences"
        total += total // len(occurrences)
    what = f"alignment of {name}'s {count} layers"
    with (
        Told(log, what, cost, total, "draws", progress, before=BEFORE_THE_DRAWS) as told,
        _searches_shared(resume_in, bool(baselines)) as resume_in,
    ):
        tables = [
            layer_pair_alignment(
                name,
                layers,
                sample,
                settings.seed,
                settings.confidence,
                settings.alignment,
                transform,
                occurrences,
                told.update,
                resume_in,
            )
        ]
        if baselines:
            tables.append(
                baselines_at_once(name, layers, sample, settings, transform, told.update, resume_in)
            )
    return pd.concat(tables, ignore_index=True)


def alignment(
    left: Mapping[int, Any] | Sequence[Any],
    right: Mapping[int, Any] | Sequence[Any] | None = None,
    *,
    sentences: Sequence[Any],
    positions: Sequence[int] | None = None,
    words: Sequence[str] | None = None,
    settings: GeometrySettings | None = None,
    names: tuple[str, str] = ("left", "right"),
    transform: str = "none",
    occurrences: tuple[str, ...] = ALIGNMENT_OCCURRENCES,
    progress: bool | None = None,
    resume_in: str | Path | None = None,
) -> AlignmentResult:
    """Every alignment measure (linear CKA, debiased CKA, angular Procrustes, mutual k-NN,
    CKNNA) between every layer of `left` and every layer of `right` (of `left` itself when
    None), each with its bootstrap interval over sentences, permutation null and
    calibrated score, on every row and on those past each sentence's first word.

    left, right: {layer: (n, d) array or tensor} or a list of them (layer i at i), row i
    of every layer the same occurrence, of sentence ``sentences[i]`` at ``positions[i]``.
    Within one model, with `words`, also each layer against the word baselines of
    ``settings.alignment.baselines`` (what the word alone gives). Returns the table
    (`alignment.ALIGNMENT_COLUMNS`) and, between two models, each layer's best-matching
    layer of the other.

    Within one model each unordered pair of layers is computed once
    (`geometry.layer_pairs`) and listed in both orders, the same value, interval and null
    in both rows (CKNNA, not quite symmetric, that of the order a < b); a layer with
    itself is listed with the measure's best value (1, 0 for Procrustes; NaN where
    undefined), that value for interval and no null (NaN null, threshold, p-value and
    calibrated score).

    Cost: pairs × (1 + permutations + bootstrap) × rows, on each set of `occurrences`
    (pairs: L(L − 1)/2 within one model of L layers, L × L' between two), each
    computation a product of the layers' rows (rows × width²) and a neighbour measure per
    pair (rows × k); with `words`, layers × baselines × as many on every row more. For a
    quicker look, ``AlignmentSettings(permutations=1, bootstrap=0)`` (no interval, a rough
    null) on ``occurrences=("all",)`` costs 2 computations of the default 51 on one set of
    rows of two. The cost is logged at the start, the draws done every 15 s, and the end;
    progress: a tqdm bar of the draws (None: where stderr is a terminal or the call runs in
    a notebook).

    resume_in: a folder that keeps each layer's neighbours and each null and draw as they
    are found, under a key of all they rest on (`geometry.resume`): a call stopped
    part-way (an interrupted notebook, a job killed) and made again with the same
    arguments takes up where it stopped, to the same table. Left in place afterwards (a
    later call with the same arguments reads everything from it); None: nothing kept
    after the call (within one model with `words`, a temporary folder during it, so that
    the word baselines read the layers' neighbours the pairs of layers found).
    """
    settings = settings or default_settings()
    settings.alignment.search_device()
    sample = sample_of(sentences, positions, words, "alignment")
    n_rows = len(sample.sentences)
    left_layers = _layers(left, n_rows, names[0])
    if right is None:
        table = within_model_alignment(
            names[0], left_layers, sample, settings, transform, occurrences, progress, resume_in
        )
        return AlignmentResult(table, empty_best_layers())
    right_layers = _layers(right, n_rows, names[1])
    sides = ((names[0], left_layers), (names[1], right_layers))
    return between_models_alignment(
        sides, sample, settings, transform, occurrences, progress, resume_in
    )


def between_models_alignment(
    sides: tuple[tuple[str, SampledLayers], tuple[str, SampledLayers]],
    sample: SampleRows,
    settings: GeometrySettings,
    transform: str,
    occurrences: tuple[str, ...] = ALIGNMENT_OCCURRENCES,
    progress: bool | None = None,
    resume_in: str | Path | None = None,
) -> AlignmentResult:
    """The alignment between every layer of one model and every layer of another, each
    side (name, layers) on the same rows (`alignment.alignment_between`), and each layer's
    best match in the other: `alignment` between two models, and the geometry step's.
    Its cost and progress told (`progress.Told`); `resume_in` as `alignment_between`
    takes it."""
    (left_name, left), (right_name, right) = sides
    pairs = len(left.vectors) * len(right.vectors)
    cost, total = _cost(pairs, settings, len(sample.sentences), occurrences)
    what = f"alignment of {left_name} and {right_name}"
    with Told(log, what, cost, total, "draws", progress, before=BEFORE_THE_DRAWS) as told:
        return alignment_between(
            *sides,
            sample,
            settings.seed,
            settings.confidence,
            settings.alignment,
            transform,
            occurrences,
            told.update,
            resume_in,
        )
