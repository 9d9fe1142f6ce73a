"""Word benchmarks of the paper's Table 1: vectors, readers, scorers, registry and checksums.

Scorers are checked on small constructed embeddings whose answers are known. Readers are
checked against the staged public copies in ``../shared/data`` beside the checkout
(documented in its SOURCES.md); those tests are skipped when the mirror is absent.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gensim.models import KeyedVectors

from contextuality import benchmarks as bm
from contextuality.benchmarks import Score, WordVectors
from contextuality.errors import InputDataError
from contextuality.files.provenance import sha256_file

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="module")
def data_root() -> Path:
    if not DATA_DIR.is_dir():
        pytest.skip(f"shared data mirror not found at {DATA_DIR}")
    return DATA_DIR


def _vectors(table: dict[str, list[float]]) -> WordVectors:
    return WordVectors(list(table), np.array(list(table.values()), dtype=np.float64))


# --------------------------------------------------------------------------- WordVectors


def test_word_vectors_validate_their_shape():
    with pytest.raises(ValueError, match="2 words but 3"):
        WordVectors(["a", "b"], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="floats"):
        WordVectors(["a"], np.zeros((1, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="2-D"):
        WordVectors(["a"], np.zeros(2))
    with pytest.raises(ValueError, match="empty"):
        WordVectors([], np.zeros((0, 2)))


def test_lowercase_lookup_keeps_the_first_entry_of_a_lowercase_form():
    vectors = _vectors({"Paris": [1, 0], "paris": [0, 1], "London": [1, 1], "paris ": [2, 2]})
    assert vectors.indices(["PARIS", "paris", "london", "Rome"], lowercase=True).tolist() == [
        0,
        0,
        2,
        -1,
    ]
    assert vectors.indices(["PARIS", "paris", "London"], lowercase=False).tolist() == [-1, 1, 2]
    assert vectors.candidate_rows(lowercase=True).tolist() == [0, 2, 3]
    assert vectors.candidate_rows(lowercase=False).tolist() == [0, 1, 2, 3]

    found_vectors, found = vectors.lookup(["paris", "Rome", "LONDON"], lowercase=True, oov="mean")
    assert found.tolist() == [True, False, True]
    np.testing.assert_array_equal(found_vectors[0], [1, 0])  # "Paris", not "paris"
    np.testing.assert_allclose(found_vectors[1], [1.0, 1.0])  # the mean of the vocabulary
    np.testing.assert_array_equal(found_vectors[2], [1, 1])

    skipped, found = vectors.lookup(["paris", "Rome", "LONDON"], lowercase=True, oov="skip")
    assert found.tolist() == [True, False, True]
    np.testing.assert_array_equal(skipped, [[1, 0], [1, 1]])
    with pytest.raises(ValueError, match="oov"):
        vectors.lookup(["paris"], lowercase=True, oov="zero")


def test_lowercase_changes_which_vector_a_benchmark_word_gets():
    vectors = _vectors({"Apple": [1, 0], "apple": [0, 1], "fruit": [0, 1], "pear": [1, 1]})
    pairs = pd.DataFrame(
        {"word1": ["apple", "apple"], "word2": ["fruit", "pear"], "score": [9.0, 1.0]}
    )
    # Lowercased, "apple" is "Apple" (first entry): closer to pear than to fruit.
    assert bm.score_similarity(pairs, vectors, lowercase=True).value == pytest.approx(-1.0)
    # Case-sensitive, "apple" is its own entry: identical to fruit.
    assert bm.score_similarity(pairs, vectors, lowercase=False).value == pytest.approx(1.0)


def test_word2vec_text_round_trip_through_gensim(tmp_path):
    rng = np.random.default_rng(0)
    words = ["the", "Café", "##ing", "naïve", "x"]
    matrix = rng.standard_normal((len(words), 7)).astype(np.float32)
    keyed = KeyedVectors(vector_size=7)
    keyed.add_vectors(words, matrix)
    path = tmp_path / "vectors.txt"
    keyed.save_word2vec_format(str(path), binary=False)
    assert path.read_text(encoding="utf-8").splitlines()[0] == "5 7"

    read = WordVectors.from_word2vec_text(path)
    assert read.words == words
    assert read.matrix.dtype == np.float32
    np.testing.assert_array_equal(read.matrix, matrix)
    back = KeyedVectors.load_word2vec_format(str(path), binary=False)
    np.testing.assert_array_equal(back["naïve"], read.matrix[3])


def test_glove_text_without_header(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 0.1 -0.2 0.3\nnew york 1 2 3\nof 4e-1 5 6 \n", encoding="utf-8")
    read = WordVectors.from_word2vec_text(path, dtype=np.float64)
    assert read.words == ["the", "new york", "of"]
    np.testing.assert_array_equal(read.matrix, [[0.1, -0.2, 0.3], [1, 2, 3], [0.4, 5, 6]])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("2 3\na 1 2 3\n", "header announces 2 vectors, the file holds 1"),
        ("2 3\na 1 2 3\nb 1 2\n", "line 3: expected a word and 3 values"),
        ("a 1 2\nb 1 x\n", "line 2: not a number"),
        ("", "no vectors"),
    ],
)
def test_malformed_vector_files_name_the_line(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputDataError, match=re.escape(message)):
        WordVectors.from_word2vec_text(path)


def test_undecodable_and_missing_vector_files(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"1 2\ncaf\xe9 1 2\n")
    with pytest.raises(InputDataError, match="line 2: not valid UTF-8"):
        WordVectors.from_word2vec_text(path)
    with pytest.raises(InputDataError, match="absent.txt"):
        WordVectors.from_word2vec_text(tmp_path / "absent.txt")


# --------------------------------------------------------------------------- similarity


def _fan_vectors(count: int) -> WordVectors:
    """`w0` on the x axis and `w1`…`w<count>` at growing angles from it (2-D)."""
    angles = np.linspace(0.0, 3.0, count + 1)
    table = {f"w{i}": [math.cos(a), math.sin(a)] for i, a in enumerate(angles)}
    return _vectors(table)


def test_similarity_is_plus_or_minus_one_for_monotone_cosines():
    vectors = _fan_vectors(6)
    words = [f"w{i}" for i in range(1, 7)]
    increasing = pd.DataFrame({"word1": "w0", "word2": words, "score": np.arange(6.0)[::-1]})
    assert bm.score_similarity(increasing, vectors) == Score(1.0, 1.0, 6)
    decreasing = increasing.assign(score=np.arange(6.0))
    assert bm.score_similarity(decreasing, vectors).value == pytest.approx(-1.0)
    # Case does not matter with lowercasing (the paper's protocol).
    upper = increasing.assign(word2=[w.upper() for w in words])
    assert bm.score_similarity(upper, vectors).value == pytest.approx(1.0)
    assert bm.score_similarity(upper, vectors, lowercase=False).coverage == 0.0


def test_similarity_oov_mean_vector_or_skip():
    vectors = _fan_vectors(4)
    pairs = pd.DataFrame(
        {
            "word1": ["w0", "w0", "w0", "w0", "zebra"],
            "word2": ["w1", "w2", "w3", "w4", "w4"],
            "score": [5.0, 4.0, 3.0, 2.0, 10.0],
        }
    )
    kept = bm.score_similarity(pairs, vectors, oov="skip")
    assert kept == Score(1.0, 0.8, 4)
    mean = bm.score_similarity(pairs, vectors, oov="mean")
    assert (mean.coverage, mean.n) == (0.8, 5)
    # The OOV word is the mean vector, so the pair gets a real cosine, not a gap.
    first, _ = vectors.lookup(["zebra"], lowercase=True, oov="mean")
    second, _ = vectors.lookup(["w4"], lowercase=True, oov="mean")
    cosine = float(first[0] @ second[0] / np.linalg.norm(first[0]) / np.linalg.norm(second[0]))
    cosines = [math.cos(a) for a in np.linspace(0.0, 3.0, 5)[1:]] + [cosine]
    expected = pd.Series(cosines).rank().corr(pairs["score"].rank())
    assert mean.value == pytest.approx(expected)
    assert mean.value < 1.0


# --------------------------------------------------------------------------- analogies


def _capitals() -> tuple[WordVectors, pd.DataFrame]:
    """word = e_entity + e_role, so that b − a + c = d exactly for country:capital."""
    entities = ["france", "germany", "italy", "spain", "japan"]
    capitals = ["paris", "berlin", "rome", "madrid", "tokyo"]
    size = len(entities) + 2
    table = {}
    for position, (country, capital) in enumerate(zip(entities, capitals, strict=True)):
        table[country] = np.eye(size)[position] + np.eye(size)[-2]
        table[capital] = np.eye(size)[position] + np.eye(size)[-1]
    vectors = WordVectors(list(table), np.array(list(table.values())))
    rows = [
        ("capital", entities[i], capitals[i], entities[j], capitals[j])
        for i in range(len(entities))
        for j in range(len(entities))
        if i != j
    ]
    return vectors, pd.DataFrame(rows, columns=["category", "a", "b", "c", "d"])


def test_exact_analogies_are_solved_by_both_methods():
    vectors, questions = _capitals()
    assert bm.score_analogy(questions, vectors) == Score(1.0, 1.0, 20)
    assert bm.score_analogy(questions, vectors, method="3cosmul") == Score(1.0, 1.0, 20)
    solved = bm.solve_analogies(questions, vectors, batch_size=3)
    assert (solved["predicted_3cosadd"] == questions["d"]).all()
    assert (solved["predicted_3cosmul"] == questions["d"]).all()
    # Reversed questions (capital → country) are exact too.
    reversed_questions = questions.rename(columns={"a": "b", "b": "a", "c": "d", "d": "c"})
    assert bm.score_analogy(reversed_questions, vectors).value == 1.0
    with pytest.raises(ValueError, match="method"):
        bm.score_analogy(questions, vectors, method="3cosavg")


def test_a_question_set_is_solved_once_for_both_methods(monkeypatch):
    """3CosAdd and 3CosMul of one question set (two benchmarks) share one solve on the same
    vectors; other questions, settings or vectors solve anew, and a caller's edit of the
    table it got leaves the next caller's as solved."""
    from contextuality.benchmarks import scorers

    vectors, questions = _capitals()
    solved = []
    original = scorers._solve_analogies
    monkeypatch.setattr(scorers, "_solve_analogies", lambda *a: solved.append(1) or original(*a))
    add = bm.score_analogy(questions, vectors, method="3cosadd")
    mul = bm.score_analogy(questions, vectors, method="3cosmul")
    assert len(solved) == 1 and add == mul == Score(1.0, 1.0, 20)
    first = bm.solve_analogies(questions, vectors)
    first["predicted_3cosadd"] = "nowhere"
    again = bm.solve_analogies(questions, vectors)
    assert len(solved) == 1 and (again["predicted_3cosadd"] == questions["d"]).all()
    bm.solve_analogies(questions.iloc[::-1], vectors)
    bm.solve_analogies(questions, vectors, protocol="paper")
    bm.solve_analogies(questions, vectors, lowercase=False)
    fresh = WordVectors(list(vectors.words), vectors.matrix.copy())
    pd.testing.assert_frame_equal(bm.solve_analogies(questions, fresh), again)
    assert len(solved) == 5


