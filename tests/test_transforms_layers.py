"""A layer read for the measures (`layers.load_layer`): as stored, or corrected slice by
slice from its shard, equal to correcting the whole layer in memory."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contextuality.errors import InputDataError
from contextuality.files.provenance import provenance_record, sha256_file
from contextuality.files.tables import write_parquet
from contextuality.storage.shards import ShardSetWriter
from contextuality.transforms.fitting import TRANSFORMS, TransformSettings, corrected_occurrences
from contextuality.transforms.layers import TransformFit, load_layer

N_SENTENCES, WORDS, DIM = 60, 5, 12


@pytest.fixture
def stored(tmp_path):
    """A float16 shard of 60 five-word sentences (one row without a vector), its
    occurrences, the index summary and a correction split holding out a fifth."""
    rng = np.random.default_rng(3)
    vectors = (rng.standard_normal((N_SENTENCES * WORDS, DIM)) + 3.0).astype(np.float16)
    vectors[7] = np.nan
    path = tmp_path / "layer_1.h5"
    with ShardSetWriter({1: path}, len(vectors), DIM, "float16", {"index_checksum": "i"}) as w:
        w.write(0, vectors[None])
        w.commit({})
    occurrences = pd.DataFrame({"sentence_id": np.repeat(np.arange(N_SENTENCES), WORDS)})
    fit = np.zeros(N_SENTENCES, dtype=bool)
    fit[rng.choice(N_SENTENCES, N_SENTENCES // 5, replace=False)] = True
    split = tmp_path / "split.parquet"
    record = provenance_record(
        fit_fraction=0.2, seed=0, n_fit_sentences=int(fit.sum()), corpus_checksum="c"
    )
    write_parquet(pd.DataFrame({"sentence_id": range(N_SENTENCES), "fit": fit}), split, record)
    summary = {"index_checksum": "i", "corpus_checksum": "c"}
    return vectors, path, occurrences, summary, split, fit


def test_none_is_the_stored_layer(stored):
    vectors, path, occurrences, summary, _, _ = stored
    layer = load_layer(path, summary, occurrences)
    assert layer.vectors.dtype == np.float16 and layer.transform_fit is None
    np.testing.assert_array_equal(layer.vectors, vectors)
    assert layer.occurrences is occurrences


@pytest.mark.parametrize("transform", [name for name in TRANSFORMS if name != "none"])
def test_a_correction_read_from_the_shard_equals_one_applied_in_memory(stored, transform):
    vectors, path, occurrences, summary, split, fit = stored
    settings = {"fit_fraction": 0.2, "seed": 0, "abtt_directions": 2}
    layer = load_layer(path, summary, occurrences, transform, TransformFit.of(split, settings))
    whole, fitted = corrected_occurrences(
        vectors,
        occurrences["sentence_id"].to_numpy(),
        fit,
        transform,
        TransformSettings(**settings),
    )
    measured = ~fit[occurrences["sentence_id"].to_numpy()]
    np.testing.assert_array_equal(layer.vectors, whole[measured])
    np.testing.assert_array_equal(
        layer.occurrences["sentence_id"], occurrences["sentence_id"][measured]
    )
    assert layer.transform_fit == {
        **fitted.describe(),
        "fit_fraction": 0.2,
        "fit_without_first_words": False,
        "seed": 0,
        "n_fit_sentences": int(fit.sum()),
        "split_sha256": sha256_file(split),
    }


def test_a_correction_needs_its_split_and_refuses_another_corpus_s(stored):
    _, path, occurrences, summary, split, _ = stored
    with pytest.raises(ValueError, match="needs the fit split"):
        load_layer(path, summary, occurrences, "center")
    assert TransformFit.of(None, {"seed": 0}) is None
    other = {**summary, "corpus_checksum": "another"}
    with pytest.raises(InputDataError, match="another corpus"):
        load_layer(path, other, occurrences, "center", TransformFit.of(split, {"seed": 0}))


def test_whitening_a_stored_float16_layer_drops_its_null_direction(stored, tmp_path):
    """Layer-normalized rows (Σ_j x_j = 0) stored as float16: the correction read from the
    shard treats the normal's rounding noise as null, by the shard's dtype."""
    _, _, occurrences, summary, split, _ = stored
    rng = np.random.default_rng(4)
    rows = rng.standard_normal((N_SENTENCES * WORDS, DIM)) * np.geomspace(2.0, 0.2, DIM) + 1.0
    rows -= rows.mean(axis=1, keepdims=True)
    path = tmp_path / "normalized.h5"
    with ShardSetWriter({1: path}, len(rows), DIM, "float16", {"index_checksum": "i"}) as w:
        w.write(0, rows.astype(np.float16)[None])
        w.commit({})
    layer = load_layer(path, summary, occurrences, "whiten", TransformFit.of(split, {"seed": 0}))
    parameters = layer.transform_fit["parameters"]
    assert parameters["stored_as"] == "float16" and parameters["null_directions"] == 1
    assert layer.vectors.shape[1] == DIM - 1
