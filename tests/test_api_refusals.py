"""The API's arguments checked at the door (`contextuality.api.arguments`): each bad
argument ends in one line naming the argument and the value, and what the measures drop
is a warning that counts it, on small constructed arrays."""

from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd
import pytest
import torch

from contextuality import api
from contextuality.api.rows import index_rows
from contextuality.errors import ConfigError
from contextuality.geometry.alignment import AlignmentSettings
from contextuality.geometry.settings import GeometrySettings
from contextuality.measures.settings import MeasureSettings

SMALL = MeasureSettings(baseline_sample_size=40, bootstrap_resamples=20, isotropy_samples=3)
GEOMETRY = GeometrySettings(
    seed=0,
    confidence=0.95,
    sample_size=None,
    alignment=AlignmentSettings(k=5, permutations=4, bootstrap=8),
)
N_SENTENCES, PER_SENTENCE = 60, 6


def _rows(seed: int = 0, width: int = 12):
    """Vectors with a shared direction, words of a small vocabulary, and sentence labels
    ``s000``, ``s001``, … (sorting as their numbers do)."""
    rng = np.random.default_rng(seed)
    n_rows = N_SENTENCES * PER_SENTENCE
    words = rng.choice([f"w{k}" for k in range(12)], size=n_rows)
    sentences = np.repeat([f"s{k:03d}" for k in range(N_SENTENCES)], PER_SENTENCE)
    vectors = rng.normal(size=(n_rows, width)) + 2.0 * rng.normal(size=width)
    return vectors.astype(np.float32), words, sentences


def _measure(vectors, words, sentences, **options) -> pd.DataFrame:
    return api.measure_layer(vectors, words, sentences, settings=SMALL, **options)


def _align(layers, sentences, **options):
    return api.alignment(layers, sentences=sentences, settings=GEOMETRY, **options)


def _refused(said: str):
    """The one line expected: a ConfigError whose message begins with `said`."""
    return pytest.raises(ConfigError, match=f"^{re.escape(said)}")


# Vectors


@pytest.mark.parametrize(
    "vectors, said",
    [
        (np.full((360, 12), np.nan), "vectors: none of the 360 rows has a vector"),
        (np.zeros((360, 12)), "vectors: none of the 360 rows has a vector"),
        (torch.full((360, 12), float("inf")), "vectors: none of the 360 rows has a vector"),
        (np.zeros((360, 0)), "vectors: expected rows of at least one dimension, got (360, 0)"),
        (np.ones((360, 2), dtype=object) * "a", "vectors: expected numbers, got an array of"),
    ],
)
def test_vectors_without_a_dimension_or_a_vector_are_refused(vectors, said):
    _, words, sentences = _rows()
    with _refused(said):
        _measure(vectors, words, sentences)


def test_a_layer_without_a_vector_is_refused_by_the_alignment():
    vectors, _, sentences = _rows()
    with _refused("left layer 1: none of the 360 rows has a vector"):
        _align({0: vectors, 1: np.full_like(vectors, np.nan)}, sentences)
    with _refused("right layer 0: expected rows of at least one dimension, got (360, 0)"):
        _align({0: vectors}, sentences, right={0: np.zeros((360, 0))})


def test_intrinsic_dimension_refuses_no_dimension_and_gives_nan_for_no_vector(caplog):
    """No row with a vector is a NaN dimension with a warning (the geometry step's
    behaviour on a layer it cannot estimate); no dimension at all is refused."""
    with _refused("vectors: expected rows of at least one dimension, got (50, 0)"):
        api.intrinsic_dimension(np.zeros((50, 0)))
    with caplog.at_level(logging.WARNING):
        found = api.intrinsic_dimension(np.full((50, 4), np.nan))
    assert found.measures["raw"].isna().all()
    assert "intrinsic dimension from 0 distinct points" in caplog.text