def test_question_words_are_excluded_even_when_nearest():
    # b = a, so b − a + c = c: c itself is nearest, then d, then the others.
    vectors = _vectors(
        {
            "a": [1, 0, 0, 0],
            "b": [1, 0, 0, 0],
            "c": [0, 1, 0, 0],
            "d": [0, 1, 0.3, 0],
            "e": [0, 1, 0, 1],
        }
    )
    questions = pd.DataFrame([("x", "a", "b", "c", "d")], columns=["category", *"abcd"])
    unit = vectors.matrix / np.linalg.norm(vectors.matrix, axis=1, keepdims=True)
    target = unit[1] - unit[0] + unit[2]
    assert vectors.words[int(np.argmax(unit @ target))] == "c"  # without the exclusion
    solved = bm.solve_analogies(questions, vectors)
    assert solved.loc[0, "predicted_3cosadd"] == "d"
    assert solved.loc[0, "predicted_3cosmul"] == "d"


def test_3cosadd_agrees_with_gensim_and_3cosmul_with_its_definition():
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(60)]
    matrix = rng.standard_normal((60, 8))
    vectors = WordVectors(words, matrix)
    picks = rng.integers(0, 60, size=(40, 4))
    picks = picks[[len(set(row[:3])) == 3 for row in picks]]
    questions = pd.DataFrame(
        [("r", *(words[i] for i in row)) for row in picks], columns=["category", *"abcd"]
    )
    solved = bm.solve_analogies(questions, vectors, batch_size=7)

    keyed = KeyedVectors(vector_size=8)
    keyed.add_vectors(words, matrix.astype(np.float32))
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    for (_, a, b, c, _), add, mul in zip(
        questions.itertuples(index=False),
        solved["predicted_3cosadd"],
        solved["predicted_3cosmul"],
        strict=True,
    ):
        assert add == keyed.most_similar(positive=[b, c], negative=[a], topn=1)[0][0]
        shifted = {w: (unit @ unit[words.index(w)] + 1) / 2 for w in (a, b, c)}
        objective = shifted[b] * shifted[c] / (shifted[a] + bm.COSMUL_EPSILON)
        objective[[words.index(w) for w in (a, b, c)]] = -np.inf
        assert mul == words[int(np.argmax(objective))]
    assert len(solved) >= 30


