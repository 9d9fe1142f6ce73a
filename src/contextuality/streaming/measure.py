"""A streamed layer measured: its state file turned into the tables of a stored layer.

`measure_streamed_layer` gives the per-word table, per-sentence table and summary that
`analysis.measure_layer` gives for the exact family, from a layer's sums and samples
(`state.StreamingState`); `static_vectors_from_state` gives its static vectors.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contextuality.measures import analysis, components, equations, registry
from contextuality.measures.analysis import LayerMeasures
from contextuality.measures.occurrences import word_rows
from contextuality.measures.record import LayerInputs
from contextuality.measures.settings import MeasureSettings
from contextuality.measures.summary import Baseline
from contextuality.rows import group_sizes, rows_with_vectors, run_starts
from contextuality.streaming.state import LayerSums, StreamingState


def _sentence_sums(sums: LayerSums) -> equations.SentenceSums:
    """The streamed layer's sums of unit rows by sentence, as a stored layer's."""
    return equations.SentenceSums(
        sums.unit_sum, sums.sentence_square_by_dimension, sums.n, sums.same_sentence_pairs
    )


class _KeptRows:
    """The kept rows as if they were the whole layer, for `equations.explained_variance_baseline`:
    ``len`` is the index's row count and indexing by occurrence ids gives their vectors, the
    rows without a vector left out (a row that was not kept is an error)."""

    def __init__(self, rows: np.ndarray, vectors: np.ndarray, n_rows: int) -> None:
        self._rows, self._vectors, self._n_rows = rows, vectors, n_rows
        self.shape = (n_rows, vectors.shape[1])

    def __len__(self) -> int:
        return self._n_rows

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        positions = np.minimum(np.searchsorted(self._rows, index), len(self._rows) - 1)
        if not np.array_equal(self._rows[positions], index):
            raise KeyError("a row outside the state's kept rows was asked for")
        matrix = self._vectors[positions]
        return matrix[rows_with_vectors(matrix)]


def _sampled_groups(
    state: StreamingState, word_of_row: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The words' sampled rows with a vector, grouped by word (rows in occurrence order
    within each, as a shard's rows sorted by word and sentence): (vectors, position of each
    group's word in ``state.word_id``, group starts)."""
    chosen = np.flatnonzero(state.in_word_sample)
    chosen = chosen[rows_with_vectors(state.kept_vectors[chosen])]
    words = word_of_row[state.kept_rows[chosen]]
    chosen = chosen[np.argsort(words, kind="stable")]
    words = word_of_row[state.kept_rows[chosen]]
    starts = run_starts(words)
    positions = np.searchsorted(state.word_id, words[starts])
    return state.kept_vectors[chosen], positions, starts


def _check_settings(state: StreamingState, settings: MeasureSettings) -> None:
    drawn = state.settings
    for name in ("seed", "baseline_sample_size", "sample_replicates"):
        if getattr(drawn, name) != getattr(settings, name):
            raise ValueError(
                f"the state was sampled with {name} = {getattr(drawn, name)}, but the measure "
                f"settings give {getattr(settings, name)}; stream again with these settings"
            )


def _word_table(
    state: StreamingState, occurrences: pd.DataFrame, vocab: pd.DataFrame
) -> pd.DataFrame:
    """The per-word table of a streamed layer, less its adjusted values: the per-word
    columns of the registry's streamed measures (`streamed_word_columns`), SelfSim exact
    from the sums, each other one a statistic of the word's sampled occurrences along their
    first direction (`components.FirstComponentStatistics`: MEV, uncentered and centered),
    whose number is ``n_sampled``; words of two or more occurrences."""
    sums = state.sums
    words = word_rows(vocab, state.word_id)
    words["n"] = sums.word_n
    words["n_with_repeats"] = sums.word_n_with_repeats
    n = sums.word_n.astype(np.float64)
    pairs = n**2 - sums.word_context_pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        squared = np.einsum("ij,ij->i", sums.word_unit_sum, sums.word_unit_sum)
        words["selfsim"] = np.where(pairs > 0, (squared - sums.word_context_square) / pairs, np.nan)
    vectors, positions, starts = _sampled_groups(state, occurrences["word_id"].to_numpy())
    # The rows were rounded to the shard dtype before they were kept, as a shard's are.
    stored = state.attributes.get("dtype")
    statistics = components.first_component_statistics(vectors, starts, stored=stored)
    for column in streamed_word_columns():
        if column in words:
            continue
        values = np.full(len(words), np.nan)
        values[positions] = getattr(statistics, column)
        words[column] = values
    sampled = np.zeros(len(words), dtype=np.int64)
    sampled[positions] = group_sizes(starts, len(vectors))
    words["n_sampled"] = sampled
    return words[words["n"] >= 2].reset_index(drop=True)


