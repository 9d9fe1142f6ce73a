"""Alignment between every layer of one model, or of two models. On the same sampled
occurrences: the sampled rows (`sample_rows`, `SampledLayers`) and the rows with a vector in
every layer; linear CKA, its debiased form and the angular Procrustes distance from the
cross-products (`linear_cka.CrossProducts`) of every occurrence and of those past each
sentence's first word, each set of rows shifted by its own mean (`row_products`); mutual
k-NN and CKNNA from each layer's nearest neighbours (`neighbours`). Every value comes with
an interval from a bootstrap over sentences (the percentile interval less the bootstrap's
bias) and is calibrated against permutation nulls, the right side's rows paired at random
with the left's (`resampling`); between two models, each layer's best-matching layer of
the other (`best_layers`)."""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from contextuality.backends.base import resolved_device
from contextuality.configuration.random_streams import generator
from contextuality.configuration.schema import default
from contextuality.errors import ConfigError, check_integer, warn
from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
from contextuality.geometry.best_layers import best_matching_layers, empty_best_layers
from contextuality.geometry.linear_cka import CrossProducts
from contextuality.geometry.neighbours import SearchedNeighbours, layer_neighbours
from contextuality.geometry.resampling import (
    ResampledAlignment,
    bootstrap_interval,
    calibrate,
    sentence_weights,
)
from contextuality.geometry.resume import ResampleDone, ResumeStore, kept_grids, opened
from contextuality.geometry.row_products import layer_products, taken
from contextuality.geometry.search import SearchSettings
from contextuality.jobs.console import Progress, duration
from contextuality.rows import rows_with_vectors

log = logging.getLogger(__name__)

# The word baselines (`baselines.BASELINES`, which builds them from this module's layers).
BASELINE_NAMES = ("word_identity", "word_position")

# What the alignment table holds of each alignment measure of the catalogue
# (`alignment_catalogue`): its value, its bootstrap interval and the bootstrap's bias
# (`resampling.bootstrap_interval`), the mean of its permutation nulls, the null's
# critical value, the permutation p-value and the calibrated score.
MEASURE_COLUMNS = (
    "{}",
    "{}_low",
    "{}_high",
    "bias_{}",
    "null_{}",
    "threshold_{}",
    "p_{}",
    "calibrated_{}",
)
# The alignment table: the two layers and their rows, then each alignment measure's
# columns, then what they rest on.
ALIGNMENT_COLUMNS = [
    "model_a",
    "layer_a",
    "model_b",
    "layer_b",
    "transform",
    "occurrences",
    *(pattern.format(record.name) for record in ALIGNMENT_MEASURES for pattern in MEASURE_COLUMNS),
    "k",
    "knn_recall",
    "n_rows",
    "permutations",
    "bootstrap",
    "sampled",
]


@dataclass(frozen=True)
class AlignmentSettings:
    """Mutual k-NN's and CKNNA's neighbours per row (platonic-rep's default) and where they
    are searched: ``auto`` (a GPU when torch sees one), ``cpu``, ``cuda`` or ``cuda:N``;
    the permutations every value is calibrated against, the bootstrap draws of its
    interval, and the word baselines aligned with each model (config
    ``geometry.alignment``); how the neighbours are searched (``geometry.search``)."""

    k: int = default("geometry", "alignment", "k")
    device: str = default("geometry", "alignment", "device")
    permutations: int = default("geometry", "alignment", "permutations")
    bootstrap: int = default("geometry", "alignment", "bootstrap")
    baselines: tuple[str, ...] = tuple(default("geometry", "alignment", "baselines"))
    search: SearchSettings = field(default_factory=SearchSettings)

    def __post_init__(self) -> None:
        check_integer("geometry.alignment", "k", self.k, 1)
        check_integer("geometry.alignment", "permutations", self.permutations, 1)
        check_integer("geometry.alignment", "bootstrap", self.bootstrap, 0)
        object.__setattr__(self, "baselines", tuple(self.baselines))
        if isinstance(self.search, dict):
            object.__setattr__(self, "search", SearchSettings(**self.search))
        unknown = sorted(set(self.baselines) - set(BASELINE_NAMES))
        if unknown:
            raise ConfigError(
                f"geometry.alignment.baselines: no baseline called {', '.join(unknown)}; "
                f"there are {list(BASELINE_NAMES)}"
            )

    def search_device(self) -> str:
        """The device the neighbours are searched on, ``auto`` resolved."""
        return resolved_device(self.device, "geometry.alignment.device")