def test_analogy_oov_answers_count_as_wrong_or_are_skipped():
    vectors, questions = _capitals()
    extra = pd.DataFrame(
        [
            ("capital", "france", "paris", "germany", "bonn"),
            ("capital", "peru", "lima", "italy", "rome"),
        ],
        columns=["category", *"abcd"],
    )
    asked = pd.concat([questions, extra], ignore_index=True)
    mean = bm.score_analogy(asked, vectors, oov="mean")
    assert mean.coverage == pytest.approx(20 / 22)
    assert mean.n == 22
    solved = bm.solve_analogies(asked, vectors)
    assert solved["covered"].tolist() == [True] * 20 + [False, False]
    assert not solved.loc[20, "correct_3cosadd"]  # "bonn" is no candidate
    assert mean.value == pytest.approx(solved["correct_3cosadd"].mean())
    assert bm.score_analogy(asked, vectors, oov="skip") == Score(1.0, 20 / 22, 20)


def test_analogy_candidates_follow_the_lowercase_rule():
    vectors, questions = _capitals()
    # "berlin" moved off the exact answer, and a later "Berlin" entry put on it.
    berlin = vectors.words.index("berlin")
    matrix = np.vstack([vectors.matrix, vectors.matrix[berlin]])
    matrix[berlin, 4] = 0.3  # a component along japan's entity axis
    doubled = WordVectors([*vectors.words, "Berlin"], matrix)
    shouted = pd.DataFrame(
        [("c", "FRANCE", "Paris", "Germany", "BERLIN")], columns=questions.columns
    )
    # Lowercased, "Berlin" collapses onto the earlier "berlin" and is no candidate.
    solved = bm.solve_analogies(shouted, doubled, lowercase=True)
    assert solved.loc[0, "predicted_3cosadd"] == "berlin"
    assert bool(solved.loc[0, "correct_3cosadd"])
    assert bm.score_analogy(shouted, doubled, lowercase=False).coverage == 0.0
    # Case-sensitive, "Berlin" is its own candidate and the exact answer.
    exact = shouted.assign(a="france", b="paris", c="germany", d="Berlin")
    solved = bm.solve_analogies(exact, doubled, lowercase=False)
    assert solved.loc[0, "predicted_3cosadd"] == "Berlin"
    assert bool(solved.loc[0, "correct_3cosadd"])


# --------------------------------------------------------------------------- SemEval-2012


def _relational_table() -> tuple[WordVectors, pd.DataFrame]:
    """Two subcategories whose paradigm offset is e_r; rated offsets turn away from it."""
    table = {"p1": [0, 0, 0, 0], "p2": [1, 0, 0, 0], "q1": [0, 0, 0, 1], "q2": [1, 0, 0, 1]}
    rows = [("s1", "p1", "p2", math.nan, True), ("s2", "q1", "q2", math.nan, True)]
    for index, angle in enumerate(np.linspace(0.1, 2.5, 6)):
        table[f"x{index}"] = [0, 0, 5, 0]
        table[f"y{index}"] = [math.cos(angle), math.sin(angle), 5, 0]
        rows.append(("s1", f"x{index}", f"y{index}", 10.0 - index, False))
        rows.append(("s2", f"x{index}", f"y{index}", 10.0 - index, False))
    frame = pd.DataFrame(rows, columns=["subcategory", "x", "y", "gold", "paradigm"])
    frame.insert(1, "pair", frame["x"] + ":" + frame["y"])
    return _vectors(table), frame


def test_semeval_rates_pairs_by_their_offset_to_the_paradigms():
    vectors, table = _relational_table()
    assert bm.score_semeval2012(table, vectors) == Score(1.0, 1.0, 12)
    assert bm.score_semeval2012(table, vectors, relation="dot").value == pytest.approx(1.0)
    # Reversing one subcategory's gold ratings makes its ρ = −1: the mean is 0.
    flipped = table.copy()
    rated_s2 = (flipped["subcategory"] == "s2") & ~flipped["paradigm"]
    flipped.loc[rated_s2, "gold"] = -flipped.loc[rated_s2, "gold"]
    assert bm.score_semeval2012(flipped, vectors).value == pytest.approx(0.0)
    with pytest.raises(ValueError, match="relation"):
        bm.score_semeval2012(table, vectors, relation="euclid")


def test_semeval_oov_pairs_and_constant_subcategories():
    vectors, table = _relational_table()
    unknown = table.copy()
    s2 = unknown["subcategory"] == "s2"
    unknown.loc[s2, "x"] = "unknown-" + unknown.loc[s2, "x"]
    # Mean vector: s2's x words become the mean vector, its pairs are still rated, but
    # coverage counts only the 6 covered s1 pairs of the 12 rated ones.
    mean = bm.score_semeval2012(unknown, vectors, oov="mean")
    assert (mean.coverage, mean.n) == (0.5, 12)
    # Skip: s2 loses its paradigm and all rated pairs, so only s1 is averaged.
    assert bm.score_semeval2012(unknown, vectors, oov="skip") == Score(1.0, 0.5, 6)
    # Both words OOV: every offset is zero, ratings are constant, ρ counts as 0.
    unknown.loc[s2, "y"] = "unknown-" + unknown.loc[s2, "y"]
    assert bm.score_semeval2012(unknown, vectors, oov="mean").value == pytest.approx(0.5)