def _baselines(state: StreamingState, settings: MeasureSettings) -> dict[str, Baseline]:
    """The exact cosine baseline from the sums, and the MEV baselines from the samples
    kept as they streamed by (the very draws of a stored layer's)."""
    n_rows = int(state.attributes["n_rows"])
    kept = _KeptRows(state.kept_rows, state.kept_vectors, n_rows)
    return {
        "cosine": Baseline(_sentence_sums(state.sums).expected_cosine()),
        **analysis.explained_variance_baselines(kept, settings),
    }


def streamed_word_columns() -> list[str]:
    """The per-word columns of the measures a streamed layer has (`registry.word_columns`
    less `registry.not_streamed_columns`), in the registry's order."""
    lacked = set(registry.not_streamed_columns())
    return [column for column in registry.word_columns() if column not in lacked]


def measure_streamed_layer(
    state: StreamingState,
    occurrences: pd.DataFrame,
    vocab: pd.DataFrame,
    settings: MeasureSettings,
) -> LayerMeasures:
    """The exact family of `analysis.measure_layer` from a layer's streamed state.

    Per-word table: the same columns (vocabulary columns, class, n, n_with_repeats,
    selfsim, mev, mev_centered and the adjusted values) less `registry.not_streamed_columns`, plus
    ``n_sampled``, the occurrences behind a word's MEV (all of them when the word has at
    most ``word_sample_size``, and then MEV equals the shard's). Per-sentence table and
    summary as `analysis.measure_layer`'s, the registry's streamed measures
    (`analysis.measure_rows`), each drawing from its own stream: with no missing vector and
    every word sampled whole, every streamed value and interval equals the shard path's. The
    summary's ``streaming`` says what was sampled and which measures the run lacks
    (`registry.not_streamed`).

    occurrences: the occurrence index (its ``word_id``, to place the sampled rows).
    """
    _check_settings(state, settings)
    sums = state.sums
    n_rows = int(state.attributes["n_rows"])
    if len(occurrences) != n_rows:
        raise ValueError(f"{len(occurrences)} occurrences, but the state has {n_rows} rows")
    baselines = _baselines(state, settings)
    cosine = baselines["cosine"].value
    words = _word_table(state, occurrences, vocab)
    analysis.adjust_word_measures(words, baselines)
    multi_word = np.flatnonzero(sums.sentence_n >= 2)
    sentences = pd.DataFrame(
        {
            "sentence_id": multi_word.astype(occurrences["sentence_id"].dtype),
            "n_words": sums.sentence_n[multi_word],
            "intrasim": sums.sentence_intrasim[multi_word],
            "intrasim_adjusted": sums.sentence_intrasim[multi_word] - cosine,
        }
    )
    layer = LayerInputs(
        settings=settings,
        words=words,
        sentences=sentences,
        baselines=baselines,
        sentence_sums=_sentence_sums(sums),
        n_valid=sums.n,
    )
    results = analysis.measure_rows(layer, streamed=True)
    summary = {
        **analysis.summary_header(settings, n_rows, sums.n),
        "measures": results,
        "streaming": {
            **state.settings.as_dict(),
            "words_sampled_whole": int(np.sum(words["n_sampled"] == words["n"])),
            "not_streamed": registry.not_streamed(),
            "not_streamed_columns": registry.not_streamed_columns(),
        },
    }
    return LayerMeasures(words=words, sentences=sentences, summary=summary)


def static_vectors_from_state(
    state: StreamingState, occurrences: pd.DataFrame, vocab: pd.DataFrame, method: str
) -> tuple[list[str], np.ndarray]:
    """`static.static_vectors` of the state's words: ``pc1`` the first principal direction
    of each word's sampled occurrences (of all of them when it has at most
    ``word_sample_size``), ``mean`` the exact mean of all its occurrence vectors.

    Returns the words in vocabulary order and an (n_words, d) float32 matrix.
    """
    from contextuality.measures.static import METHODS, principal_directions_per_group

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    words = vocab.set_index("word_id").loc[:, "word"]
    if method == "mean":
        present = np.flatnonzero(state.sums.word_n > 0)
        result = state.sums.word_vector_sum[present] / state.sums.word_n[present, None]
    else:
        vectors, present, starts = _sampled_groups(state, occurrences["word_id"].to_numpy())
        result = principal_directions_per_group(np.asarray(vectors, np.float64), starts)
    return words.loc[state.word_id[present]].tolist(), result.astype(np.float32)