# Which occurrences CKA is computed on: every one, and those past each sentence's first word
# (a decoder's first-token vectors, of huge norm, otherwise dominate linear CKA).
ALIGNMENT_OCCURRENCES = ("all", "position>0")


@dataclass(frozen=True)
class SampleRows:
    """What the alignment reads of the sampled rows: which are past their sentence's first
    word (`later`), each one's sentence (`sentences`, what a bootstrap draw resamples),
    whether they are a sample of the index's rows (`sampled`), and each one's word and
    position in its sentence (the word baselines, `baselines.word_baselines`)."""

    later: np.ndarray
    sentences: np.ndarray
    sampled: bool
    words: np.ndarray | None = None
    positions: np.ndarray | None = None


@dataclass
class SampledLayers:
    """The sampled rows of every layer of a model (float16 as stored, float32 under a
    correction), what the shards record, and under a correction each layer's fit."""

    vectors: dict[int, np.ndarray]
    attributes: dict[int, dict[str, Any]]
    fits: dict[int, dict[str, Any]] = field(default_factory=dict)


# Occurrences the geometry steps read by default (config ``geometry.sample_size``).
GEOMETRY_SAMPLE_SIZE = default("geometry", "sample_size")


def sample_rows(n_rows: int, sample_size: int | None, seed: int) -> np.ndarray:
    """The increasing rows every geometry step reads: `sample_size` of the `n_rows`
    occurrences drawn without replacement (stream ``geometry_sample``), or all of them."""
    if sample_size is None or sample_size >= n_rows:
        return np.arange(n_rows)
    return np.sort(generator(seed, "geometry_sample").choice(n_rows, sample_size, replace=False))


def rows_in_every_layer(*models: SampledLayers) -> np.ndarray:
    """Positions (in the sample) of the rows with a vector in every layer of `models` (a
    sparse layer, a word baseline, has one in every row)."""
    keep = None
    for sampled in models:
        for vectors in sampled.vectors.values():
            if sparse.issparse(vectors):
                continue
            valid = rows_with_vectors(vectors)
            keep = valid if keep is None else keep & valid
    return np.flatnonzero(keep)


# The alignment measures computed from each layer's nearest neighbours.
NEIGHBOUR_MEASURES = tuple(record for record in ALIGNMENT_MEASURES if record.of_neighbours)


def search_neighbours(
    left: SampledLayers,
    right: SampledLayers | None,
    rows: np.ndarray,
    alignment: AlignmentSettings,
    seed: int,
    store: ResumeStore | None = None,
) -> SearchedNeighbours | None:
    """Every layer's neighbours of the sampled `rows`, searched once as
    ``alignment.search`` says (`neighbours.layer_neighbours`), or read from `store` where
    it keeps that search's (each kept there as it is found, under a key of the rows
    searched and the search alone: `resume.ResumeStore.searched`); None where the rows
    are too few for k. Each search's time, or its reading, said in the log."""
    if len(rows) <= alignment.k:
        return None
    search = (alignment.k, alignment.search_device(), alignment.search, seed)
    sides = {"left": left} if right is None else {"left": left, "right": right}
    count, size = sum(len(sampled.vectors) for sampled in sides.values()), f"{len(rows):,}"
    found = {}
    for side, sampled in sides.items():
        found[side] = []
        for layer, vectors in sampled.vectors.items():
            named = f"layer {layer}" if right is None else f"{side} layer {layer}"
            what = f"{named} ({sum(map(len, found.values())) + 1} of {count})"
            searched = taken(vectors, rows)
            place = None if store is None else store.searched([searched, *search])
            kept = None if store is None else store.neighbours(place)
            if kept is not None:
                log.info("%s: neighbours of %s rows kept by their search", what, size)
            else:
                started = time.perf_counter()
                kept = layer_neighbours([searched], *search)[0]
                seconds = time.perf_counter() - started
                log.info("%s: neighbours of %s rows searched in %s", what, size, duration(seconds))
                if store is not None:
                    store.keep_neighbours(place, kept, seconds)
            found[side].append(kept)
    return SearchedNeighbours(found["left"], found.get("right", found["left"]))