def test_rows_with_a_non_finite_element_are_dropped_with_a_warning_that_counts_them(caplog):
    """A row with one NaN, one inf, or a float16 overflow among finite values is measured
    as a row without a vector (the same table as those rows all NaN), and a warning counts
    the 7 rows; rows wholly NaN are the documented 'no vector' and are not counted."""
    vectors, words, sentences = _rows()
    broken = vectors.astype(np.float16)
    broken[[0, 7, 20], 3] = np.nan
    broken[[1, 50], 0] = np.inf
    with np.errstate(over="ignore"):  # float16 holds up to 65,504: 7e4 overflows to inf
        broken[[2, 90], 5] = np.float32(7e4)
    broken[[3, 4], :] = np.nan  # no vector, as documented
    expected = broken.copy()
    expected[[0, 7, 20, 1, 50, 2, 90]] = np.nan
    with caplog.at_level(logging.WARNING):
        table = _measure(broken, words, sentences)
    counted = [line for line in caplog.messages if "an infinite element" in line]
    assert counted == [
        "vectors: 7 of 360 rows have an infinite element or a NaN among numbers (an "
        "overflow?), and are measured as rows without a vector"
    ]
    pd.testing.assert_frame_equal(table, _measure(expected, words, sentences))
    assert table.set_index("measure").loc["anisotropy", "n"] == 360 - 9


# Layer labels and layer keys


@pytest.mark.parametrize(
    "labels, said",
    [
        ({"n_layers": 0}, "n_layers: 0 is below 1"),
        ({"layer": 6, "n_layers": 3}, "n_layers: 3 is below 6"),
        ({"layer": -1}, "layer: -1 is not a layer (a whole number of at least 0)"),
        ({"layer": "6"}, "layer: '6' is not a layer"),
        ({"layer": 2, "n_layers": 2.5}, "n_layers: 2.5 is not a whole number"),
    ],
)
def test_layer_labels_that_give_no_relative_depth_are_refused(labels, said):
    """`layer` / `n_layers` is a layer's relative depth: n_layers 0 divided by zero."""
    vectors, words, sentences = _rows()
    with _refused(said):
        _measure(vectors, words, sentences, **labels)
    with _refused(said):
        api.intrinsic_dimension(vectors, **labels)


def test_a_layer_s_relative_depth_is_its_layer_over_n_layers():
    vectors, words, sentences = _rows()
    table = _measure(vectors, words, sentences, layer=np.int64(3), n_layers=6)
    assert (table["relative_layer"] == 0.5).all() and (table["layer"] == 3).all()


@pytest.mark.parametrize(
    "key, said",
    [
        ("a", "left's layer key: 'a' is not a layer"),
        ("1", "left's layer key: '1' is not a layer"),
        (-1, "left's layer key: -1 is not a layer"),
        (1.5, "left's layer key: 1.5 is not a layer"),
    ],
)
def test_layer_keys_that_are_not_layer_numbers_are_refused(key, said):
    vectors, _, sentences = _rows()
    with _refused(said):
        _align({0: vectors, key: vectors}, sentences)


def test_numpy_layer_keys_are_layers():
    vectors, _, sentences = _rows()
    rotation = np.linalg.qr(np.random.default_rng(1).normal(size=(12, 12)))[0]
    found = _align({np.int64(0): vectors, np.int32(1): vectors @ rotation}, sentences)
    table = found.table.query("occurrences == 'all'").set_index(["layer_a", "layer_b"])
    assert table.loc[(0, 1), "cka"] > 0.999


# Words and sentence labels


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_a_missing_word_is_refused_by_row(missing):
    """None or NaN would be measured as the words 'None' and 'nan'."""
    vectors, words, sentences = _rows()
    words = words.astype(object)
    words[[4, 9]] = missing
    said = f"words: row 4 is {missing!r}, not a word (2 such rows)"
    with _refused(said):
        _measure(vectors, words, sentences)
    with _refused(said):
        _align([vectors], sentences, words=words)


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_a_missing_sentence_label_is_refused_by_row(missing):
    vectors, words, sentences = _rows()
    sentences = sentences.astype(object)
    sentences[7] = missing
    said = f"sentences: row 7 is {missing!r}, not a sentence label (1 such row)"
    with _refused(said):
        _measure(vectors, words, sentences)
    with _refused(said):
        _align([vectors], sentences)


def test_an_unhashable_sentence_label_is_refused_by_row():
    vectors, words, sentences = _rows()
    labels = [[str(label)] for label in sentences]
    with _refused("sentences: row 0 is ['s000'], which cannot label a sentence (a list is"):
        _measure(vectors, words, labels)


def test_tuple_labels_are_sentences_as_any_other_labels():
    """Tuple labels (any hashable) that sort as the string labels do give the same table,
    their copies counted by tuple, and the same alignment."""
    vectors, words, sentences = _rows()
    tuples = [("s", int(label[1:])) for label in sentences]
    copies_by_string = {"s000": 3, "s017": 2}
    copies_by_tuple = {("s", 0): 3, ("s", 17): 2}
    pd.testing.assert_frame_equal(
        _measure(vectors, words, tuples, sentence_copies=copies_by_tuple),
        _measure(vectors, words, sentences, sentence_copies=copies_by_string),
    )
    by_tuple = _align([vectors, vectors[:, ::-1]], tuples).table
    pd.testing.assert_frame_equal(by_tuple, _align([vectors, vectors[:, ::-1]], sentences).table)