# --------------------------------------------------------------------------- categorization


def test_cluster_purity_by_hand():
    assert bm.cluster_purity(["a", "a", "b", "b"], [0, 0, 0, 1]) == 0.75
    assert bm.cluster_purity(["a", "a", "b", "b"], [1, 1, 0, 0]) == 1.0
    assert bm.cluster_purity(["a", "b", "c"], [0, 0, 0]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        bm.cluster_purity(["a"], [0, 1])


def _groups(seed: int = 4) -> tuple[WordVectors, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    table, rows = {}, []
    for group in range(4):
        centre = np.zeros(12)
        centre[group] = 10.0
        for member in range(6):
            word = f"g{group}m{member}"
            table[word] = centre + rng.normal(scale=0.5, size=12)
            rows.append((word, f"category{group}"))
    return _vectors(table), pd.DataFrame(rows, columns=["word", "category"])


def test_well_separated_groups_have_purity_one():
    vectors, items = _groups()
    assert bm.score_categorization(items, vectors, seed=0) == Score(1.0, 1.0, 24)
    shuffled = items.assign(category=items["category"].sample(frac=1, random_state=0).to_numpy())
    assert bm.score_categorization(shuffled, vectors, seed=0).value < 1.0


def test_categorization_oov_words():
    vectors, items = _groups()
    extra = pd.DataFrame({"word": ["nowhere1", "nowhere2"], "category": ["category0"] * 2})
    asked = pd.concat([items, extra], ignore_index=True)
    assert bm.score_categorization(asked, vectors, oov="skip", seed=0) == Score(1.0, 24 / 26, 24)
    mean = bm.score_categorization(asked, vectors, oov="mean", seed=0)
    assert (mean.coverage, mean.n) == (pytest.approx(24 / 26), 26)


# --------------------------------------------------------------------------- paper protocol


def test_paper_vectors_keep_the_first_entry_of_each_shared_lowercase_form():
    vectors = WordVectors(
        ["Paris", "paris", "London", "rome", "BERLIN"],
        np.array([[3, 4], [0, 1], [0, 2], [1, 0], [-2, 0]], dtype=np.float32),
    )
    trimmed = bm.paper_vectors(vectors, ["PARIS", "london", "Berlin", "Madrid"])
    assert trimmed.words == ["paris", "london", "berlin"]
    assert trimmed.matrix.dtype == np.float32
    np.testing.assert_allclose(trimmed.matrix, [[0.6, 0.8], [0, 1], [-1, 0]], rtol=1e-6)
    # The paper's OOV stand-in: the mean of the unit vectors, shorter than a unit vector.
    np.testing.assert_allclose(trimmed.mean_vector, [-0.4 / 3, 1.8 / 3], rtol=1e-6)
    whole = bm.paper_vectors(vectors)
    assert whole.words == ["paris", "london", "rome", "berlin"]
    np.testing.assert_allclose(np.linalg.norm(whole.matrix, axis=1), 1.0, rtol=1e-6)
    with pytest.raises(InputDataError, match="none of the 4 lowercase word forms"):
        bm.paper_vectors(vectors, ["Madrid", "Lisbon"])


def _write_benchmark(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return root


def test_paper_similarity_gives_an_oov_word_the_mean_of_the_unit_vectors(tmp_path):
    # x is long: the mean of the raw vectors leans to it, the mean of unit vectors does not.
    table = {"x": [10.0, 0.0], "y": [0.0, 1.0], "z": [0.5, math.sqrt(3) / 2]}
    vectors = _vectors(table)
    pairs = "x\ty\t0\nx\tz\t1\ny\tz\t3\nzebra\tx\t2\n"
    root = _write_benchmark(tmp_path, "wordsim/EN-SIMLEX-999.txt", pairs)
    gold = pd.Series([0.0, 1.0, 3.0, 2.0])

    def spearman_with_stand_in(stand_in: np.ndarray) -> float:
        unit = {word: np.array(v) / np.linalg.norm(v) for word, v in table.items()}
        oov_cosine = stand_in @ unit["x"] / np.linalg.norm(stand_in)
        cosines = [unit["x"] @ unit["y"], unit["x"] @ unit["z"], unit["y"] @ unit["z"]]
        return pd.Series([*cosines, oov_cosine]).rank().corr(gold.rank())

    raw_mean = np.mean(list(table.values()), axis=0)
    unit_mean = np.mean([np.array(v) / np.linalg.norm(v) for v in table.values()], axis=0)
    paper = bm.score_benchmark(
        "simlex999", vectors, root, lowercase=True, oov="mean", protocol="paper"
    )
    standard = bm.score_benchmark("simlex999", vectors, root, lowercase=True, oov="mean")
    assert paper.value == pytest.approx(spearman_with_stand_in(unit_mean))
    assert standard.value == pytest.approx(spearman_with_stand_in(raw_mean))
    assert (paper.value, standard.value) == (pytest.approx(1.0), pytest.approx(0.8))
    assert (paper.coverage, paper.n) == (0.75, 4)
    skipped = bm.score_benchmark(
        "simlex999", vectors, root, lowercase=True, oov="skip", protocol="paper"
    )
    assert skipped == Score(pytest.approx(1.0), 0.75, 3)


def test_paper_analogy_differs_from_standard_only_by_the_oov_stand_in(tmp_path):
    # Unit vocabulary vectors: both protocols see the same words; the OOV word "a" is the
    # mean vector, unit-normalized (standard) or not (paper), and the answers differ.
    matrix = np.array(
        [[1, 0, 0], [0, 1, 0], [0, -1 / math.sqrt(2), 1 / math.sqrt(2)], [-1, 2, -2], [-2, -2, -1]]
    )
    matrix[3:] /= 3
    words = ["b", "c", "p", "q", "r"]
    vectors = WordVectors(words, matrix)
    questions = pd.DataFrame([("x", "a", "b", "c", "q")], columns=["category", *"abcd"])
    mean = matrix.mean(axis=0)

    def brute_force(stand_in: np.ndarray) -> dict[str, str]:
        cos_a, cos_b, cos_c = matrix @ stand_in, matrix @ matrix[0], matrix @ matrix[1]
        objectives = {
            "3cosadd": cos_b - cos_a + cos_c,
            "3cosmul": (cos_b + 1) * (cos_c + 1) / 4 / ((cos_a + 1) / 2 + bm.COSMUL_EPSILON),
        }
        answers = {}
        for method, objective in objectives.items():
            objective[[0, 1]] = -np.inf
            answers[method] = words[int(np.argmax(objective))]
        return answers

    expected = {
        "standard": brute_force(mean / np.linalg.norm(mean)),
        "paper": brute_force(mean),
    }
    assert expected["standard"]["3cosadd"] == "p"
    assert expected["paper"]["3cosadd"] == "q"
    for protocol, answers in expected.items():
        solved = bm.solve_analogies(questions, vectors, protocol=protocol)
        assert solved.loc[0, "predicted_3cosadd"] == answers["3cosadd"]
        assert solved.loc[0, "predicted_3cosmul"] == answers["3cosmul"]

    root = _write_benchmark(tmp_path, "analogy/questions-words.txt", ": x\na b c q\n")
    assert bm.score_benchmark(
        "google", vectors, root, lowercase=True, oov="mean", protocol="paper"
    ) == Score(1.0, 0.0, 1)
    assert bm.score_benchmark("google", vectors, root, lowercase=True, oov="mean") == Score(
        0.0, 0.0, 1
    )
    skipped = bm.score_benchmark(
        "google", vectors, root, lowercase=True, oov="skip", protocol="paper"
    )
    assert math.isnan(skipped.value)
    assert skipped.n == 0


def _purity(gold: np.ndarray, labels: np.ndarray) -> float:
    majority = pd.crosstab(labels, gold).max(axis=1)
    return float(majority.sum() / len(gold))


# Two noisy sets chosen so that the best of six changes if the cosine clusterings, KMeans,
# the word order or the unnormalized OOV stand-in were left out.
@pytest.mark.parametrize("data_seed", [6, 9])
def test_paper_categorization_is_the_best_of_six_clusterings(data_seed):
    from sklearn.cluster import AgglomerativeClustering, KMeans

    rng = np.random.default_rng(data_seed)
    table, rows = {}, []
    for group in range(4):
        centre = np.eye(6)[group]
        for member in range(6):
            word = f"g{group}m{member}"
            table[word] = (centre + rng.normal(scale=0.6, size=6)) * rng.uniform(0.5, 4)
            rows.append((word, f"category{group}"))
    rows += [("zebra", "category0"), ("yak", "category3")]
    items = pd.DataFrame(rows, columns=["word", "category"])
    vectors = _vectors(table)

    unit = {word: v / np.linalg.norm(v) for word, v in table.items()}
    stand_in = np.mean(list(unit.values()), axis=0)
    matrix = np.array([unit.get(word, stand_in) for word in items["word"]])
    gold = items["category"].to_numpy()
    order = np.random.RandomState(7).choice(len(gold), len(gold), replace=False)
    clusterings = [
        AgglomerativeClustering(n_clusters=4, metric="euclidean", linkage="ward"),
        AgglomerativeClustering(n_clusters=4, metric="cosine", linkage="average"),
        AgglomerativeClustering(n_clusters=4, metric="cosine", linkage="complete"),
        AgglomerativeClustering(n_clusters=4, metric="euclidean", linkage="average"),
        AgglomerativeClustering(n_clusters=4, metric="euclidean", linkage="complete"),
        KMeans(n_clusters=4, n_init=10, random_state=7),
    ]
    purities = [_purity(gold[order], c.fit_predict(matrix[order])) for c in clusterings]
    assert len(set(purities)) > 1

    paper = bm.score_categorization(items, bm.paper_vectors(vectors), seed=7, protocol="paper")
    assert paper == Score(pytest.approx(max(purities)), 24 / 26, 26)
    again = bm.score_categorization(items, bm.paper_vectors(vectors), seed=7, protocol="paper")
    assert again == paper
    # On these sets; a KMeans run in another word order can also come out ahead.
    assert paper.value > bm.score_categorization(items, vectors, seed=7).value


def test_protocol_and_shared_vocabulary_errors(tmp_path):
    vectors = _fan_vectors(2)
    root = _write_benchmark(tmp_path, "wordsim/EN-SIMLEX-999.txt", "w0\tw1\t1\nw0\tw2\t2\n")
    with pytest.raises(
        ValueError, match=re.escape("protocol must be one of ('standard', 'paper')")
    ):
        bm.score_benchmark("simlex999", vectors, root, lowercase=True, oov="mean", protocol="web")
    with pytest.raises(ValueError, match="protocol must be one of"):
        bm.score_benchmarks(
            vectors, root, ["simlex999"], lowercase=True, oov="mean", protocol="web"
        )
    with pytest.raises(ValueError, match="protocol must be one of"):
        bm.score_analogy(pd.DataFrame(columns=["category", *"abcd"]), vectors, protocol="web")
    with pytest.raises(ValueError, match="shared_vocabulary belongs to the paper protocol"):
        bm.score_benchmark(
            "simlex999", vectors, root, lowercase=True, oov="mean", shared_vocabulary=["w0"]
        )
    paper = {"lowercase": True, "oov": "mean", "protocol": "paper"}
    with pytest.raises(InputDataError, match="shared vocabulary"):
        bm.score_benchmark("simlex999", vectors, root, **paper, shared_vocabulary=["x"])
    # Trimmed to w0 and w1, w2 is OOV: the stand-in lies between w0 and w1.
    trimmed = bm.score_benchmark(
        "simlex999", vectors, root, **paper, shared_vocabulary=["W0", "w1"]
    )
    assert trimmed == Score(pytest.approx(1.0), 0.5, 2)


# --------------------------------------------------------------------------- real files


@pytest.mark.parametrize(
    ("name", "pairs", "top"),
    [("simlex999", 999, 10.0), ("men", 3000, 50.0), ("ws353", 353, 10.0), ("rw", 2034, 10.0)],
)
def test_similarity_files_read_in_full(data_root, name, pairs, top):
    table = bm.BENCHMARKS[name].reader(data_root)
    assert list(table.columns) == ["word1", "word2", "score"]
    assert len(table) == pairs
    assert table["score"].between(0, top).all()
    assert table["score"].max() > top / 2
    assert not table[["word1", "word2"]].map(lambda w: w != w.strip() or not w).any().any()


def test_ws353_crlf_lines_are_read_cleanly(data_root):
    table = bm.read_similarity(data_root / "wordsim" / "EN-WS-353-ALL.txt")
    assert table.loc[2].tolist() == ["tiger", "tiger", 10.0]
    assert (table["word1"].str.lower() != table["word1"]).sum() > 0  # has capitals (Jerusalem)


def test_google_analogies(data_root):
    table = bm.BENCHMARKS["google"].reader(data_root)
    assert list(table.columns) == ["category", "a", "b", "c", "d"]
    assert len(table) == 19544
    assert table["category"].nunique() == 14
    assert table["category"].iloc[0] == "capital-common-countries"
    assert table["category"].iloc[-1] == "gram9-plural-verbs"
    # SOURCES.md: 171 duplicate lines (19373 distinct), all capital-common-countries
    # questions asked again in capital-world.
    repeated = table[table.duplicated(["a", "b", "c", "d"], keep=False)]
    assert repeated["category"].value_counts().to_dict() == {
        "capital-common-countries": 171,
        "capital-world": 171,
    }
    assert table.loc[0].tolist() == [
        "capital-common-countries",
        "Athens",
        "Greece",
        "Baghdad",
        "Iraq",
    ]


def test_msr_analogies(data_root):
    table = bm.BENCHMARKS["msr"].reader(data_root)
    assert len(table) == 8000
    assert table["category"].value_counts().to_dict() == {
        kind: 500 for kind in table["category"].unique()
    }
    assert table["category"].nunique() == 16
    assert table.loc[0].tolist() == ["JJ_JJR", "good", "better", "rough", "rougher"]
    assert (table["d"].str.endswith("'s")).sum() == 500  # the NN_NNPOS questions


@pytest.mark.parametrize(
    ("name", "rows", "distinct", "categories"), [("bless", 217, 201, 17), ("ap", 423, 403, 21)]
)
def test_categorization_files(data_root, name, rows, distinct, categories):
    path = data_root / bm.BENCHMARKS[name].files[0]
    with path.open(newline="", encoding="utf-8") as handle:
        raw = list(csv.DictReader(handle))
    assert len(raw) == rows  # the counts of SOURCES.md, which include one empty word per category
    assert len({row["word"] for row in raw}) == distinct
    assert sum(not row["word"] for row in raw) == categories

    table = bm.BENCHMARKS[name].reader(data_root)
    assert list(table.columns) == ["word", "category"]
    assert len(table) == rows - categories
    assert table["word"].is_unique
    assert table["category"].nunique() == categories


def test_semeval2012_testing_subcategories(data_root):
    table = bm.BENCHMARKS["semeval2012"].reader(data_root)
    assert list(table.columns) == ["subcategory", "pair", "x", "y", "gold", "paradigm"]
    assert tuple(table["subcategory"].unique()) == bm.SEMEVAL2012_TESTING
    assert len(bm.SEMEVAL2012_TESTING) == 69
    rated = table[~table["paradigm"]]
    assert len(rated) == 2791
    assert rated["gold"].between(-100, 100).all()
    assert not rated.duplicated(["subcategory", "pair"]).any()
    paradigms = table[table["paradigm"]]
    assert len(paradigms) == 216
    assert paradigms.groupby("subcategory").size().between(3, 5).all()
    assert paradigms["gold"].isna().all()
    # The messy separators of subcategories-paradigms.txt are understood.
    assert paradigms.loc[paradigms["subcategory"] == "8d", "pair"].tolist() == [
        "eat:satiation",
        "flee:escape",
        "fertilize:grow",
    ]

    package = data_root / "semeval2012" / "SemEval-2012-Complete-Data-Package" / "Testing"
    for subcategory, group in rated.groupby("subcategory"):
        answers = package / "Phase1Answers" / f"Phase1Answers-{subcategory}.txt"
        listed = {line.strip().strip('"') for line in answers.read_text().splitlines() if line}
        assert set(group["pair"]) == listed, subcategory


def test_semeval2012_splits_match_the_release(data_root):
    root = data_root / "semeval2012"
    testing = {p.name[len("GoldRatings-") : -4] for p in root.glob("*Gold-Ratings/Testing/*.txt")}
    assert testing == set(bm.SEMEVAL2012_TESTING)
    listed = (
        root / "SemEval-2012-Complete-Data-Package" / "subcategories-training.txt"
    ).read_text()
    assert set(re.findall(r"Relation (\d+[a-z])", listed)) == set(bm.SEMEVAL2012_TRAINING)
    training = bm.read_semeval2012(data_root, split="training")
    assert len(training[~training["paradigm"]]) == 427
    paradigms = bm.read_semeval2012_paradigms(
        data_root
        / "semeval2012"
        / "SemEval-2012-Complete-Data-Package"
        / "subcategories-paradigms.txt"
    )
    assert tuple(paradigms["subcategory"].unique()) == bm.SEMEVAL2012_SUBCATEGORIES


def test_semeval2012_all_subcategories(data_root):
    table = bm.read_semeval2012(data_root, split="all")
    assert tuple(table["subcategory"].unique()) == bm.SEMEVAL2012_SUBCATEGORIES
    assert int((~table["paradigm"]).sum()) == 2791 + 427
    for split, subcategories in [
        ("training", bm.SEMEVAL2012_TRAINING),
        ("testing", bm.SEMEVAL2012_TESTING),
    ]:
        part = table[table["subcategory"].isin(subcategories)].reset_index(drop=True)
        pd.testing.assert_frame_equal(part, bm.read_semeval2012(data_root, split=split))
    with pytest.raises(ValueError, match="split must be one of"):
        bm.read_semeval2012(data_root, split="dev")


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
def test_semeval2012_paper_protocol_averages_all_79_subcategories(data_root):
    from scipy.stats import spearmanr

    root = data_root / "semeval2012"
    gold_files = sorted(root.glob("SemEval-2012-Gold-Ratings/*/GoldRatings-*.txt"))
    gold = {
        path.stem.removeprefix("GoldRatings-"): bm.read_semeval2012_gold(path)
        for path in gold_files
    }
    assert len(gold) == 79
    paradigms = bm.read_semeval2012_paradigms(
        root / "SemEval-2012-Complete-Data-Package" / "subcategories-paradigms.txt"
    )
    words = sorted(
        {w.lower() for table in [*gold.values(), paradigms] for w in [*table["x"], *table["y"]]}
    )
    known = words[::3]  # the other words are OOV
    rng = np.random.default_rng(11)
    matrix = rng.standard_normal((len(known), 6)) * rng.uniform(0.2, 5, size=(len(known), 1))
    vectors = WordVectors(known, matrix)

    unit = {word: row / np.linalg.norm(row) for word, row in zip(known, matrix, strict=True)}
    stand_in = np.mean(list(unit.values()), axis=0)

    def offsets(table: pd.DataFrame) -> np.ndarray:
        return np.array(
            [
                unit.get(y.lower(), stand_in) - unit.get(x.lower(), stand_in)
                for x, y in zip(table["x"], table["y"], strict=True)
            ]
        )

    correlations = []
    for subcategory, table in gold.items():
        relation = offsets(paradigms[paradigms["subcategory"] == subcategory]).mean(axis=0)
        correlations.append(spearmanr(offsets(table) @ relation, table["gold"]).statistic)
    assert np.isnan(correlations).any()  # a subcategory with constant ratings counts 0
    paper = bm.score_benchmark(
        "semeval2012", vectors, data_root, lowercase=True, oov="mean", protocol="paper"
    )
    assert paper.value == pytest.approx(np.nansum(correlations) / 79, abs=1e-12)
    assert paper.n == 2791 + 427
    standard = bm.score_benchmark("semeval2012", vectors, data_root, lowercase=True, oov="mean")
    assert standard.n == 2791
    assert standard.value != pytest.approx(paper.value)


# --------------------------------------------------------------------------- reader errors


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("reader", "name", "text", "message"),
    [
        (bm.read_similarity, "s.txt", "a\tb\t1\na\tb\n", "line 2: expected 3 tab-separated"),
        (bm.read_similarity, "s.txt", "a\tb\thigh\n", "line 1: score 'high' is not a number"),
        (bm.read_similarity, "s.txt", "a\tb\tnan\n", "line 1: score 'nan' is not finite"),
        (bm.read_similarity, "s.txt", "\n", "no word pairs"),
        (bm.read_google_analogies, "g.txt", "a b c d\n", "line 1: a question before any"),
        (bm.read_google_analogies, "g.txt", ": s\na b c d\na b c\n", "line 3: expected 4 words"),
        (bm.read_google_analogies, "g.txt", ":\n", "line 1: a section header with no name"),
        (bm.read_msr_analogies, "m.csv", ",type,word1\n0,JJ,a\n", "line 1: header"),
        (
            bm.read_msr_analogies,
            "m.csv",
            ",type,word1,word2,word3,target\n0,JJ,a,b,c,d\n1,JJ,a,b,c\n",
            "line 3: 5 fields, the header has 6",
        ),
        (
            bm.read_msr_analogies,
            "m.csv",
            ",type,word1,word2,word3,target\n0,JJ,a,,c,d\n",
            "line 2: an empty field",
        ),
        (bm.read_categorization, "c.csv", ",category,word\n0,,apple\n", "line 2: word 'apple'"),
        (bm.read_categorization, "c.csv", "", "empty file"),
        (
            bm.read_semeval2012_gold,
            "GoldRatings-1b.txt",
            '# header\n 74.0 "tool:hammer"\n12 tool:saw\n',
            "line 3: expected <score>",
        ),
        (
            bm.read_semeval2012_gold,
            "GoldRatings-1b.txt",
            ' 74.0 "tool:ham:mer"\n',
            "line 1: 'tool:ham:mer' is not a word pair",
        ),
        (bm.read_semeval2012_gold, "ratings.txt", ' 1.0 "a:b"\n', "GoldRatings-<subcategory>"),
        (
            bm.read_semeval2012_paradigms,
            "p.txt",
            "1, a, CLASS-INCLUSION, Taxonomic, flower:tulip\n1, b, CLASS, no pairs\n",
            "line 2: expected",
        ),
    ],
)
def test_malformed_benchmark_lines_name_file_and_line(tmp_path, reader, name, text, message):
    path = _write(tmp_path, name, text)
    with pytest.raises(InputDataError, match=re.escape(message)) as raised:
        reader(path)
    assert name in str(raised.value)


@pytest.mark.parametrize(
    "reader",
    [
        bm.read_similarity,
        bm.read_google_analogies,
        bm.read_msr_analogies,
        bm.read_categorization,
        bm.read_semeval2012_gold,
        bm.read_semeval2012_paradigms,
    ],
)
def test_missing_benchmark_files(tmp_path, reader):
    with pytest.raises(InputDataError, match="GoldRatings-9z.txt: cannot be read"):
        reader(tmp_path / "GoldRatings-9z.txt")


def test_missing_semeval_file_under_a_data_root(tmp_path):
    paradigms = tmp_path / bm.SEMEVAL2012_PARADIGMS
    paradigms.parent.mkdir(parents=True)
    paradigms.write_text("1, a, CLASS-INCLUSION, Taxonomic, flower:tulip\n", encoding="utf-8")
    with pytest.raises(InputDataError, match="GoldRatings-1a.txt: cannot be read"):
        bm.read_semeval2012(tmp_path, split="training")
    with pytest.raises(InputDataError, match="no paradigms for 1b"):
        bm.read_semeval2012(tmp_path, split="testing")


# --------------------------------------------------------------------------- registry


def test_registry_names_the_nine_benchmarks_and_3cosmul_variants():
    assert list(bm.BENCHMARKS) == [
        "simlex999",
        "men",
        "ws353",
        "rw",
        "google",
        "msr",
        "google_3cosmul",
        "msr_3cosmul",
        "semeval2012",
        "bless",
        "ap",
    ]
    assert bm.BENCHMARKS["google_3cosmul"].files == bm.BENCHMARKS["google"].files
    kinds = {name: spec.kind for name, spec in bm.BENCHMARKS.items()}
    assert [name for name, kind in kinds.items() if kind == "similarity"] == [
        "simlex999",
        "men",
        "ws353",
        "rw",
    ]
    for spec in bm.BENCHMARKS.values():
        assert len(spec.urls) == len(spec.files)
    files = bm.BENCHMARKS["semeval2012"].files
    assert len(files) == 80  # the paradigms and the gold ratings of all 79 subcategories
    assert set(files) <= set(bm.known_checksums())
    with pytest.raises(KeyError, match="unknown benchmark 'simlex'"):
        bm.score_benchmark("simlex", _fan_vectors(2), ".", lowercase=True, oov="mean")


def test_urls_are_the_origins_listed_in_sources(data_root):
    sources = (data_root / "SOURCES.md").read_text(encoding="utf-8")
    origin = re.compile(
        r"### `(?P<file>[^`]+)`\n- origin: `(?P<repo>[^`]+)` : "
        r"`(?P<path>[^`]+)` @ `(?P<commit>[0-9a-f]{40})`"
    )
    listed = {
        m["file"]: f"https://raw.githubusercontent.com/{m['repo']}/{m['commit']}/{m['path']}"
        for m in origin.finditer(sources)
    }
    for spec in bm.BENCHMARKS.values():
        for relative, url in zip(spec.files, spec.urls, strict=True):
            assert listed[relative] == url


def test_checksums_cover_every_file_and_match_the_mirror(data_root):
    checksums = bm.known_checksums()
    files = {relative for spec in bm.BENCHMARKS.values() for relative in spec.files}
    assert sorted(checksums) == sorted(files)
    published = dict(
        reversed(line.split(maxsplit=1))
        for line in (data_root / "SHA256SUMS").read_text().splitlines()
    )
    for relative, digest in checksums.items():
        assert published[relative] == digest
        assert sha256_file(data_root / relative) == digest, relative


def test_fetch_verifies_the_checksum(data_root, tmp_path):
    relative = "wordsim/EN-WS-353-ALL.txt"
    target = tmp_path / "out" / "ws353.txt"
    target.parent.mkdir()
    bm.fetch_benchmark_file(relative, target, data_root)
    assert target.read_bytes() == (data_root / relative).read_bytes()

    mirror = tmp_path / "mirror"
    (mirror / "wordsim").mkdir(parents=True)
    (mirror / relative).write_text("tiger\tcat\t7.35\n")
    with pytest.raises(InputDataError, match="checksum differs"):
        bm.fetch_benchmark_file(relative, tmp_path / "tampered.txt", mirror)
    assert not (tmp_path / "tampered.txt").exists()
    with pytest.raises(InputDataError, match="not found"):
        bm.fetch_benchmark_file("wordsim/EN-MEN-TR-3k.txt", tmp_path / "men.txt", mirror)
    with pytest.raises(InputDataError, match="not a known benchmark file"):
        bm.fetch_benchmark_file("wordsim/EN-WS-353-SIM.txt", tmp_path / "sim.txt", mirror)


@pytest.fixture(scope="module")
def benchmark_tables(data_root) -> dict[str, pd.DataFrame]:
    return {name: spec.reader(data_root) for name, spec in bm.BENCHMARKS.items()}


@pytest.fixture(scope="module")
def covering_vectors(data_root, benchmark_tables) -> WordVectors:
    """Random vectors for every lowercased word of every benchmark (both protocols)."""
    tables = [*benchmark_tables.values(), bm.read_semeval2012(data_root, split="all")]
    columns = ["word1", "word2", *"abcd", "x", "y", "word"]
    words = sorted(
        {
            word.lower()
            for table in tables
            for column in columns
            if column in table
            for word in table[column]
        }
    )
    rng = np.random.default_rng(5)
    return WordVectors(words, rng.standard_normal((len(words), 16)).astype(np.float32))


def test_every_benchmark_scores_with_full_coverage(data_root, benchmark_tables, covering_vectors):
    tables, vectors, words = benchmark_tables, covering_vectors, covering_vectors.words
    results = bm.score_benchmarks(vectors, data_root, lowercase=True, oov="mean")
    assert results["benchmark"].tolist() == list(bm.BENCHMARKS)
    assert (results["coverage"] == 1.0).all()
    expected_n = {name: len(table) for name, table in tables.items()}
    expected_n["semeval2012"] = 2791
    assert results.set_index("benchmark")["n"].to_dict() == expected_n
    # Random vectors: near-chance correlations and accuracies.
    values = results.set_index("benchmark")["value"]
    assert values[["simlex999", "men", "ws353", "rw", "semeval2012"]].abs().max() < 0.15
    assert values[["google", "msr"]].max() < 0.02
    assert values[["bless", "ap"]].between(0.05, 0.6).all()
    # Restricting the vocabulary lowers coverage by exactly the missing words' share.
    kept = [w for w in words if not w.startswith("a")]
    smaller = WordVectors(kept, vectors.matrix[[w[0] != "a" for w in words]])
    table = tables["simlex999"]
    share = (~table["word1"].str.startswith("a") & ~table["word2"].str.startswith("a")).mean()
    assert bm.score_benchmark(
        "simlex999", smaller, data_root, lowercase=True, oov="mean"
    ).coverage == pytest.approx(share)


def test_paper_protocol_scores_every_benchmark(data_root, benchmark_tables, covering_vectors):
    vectors = covering_vectors
    paper = bm.score_benchmarks(
        vectors, data_root, lowercase=True, oov="mean", protocol="paper"
    ).set_index("benchmark")
    assert (paper["coverage"] == 1.0).all()
    expected_n = {name: len(table) for name, table in benchmark_tables.items()}
    expected_n["semeval2012"] = 2791 + 427
    assert paper["n"].to_dict() == expected_n
    # With every word covered, cosines do not see the unit-normalization.
    similarity = ["simlex999", "men", "ws353", "rw"]
    standard = bm.score_benchmarks(
        vectors, data_root, similarity, lowercase=True, oov="mean"
    ).set_index("benchmark")
    np.testing.assert_allclose(paper.loc[similarity, "value"], standard["value"], atol=1e-6)
    assert paper.loc[["bless", "ap"], "value"].between(0.05, 0.6).all()
    # The shared vocabulary is matched by lowercase form.
    shared = [word.upper() for word in vectors.words if not word.startswith("a")]
    table = benchmark_tables["simlex999"]
    share = (~table["word1"].str.startswith("a") & ~table["word2"].str.startswith("a")).mean()
    trimmed = bm.score_benchmark(
        "simlex999",
        vectors,
        data_root,
        lowercase=True,
        oov="mean",
        protocol="paper",
        shared_vocabulary=shared,
    )
    assert trimmed.coverage == pytest.approx(share)