def measure_grids(
    left: SampledLayers,
    right: SampledLayers | None,
    rows: np.ndarray,
    searched: SearchedNeighbours | None,
    pairing: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    unpaired: CrossProducts | None = None,
) -> dict[str, np.ndarray]:
    """Every alignment measure of the catalogue between every left layer (rows) and every
    right layer (columns) on the sampled `rows`: as they are, with the right side's rows
    paired by `pairing` (a permutation of positions in `rows`: a null), or each row
    counted `weights` times (a bootstrap draw), a resample's products multiplied in
    float32 (its spread is orders above float32's rounding once each side is shifted by
    its own mean; the values in float64). `unpaired`: the rows' products as they are
    (`layer_products`), the values' own, of which a permutation keeps each side's
    self-products (None: computed). Measures of neighbours keep the sample's
    neighbours (`searched`; NaN where there are none): a permutation re-pairs them
    (`Neighbours.paired`), a draw re-weights their rows."""
    other = left if right is None and pairing is not None else right
    resample = pairing is not None or weights is not None
    precision = np.float32 if resample else np.float64
    if unpaired is not None and not resample:
        products = unpaired
    else:
        kept = unpaired if pairing is not None else None
        products = layer_products(left, other, rows, pairing, weights, precision, kept)
    count = (len(left.vectors), len(left.vectors if right is None else right.vectors))
    grids = {}
    for record in ALIGNMENT_MEASURES:
        if record.of_products is not None:
            grids[record.name] = record.of_products(products)
        elif searched is None:
            grids[record.name] = np.full(count, np.nan)
        else:
            others = searched.right
            if pairing is not None:
                others = [neighbours.paired(pairing) for neighbours in others]
            grids[record.name] = np.array(
                [
                    [record.of_neighbours(one, two, weights) for two in others]
                    for one in searched.left
                ]
            )
    return grids


def _by_measure(grids: list[dict[str, np.ndarray]], like: dict[str, np.ndarray]):
    """Grids of each resample stacked by measure (resamples × …; none: 0 × …)."""
    return {
        name: np.stack([found[name] for found in grids]) if grids else np.empty((0, *grid.shape))
        for name, grid in like.items()
    }