# Positions


@pytest.mark.parametrize(
    "value, said",
    [
        (np.nan, "positions: row 8 is nan, not a whole number of at least 0"),
        (-1, "positions: row 8 is -1, not a whole number of at least 0"),
        (1.5, "positions: row 8 is 1.5, not a whole number of at least 0"),
        (None, "positions: row 8 is None, not a whole number"),
        ("3", "positions: row 8 is '3', not a whole number"),
    ],
)
def test_a_position_that_is_no_place_in_a_sentence_is_refused_alike(value, said):
    """measure_layer and alignment read positions in one place, and refuse alike."""
    vectors, words, sentences = _rows()
    positions = np.tile(np.arange(PER_SENTENCE), N_SENTENCES).astype(object)
    positions[8] = value
    with _refused(said):
        _measure(vectors, words, sentences, positions=positions)
    with _refused(said):
        _align([vectors], sentences, positions=positions)


def test_measure_layer_and_alignment_read_positions_as_given():
    """Rows without each sentence's first word, at their positions 1 to 5: every row is
    past its sentence's first word for both functions, so the ``[position>0]`` measures
    equal the measures of every row (measure_layer once counted the second word as the
    first), and the alignment's ``position>0`` rows are all the rows."""
    vectors, words, sentences = _rows()
    positions = np.tile(np.arange(PER_SENTENCE), N_SENTENCES)
    later = positions > 0
    table = _measure(
        vectors[later],
        words[later],
        sentences[later],
        positions=positions[later],
        past_first_word=True,
    ).set_index("measure")
    for measure in ("selfsim", "intrasim", "anisotropy"):
        every, past = table.loc[measure], table.loc[f"{measure}[position>0]"]
        assert past["n"] == every["n"]
        np.testing.assert_allclose(past["raw"], every["raw"], rtol=1e-6)
    found = _align([vectors[later]], sentences[later], positions=positions[later]).table
    values = found.set_index(["occurrences", "layer_a", "layer_b"])["cka"]
    np.testing.assert_allclose(values.loc["position>0"], values.loc["all"])


def test_positions_given_keep_their_gaps():
    """Gaps (a word dropped mid-sentence) are read as given: the rows' positions are the
    ones given, not renumbered."""
    vectors, words, sentences = _rows()
    positions = np.tile(np.arange(PER_SENTENCE), N_SENTENCES)
    kept = positions != 2
    indexed = index_rows(words[kept], sentences[kept], positions[kept])
    np.testing.assert_array_equal(
        indexed.occurrences["position"].to_numpy(), positions[kept][indexed.order]
    )
    assert set(indexed.occurrences["position"]) == {0, 1, 3, 4, 5}


# Sentence copies


@pytest.mark.parametrize("count", [0, -2, 1.5, True, None])
def test_a_sentence_copy_count_below_one_or_not_whole_is_refused(count):
    vectors, words, sentences = _rows()
    with _refused(f"sentence_copies: {count!r} for sentence 's003', not a whole number of"):
        _measure(vectors, words, sentences, sentence_copies={"s003": count})


def test_sentence_copies_that_are_not_a_mapping_are_refused():
    vectors, words, sentences = _rows()
    with _refused("sentence_copies: expected a mapping of sentence label to count, got a list"):
        _measure(vectors, words, sentences, sentence_copies=[2] * N_SENTENCES)


# One sentence


def test_rows_of_one_sentence_warn_that_the_intervals_have_zero_width(caplog):
    """Resampling over one sentence draws it every time: each interval has zero width,
    and the warning says so; a correction, fitted on other sentences, is refused."""
    vectors, words, _ = _rows()
    one = np.full(len(words), "only")
    with caplog.at_level(logging.WARNING):
        table = _measure(vectors, words, one).set_index("measure")
        _align([vectors], one)
    said = "every row measured is in one sentence ('only'); the intervals resample sentences"
    assert f"arrays layer 0 (none): {said}" in caplog.text
    assert f"alignment: {said}" in caplog.text
    row = table.loc["intrasim"]
    assert row["interval"] == "bootstrap" and row["raw_low"] == row["raw"] == row["raw_high"]
    with _refused("transform: 'center' is fitted on some sentences and measured on the others"):
        _measure(vectors, words, one, transform="center")


