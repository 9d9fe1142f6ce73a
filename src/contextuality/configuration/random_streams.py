"""Named random streams: every seeded draw of the package, in one table.

Each kind of draw has a stream of its own, a generator seeded with ``[seed, stream]``
(`numpy.random.SeedSequence` spawns independent streams from such keys), so that adding
or removing one kind of draw leaves every other kind's numbers as they were. ``seed`` is
the run's seed (config ``measures.seed``); the summaries record it. Each summary row's
bootstrap draws from a stream of its own, named by the row (`measure_generator`).
"""

from __future__ import annotations

import numpy as np

STREAMS = {
    # Which sentences each correction is fitted on (`fitting.fit_split`).
    "fit_split": (),
    # The MEV baseline's occurrence samples (`equations.explained_variance_baseline`),
    # drawn alike from a shard and from a streamed layer's kept rows.
    "mev_baseline": (1,),
    # The paper's random sentences and words (`equations.paper_word_sample`).
    "paper_sample": (3,),
    # The occurrence samples of IsoScore*.
    "isotropy_samples": (4,),
    # A streamed word's occurrences kept for MEV and its static vector.
    "word_sample": (5,),
    # The occurrences whose nearest neighbours the degeneration analysis finds.
    "degeneration_queries": (11,),
    # The occurrences projected on the common direction (the cone figure).
    "cone_sample": (12,),
    # The occurrences every geometry step reads (the same rows in every model).
    "geometry_sample": (13,),
    # The samples of those rows whose intrinsic dimension is estimated.
    "dimension_samples": (14,),
    # The sentences whose special tokens the special-token profile measures.
    "special_token_sentences": (17,),
    # How each permutation null of the alignment pairs the rows, one permutation for every
    # layer and measure (`alignment.resampled_alignment`).
    "alignment_null": (18,),
    # Which sentences each bootstrap draw of the alignment takes (`resampling.sentence_weights`).
    "alignment_bootstrap": (19,),
    # The sentences each extraction runs alone as well as in their batches (`parity`).
    "parity_sentences": (20,),
    # The scored STS pairs the downstream task draws (`steps.downstream.sts_pairs`).
    "downstream_pairs": (21,),
    # Which pairs each bootstrap draw of a layer's task score takes, the same draws for
    # every layer and sentence pooling (`downstream.task_scores`).
    "downstream_bootstrap": (22,),
    # The orderings of the layers an agreement's permutation test samples, past
    # `downstream.EXACT_ORDERINGS_UP_TO` layers (`downstream.layer_agreement`).
    "downstream_orderings": (23,),
    # Which held-out sentences each bootstrap draw of a perplexity takes, the same draws
    # for every condition (`extraction.ablation_effects`).
    "ablation_effects_bootstrap": (24,),
    # The corpus sentences a training run's early steps are probed on, the same for every
    # run (`steps.training.train_run`).
    "training_probes": (25,),
    # The rows an inverted-file index of neighbours trains on and the queries an index's
    # breadth is calibrated and its recall measured on, the same for every layer
    # (`geometry.index`).
    "neighbour_search": (26,),
}


def generator(seed: int, stream: str) -> np.random.Generator:
    """The generator of `stream` (a key of `STREAMS`) for the run's `seed`."""
    return np.random.default_rng([seed, *STREAMS[stream]])


# The first key of every summary row's own stream (`measure_generator`).
MEASURE_STREAMS = 16


def measure_generator(seed: int, row: str) -> np.random.Generator:
    """The random stream of one summary row (a measure's bootstrap resamples): seeded with
    ``[seed, 16, *row.encode()]``, the row's name itself, so that every row draws its own
    numbers and adding or removing a measure leaves every other row's interval as it was."""
    return np.random.default_rng([seed, MEASURE_STREAMS, *row.encode("utf-8")])