def resampled_alignment(
    left: SampledLayers,
    right: SampledLayers | None,
    rows: np.ndarray,
    sentences: np.ndarray,
    alignment: AlignmentSettings,
    randoms: tuple[np.random.Generator, np.random.Generator],
    seed: int,
    what: str = "alignment",
    progress: ResampleDone | None = None,
    store: ResumeStore | None = None,
) -> ResampledAlignment:
    """`ResampledAlignment` of the sampled `rows` (positions in the sample; `sentences`
    the sentence of each sampled row): the values, ``alignment.permutations`` nulls
    (one permutation of the rows for every layer, from the first generator) and
    ``alignment.bootstrap`` draws over sentences (`resampling.sentence_weights`, from
    the second), their progress told on the console as `what` (`console.Progress`) and
    to `progress`, called after each (`ResampleDone`); each kept in `store` as it is
    found and read from it where it is kept there (the draws drawn all the same)."""
    searched = search_neighbours(left, right, rows, alignment, seed, store)
    unpaired = functools.cache(lambda: layer_products(left, right, rows))

    def grids(name: str, pairing=None, weights=None, done=None) -> dict[str, np.ndarray]:
        def compute() -> dict[str, np.ndarray]:
            products = None if weights is not None else unpaired()
            return measure_grids(left, right, rows, searched, pairing, weights, products)

        return kept_grids(store, name, compute, done)

    values = grids("values")
    permutation_random, bootstrap_random = randoms
    resamples = alignment.permutations + alignment.bootstrap
    told = Progress(f"{what}: permutations and bootstrap draws", resamples, "draws")
    nulls, draws = [], []

    def done(*, read: bool) -> None:
        told.update(read=read)
        if progress:
            progress(read=read)

    for index in range(alignment.permutations):
        pairing = permutation_random.permutation(len(rows))
        nulls.append(grids(f"null-{index}", pairing=pairing, done=done))
    weights = sentence_weights(sentences[rows], alignment.bootstrap, bootstrap_random)
    for index, counts in enumerate(weights):
        draws.append(grids(f"draw-{index}", weights=counts, done=done))
    told.finish()
    return ResampledAlignment(
        values,
        _by_measure(nulls, values),
        _by_measure(draws, values),
        alignment.k,
        len(rows),
        None if searched is None else searched.recall(),
    )


def alignment_frame(
    found: ResampledAlignment,
    names: tuple[str, str],
    layers: tuple[list[int], list[int]],
    occurrences: str,
    sampled: bool,
    confidence: float,
    transform: str = "none",
) -> pd.DataFrame:
    """Every alignment measure of the catalogue between every pair of layers of vectors
    under `transform`, with its bootstrap interval at `confidence` (`bootstrap_interval`)
    and its calibration
    against its permutation nulls (`resampling.calibrate`), as rows of
    `ALIGNMENT_COLUMNS`."""
    left, right = np.meshgrid(layers[0], layers[1], indexing="ij")
    columns = {}
    for record in ALIGNMENT_MEASURES:
        name = record.name
        low, high, bias = bootstrap_interval(
            found.draws[name], found.values[name], confidence, record.limits
        )
        calibration = calibrate(
            found.values[name], found.nulls[name], confidence, record.perfect, record.distance
        )
        columns |= {
            name: found.values[name],
            f"{name}_low": low,
            f"{name}_high": high,
            f"bias_{name}": bias,
            f"null_{name}": calibration.null,
            f"threshold_{name}": calibration.threshold,
            f"p_{name}": calibration.p_value,
            f"calibrated_{name}": calibration.calibrated,
        }
    return pd.DataFrame(
        {
            "model_a": names[0],
            "layer_a": left.ravel(),
            "model_b": names[1],
            "layer_b": right.ravel(),
            "transform": transform,
            "occurrences": occurrences,
            **{name: grid.ravel() for name, grid in columns.items()},
            "k": found.k,
            "knn_recall": np.nan if found.recall is None else found.recall.ravel(),
            "n_rows": found.n_rows,
            "permutations": len(next(iter(found.nulls.values()))),
            "bootstrap": len(next(iter(found.draws.values()))),
            "sampled": sampled,
        },
        columns=ALIGNMENT_COLUMNS,
    )


@dataclass(frozen=True)
class AlignmentResult:
    """The alignment table (`ALIGNMENT_COLUMNS`) and, between two models, each layer's
    best-matching layer of the other (`best_layers.BEST_LAYER_COLUMNS`; none within one
    model)."""

    table: pd.DataFrame
    best_layers: pd.DataFrame