def test_rows_of_many_sentences_give_no_such_warning(caplog):
    vectors, words, sentences = _rows()
    with caplog.at_level(logging.WARNING):
        _measure(vectors, words, sentences)
    assert "one sentence" not in caplog.text


# word_rows


def _batch():
    """Two texts' constructed hidden states (3 layers) and token offsets."""
    states = torch.arange(3 * 2 * 5 * 4, dtype=torch.float32).reshape(3, 2, 5, 4)
    offsets = torch.tensor(
        [
            [(0, 0), (0, 2), (3, 5), (0, 0), (0, 0)],
            [(0, 0), (0, 2), (2, 3), (0, 0), (0, 0)],
        ]
    )
    return states, offsets, ["ab cd", "ef!"]


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda s, o, t: (s[:, :0], o[:0], []), "texts: no text given"),
        (lambda s, o, t: (s, o, "ab cd"), "texts: expected a sequence of strings, got 'ab cd'"),
        (lambda s, o, t: (s, o, ["ab cd", None]), "texts: item 1 is None, not a string"),
        (lambda s, o, t: (s[:, :1], o[:1], t), "hidden_states: a batch of 1 items for the 2"),
        (lambda s, o, t: (s, o[:, :4], t), "offsets: shape (2, 4, 2), not the (2, 5, 2)"),
        (lambda s, o, t: (s, o.float(), t), "offsets: expected whole numbers, got an array of"),
        (lambda s, o, t: (s[0], o, t), "hidden_states: expected one (batch, tokens, d) array"),
    ],
)
def test_word_rows_refuses_a_batch_that_does_not_line_up(change, said):
    with _refused(said):
        api.word_rows(*change(*_batch()))


@pytest.mark.parametrize(
    "layers, said",
    [
        ([99], "layers: 99 is not among the 3 layers of hidden_states (0 to 2)"),
        ([3], "layers: 3 is not among the 3 layers of hidden_states (0 to 2)"),
        ([-1], "layers: -1 is not a layer (a whole number of at least 0)"),
        (["1"], "layers: '1' is not a layer"),
        ([], "layers: no layer given"),
        (2, "layers: expected a sequence of layer numbers, got 2"),
    ],
)
def test_word_rows_refuses_a_layer_the_states_do_not_have(layers, said):
    with _refused(said):
        api.word_rows(*_batch(), layers=layers)


def test_word_rows_keeps_the_layers_chosen():
    rows = api.word_rows(*_batch(), layers=[np.int64(2), 0])
    assert list(rows.layers) == [2, 0]
    np.testing.assert_array_equal(rows.layers[2], api.word_rows(*_batch()).layers[2])


def test_word_rows_refuses_an_attention_mask_of_another_shape():
    with _refused("attention_mask: shape (2, 4), not the (2, 5) that hidden_states'"):
        api.word_rows(*_batch(), attention_mask=torch.ones(2, 4))
    with _refused("attention_mask: shape (5, 2), not the (2, 5)"):
        api.word_rows(*_batch(), attention_mask=np.ones((5, 2)))


@pytest.mark.parametrize(
    "span, said",
    [
        ((3, 9), "offsets: token 2 of text 0 spans characters (3, 9), not within its 5"),
        ((30, 35), "offsets: token 2 of text 0 spans characters (30, 35), not within its 5"),
        ((4, 3), "offsets: token 2 of text 0 spans characters (4, 3), not within its 5"),
        ((-1, 2), "offsets: token 2 of text 0 spans characters (-1, 2), not within its 5"),
    ],
)
def test_word_rows_refuses_offsets_outside_their_text(span, said):
    """A span past the text (offsets of other texts, say) would give its word no vector."""
    states, offsets, texts = _batch()
    offsets[0, 2] = torch.tensor(span)
    with _refused(said):
        api.word_rows(states, offsets, texts)


def test_offsets_of_masked_tokens_are_not_read():
    """A masked-out token serves no word, whatever its span: the rows are those of the
    same token with an empty span."""
    states, offsets, texts = _batch()
    mask = torch.ones(2, 5, dtype=torch.long)
    mask[0, 4] = 0
    outside = offsets.clone()
    outside[0, 4] = torch.tensor([40, 50])
    rows = api.word_rows(states, outside, texts, attention_mask=mask)
    expected = api.word_rows(states, offsets, texts)
    for layer in rows.layers:
        np.testing.assert_array_equal(rows.layers[layer], expected.layers[layer])