def alignment_between(
    left: tuple[str, SampledLayers],
    right: tuple[str, SampledLayers] | None,
    sample: SampleRows,
    seed: int,
    confidence: float,
    alignment: AlignmentSettings = AlignmentSettings(),
    transform: str = "none",
    occurrences: tuple[str, ...] = ALIGNMENT_OCCURRENCES,
    progress: ResampleDone | None = None,
    resume_in: str | Path | None = None,
) -> AlignmentResult:
    """Every alignment measure, its interval and its permutation null between every layer
    of `left` and every layer of `right` (of `left` itself when None), on the rows with a
    vector in all of them: every one, and those past each sentence's first word (those of
    `ALIGNMENT_OCCURRENCES` named in `occurrences`); rows labelled with the `transform`
    their vectors are under. A permutation pairs each row with one drawn at random from
    the same rows (stream ``alignment_null``), so it keeps nothing of the rows' order; a
    bootstrap draw resamples their sentences (stream ``alignment_bootstrap``). Each set of
    occurrences gets the draws it gets with every set computed: those of a set left out
    before it are drawn and passed over. `progress`: called after each null and draw
    (`ResampleDone`).
    `resume_in`: a folder that keeps each layer's neighbours and each null and draw as
    they are found (`resume.ResumeStore`, under a key of all they rest on), from which a
    run stopped part-way takes up again; None: nothing kept."""
    other = None if right is None else right[1]
    names = (left[0], left[0] if right is None else right[0])
    sides = [(name, sampled.vectors) for name, sampled in filter(None, (left, right))]
    rests = ["ordered pairs", sides, sample, seed, alignment, transform]
    store = opened(resume_in, " and ".join(dict.fromkeys(names)), rests)
    paired = other or left[1]
    kept = rows_in_every_layer(left[1], *([] if other is None else [other]))
    subsets = {"all": kept, "position>0": kept[sample.later[kept]]}
    randoms = (generator(seed, "alignment_null"), generator(seed, "alignment_bootstrap"))
    layers = (list(left[1].vectors), list(paired.vectors))
    frames, best = [], []
    unknown = sorted(set(occurrences) - set(subsets))
    if unknown:
        raise ValueError(f"no occurrences called {', '.join(unknown)}: {list(subsets)}")
    last = max(ALIGNMENT_OCCURRENCES.index(subset) for subset in occurrences)
    for subset in ALIGNMENT_OCCURRENCES[: last + 1]:
        rows = subsets[subset]
        if subset not in occurrences:
            _pass_over_draws(len(rows), sample.sentences[rows], alignment, randoms)
            continue
        what = f"{' and '.join(dict.fromkeys(names))} ({subset} occurrences)"
        if len(rows) <= alignment.k:
            warn(
                [
                    f"{what}: geometry.alignment.k = {alignment.k} is not below the "
                    f"{len(rows)} rows with a vector, so their mutual k-NN and CKNNA are "
                    "NaN; set it lower"
                ]
            )
        scoped = None if store is None else store.scoped(subset)
        found = resampled_alignment(
            left[1], other, rows, sample.sentences, alignment, randoms, seed, what, progress, scoped
        )
        frames.append(
            alignment_frame(found, names, layers, subset, sample.sampled, confidence, transform)
        )
        if right is not None:
            best.append(best_matching_layers(found, names, layers, subset, confidence, transform))
    best_rows = pd.concat(best, ignore_index=True) if best else empty_best_layers()
    return AlignmentResult(pd.concat(frames, ignore_index=True), best_rows)


def _pass_over_draws(
    n_rows: int,
    sentences: np.ndarray,
    alignment: AlignmentSettings,
    randoms: tuple[np.random.Generator, np.random.Generator],
) -> None:
    """Draw, and leave unused, the permutations and bootstrap draws `resampled_alignment`
    takes for `n_rows` rows of `sentences`, so that the next set of occurrences gets its
    own."""
    for _ in range(alignment.permutations):
        randoms[0].permutation(n_rows)
    for _ in sentence_weights(sentences, alignment.bootstrap, randoms[1]):
        pass
