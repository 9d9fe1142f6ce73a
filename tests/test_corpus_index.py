"""Tests of the word tokenizer (contextuality.corpus.words) and the occurrence index."""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter

import numpy as np
import pytest

from contextuality import steps
from contextuality.cli import main
from contextuality.corpus.index import (
    INDEX_FILE_NAMES,
    IndexFiles,
    IndexSettings,
    build_occurrence_index,
    check_min_contexts,
    corpus_checksum,
    index_checksum,
)
from contextuality.corpus.words import is_punctuation, split_words, tokenize_sentences
from contextuality.errors import ConfigError


def index_of(sentences, copies=None, **settings):
    """The occurrence index of raw sentences under `settings` (IndexSettings fields)."""
    return build_occurrence_index(
        tokenize_sentences(sentences, settings.get("tokenizer", "regex")),
        IndexSettings(**settings),
        copies,
    )


# --------------------------------------------------------------------------------------
# split_words
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Hello, world.", ["Hello", ",", "world", "."]),
        ('"Quoted" (text)!', ['"', "Quoted", '"', "(", "text", ")", "!"]),
        ("It cost $1,650.", ["It", "cost", "$", "1,650", "."]),
        ("A rise of 0.11% at 4:00.", ["A", "rise", "of", "0.11", "%", "at", "4:00", "."]),
        ("1,000,000 people", ["1,000,000", "people"]),
        ("Version 1.2.3", ["Version", "1.2.3"]),
        ("in 2012.", ["in", "2012", "."]),
        ("I don't know.", ["I", "don't", "know", "."]),
        ("O\u2019Brien's drive-ins", ["O\u2019Brien's", "drive-ins"]),
        ("state-of-the-art, well-known", ["state-of-the-art", ",", "well-known"]),
        ("a 3-year-old", ["a", "3-year-old"]),
        ("ends -- here", ["ends", "-", "-", "here"]),
        ("trailing- 'quoted'", ["trailing", "-", "'", "quoted", "'"]),
        ("students' books", ["students", "'", "books"]),
        ("snake_case word", ["snake_case", "word"]),
        ("Caf\u00e9 na\u00efve Z\u00fcrich", ["Caf\u00e9", "na\u00efve", "Z\u00fcrich"]),
        (
            "\u041c\u043e\u0441\u043a\u0432\u0430, \u6771\u4eac.",
            ["\u041c\u043e\u0441\u043a\u0432\u0430", ",", "\u6771\u4eac", "."],
        ),
        ("Jir\u02c7\u00ed Be\u02c7lohl\u00e1vek", ["Jir\u02c7\u00ed", "Be\u02c7lohl\u00e1vek"]),
        ("em\u2014dash", ["em", "\u2014", "dash"]),
        ("", []),
        ("   ", []),
    ],
)
def test_split_words(sentence, expected):
    assert split_words(sentence) == expected


def test_split_words_keeps_every_non_space_character():
    sentence = 'He said: "It\'s 1,650.5 km -- 0.11% of U.S. drive-ins!" (really?)'
    words = split_words(sentence)
    assert "".join(words) == "".join(sentence.split())
    assert all(word and not any(c.isspace() for c in word) for word in words)


def test_split_words_is_deterministic():
    sentences = [
        "The U.S. economy grew 0.11 percent, don't you think?",
        "Drive-ins closed; 1,650 jobs were lost.",
    ]
    first = [split_words(s) for s in sentences]
    second = [split_words(s) for s in reversed(sentences)][::-1]
    assert first == second
    assert first == [split_words(s) for s in sentences]


# --------------------------------------------------------------------------------------
# build_occurrence_index
# --------------------------------------------------------------------------------------


def test_occurrences_layout():
    sentences = ["The cat sat.", "", "A cat, a hat."]
    index = index_of(sentences, min_contexts=1)
    occ = index.occurrences
    assert list(occ.columns) == ["occurrence_id", "sentence_id", "position", "word_id", "word"]
    assert occ["occurrence_id"].tolist() == list(range(len(occ)))
    assert occ["sentence_id"].tolist() == [0, 0, 0, 0, 2, 2, 2, 2, 2, 2]
    assert occ["position"].tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 4, 5]
    assert occ["word"].tolist() == ["The", "cat", "sat", ".", "A", "cat", ",", "a", "hat", "."]
    keys = list(zip(occ["sentence_id"], occ["position"], strict=True))
    assert keys == sorted(keys)
    # word_id refers to the vocabulary row of the same word.
    vocab = index.vocab
    assert vocab["word_id"].tolist() == list(range(len(vocab)))
    assert (vocab["word"].to_numpy()[occ["word_id"].to_numpy()] == occ["word"].to_numpy()).all()
    # Word ids in order of first appearance.
    assert vocab["word"].tolist() == ["The", "cat", "sat", ".", "A", ",", "a", "hat"]


def test_repeated_word_in_one_sentence():
    sentences = ["the dog saw the other dog", "the end"]
    vocab = index_of(sentences, min_contexts=1).vocab.set_index("word")
    assert vocab.loc["the", "count"] == 3
    assert vocab.loc["the", "n_contexts"] == 2
    assert vocab.loc["dog", "count"] == 2
    assert vocab.loc["dog", "n_contexts"] == 1
    assert vocab.loc["end", "count"] == 1
    assert vocab.loc["end", "n_contexts"] == 1


def test_min_contexts_threshold_is_inclusive():
    # "alpha" in exactly 3 sentences (4 tokens), "beta" in 2 sentences (5 tokens).
    sentences = [
        "alpha alpha beta beta beta",
        "alpha gamma",
        "alpha beta beta",
        "gamma",
    ]
    vocab = index_of(sentences, min_contexts=3).vocab.set_index("word")
    assert vocab.loc["alpha", "n_contexts"] == 3
    assert bool(vocab.loc["alpha", "indexed"])
    assert vocab.loc["beta", "n_contexts"] == 2
    assert vocab.loc["beta", "count"] == 5
    assert not bool(vocab.loc["beta", "indexed"])  # many tokens, too few contexts
    assert not bool(vocab.loc["gamma", "indexed"])
    vocab2 = index_of(sentences, min_contexts=2).vocab.set_index("word")
    assert vocab2["indexed"].to_dict() == {"alpha": True, "beta": True, "gamma": True}
    vocab4 = index_of(sentences, min_contexts=4).vocab.set_index("word")
    assert not vocab4["indexed"].any()


def test_lowercase_merges_case_variants():
    sentences = ["The cat.", "the dog.", "THE end."]
    cased = index_of(sentences, min_contexts=2).vocab.set_index("word")
    assert {"The", "the", "THE"} <= set(cased.index)
    assert not bool(cased.loc["the", "indexed"])
    lowered = index_of(sentences, min_contexts=2, lowercase=True)
    vocab = lowered.vocab.set_index("word")
    assert "The" not in vocab.index and "THE" not in vocab.index
    assert vocab.loc["the", "count"] == 3
    assert vocab.loc["the", "n_contexts"] == 3
    assert bool(vocab.loc["the", "indexed"])
    assert lowered.occurrences["word"].tolist()[0] == "the"
    assert all(w == w.lower() for w in lowered.occurrences["word"])


def test_frequency_rank_ties_broken_by_first_appearance():
    # counts: b=3, a=2, c=2, d=1, e=3 -> order b (first), e, a, c, d
    sentences = ["a b c", "b e d", "e a b", "c e"]
    vocab = index_of(sentences, min_contexts=1).vocab.set_index("word")
    assert vocab["count"].to_dict() == {"a": 2, "b": 3, "c": 2, "e": 3, "d": 1}
    assert vocab["frequency_rank"].to_dict() == {"b": 1, "e": 2, "a": 3, "c": 4, "d": 5}


@pytest.mark.parametrize("bad", [0, -1])
def test_min_contexts_must_be_positive(bad):
    with pytest.raises(ValueError, match="min_contexts"):
        index_of(["a b"], min_contexts=bad)


def test_no_words_at_all():
    index = index_of(["", "   "], min_contexts=1)
    assert len(index.occurrences) == 0
    assert len(index.vocab) == 0


VOCABULARY = [
    "the", "The", "cat", "dog", "don't", "drive-ins", "1,650", "0.11", ",", ".", "?", "Zürich",
    "THE", "a",
]  # fmt: skip


def brute_force(token_lists, copies, min_contexts, lowercase, count_by, exclude_punctuation):
    """Reimplementation with Counters, from token lists (no tokenizer involved): rows of
    (word, count, count with repeated sentences, contexts, rank, indexed)."""
    if lowercase:
        token_lists = [[t.lower() for t in tokens] for tokens in token_lists]
    first_seen = []
    for tokens in token_lists:
        for token in tokens:
            if token not in first_seen:
                first_seen.append(token)
    count = Counter(t for tokens in token_lists for t in tokens)
    repeated = Counter(t for tokens, c in zip(token_lists, copies, strict=True) for t in tokens * c)
    contexts = Counter(t for tokens in token_lists for t in set(tokens))
    ranked = sorted(first_seen, key=lambda w: (-count[w], first_seen.index(w)))
    rank = {w: r for r, w in enumerate(ranked, start=1)}
    counted = contexts if count_by == "contexts" else repeated
    punctuation = {",", ".", "?"}  # the punctuation of VOCABULARY
    return [
        (
            w,
            count[w],
            repeated[w],
            contexts[w],
            rank[w],
            counted[w] >= min_contexts and not (exclude_punctuation and w in punctuation),
        )
        for w in first_seen
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("lowercase", "count_by", "exclude_punctuation"),
    [(False, "contexts", False), (True, "contexts", True), (False, "occurrences", True)],
)
def test_matches_brute_force(seed, lowercase, count_by, exclude_punctuation):
    rng = random.Random(seed)
    token_lists = [[rng.choice(VOCABULARY) for _ in range(rng.randint(0, 12))] for _ in range(300)]
    copies = [rng.choice([1, 1, 1, 2, 5]) for _ in token_lists]
    sentences = [" ".join(tokens) for tokens in token_lists]
    # The vocabulary is chosen so that the tokenizer returns each token unchanged.
    assert [split_words(s) for s in sentences] == token_lists
    # A threshold equal to some word's count, so the boundary is exercised.
    column = 3 if count_by == "contexts" else 2
    rows = brute_force(token_lists, copies, 1, lowercase, count_by, False)
    counted = sorted(row[column] for row in rows)
    min_contexts = counted[len(counted) // 2]
    expected = brute_force(
        token_lists, copies, min_contexts, lowercase, count_by, exclude_punctuation
    )
    assert any(row[5] for row in expected) and not all(row[5] for row in expected)
    index = index_of(
        sentences,
        np.array(copies),
        min_contexts=min_contexts,
        lowercase=lowercase,
        count_by=count_by,
        exclude_punctuation=exclude_punctuation,
    )
    vocab = index.vocab
    got = list(
        zip(
            vocab["word"],
            vocab["count"].tolist(),
            vocab["count_with_repeats"].tolist(),
            vocab["n_contexts"].tolist(),
            vocab["frequency_rank"].tolist(),
            vocab["indexed"].tolist(),
            strict=True,
        )
    )
    assert got == expected
    assert vocab["punctuation"].tolist() == [w in {",", ".", "?"} for w in vocab["word"]]

    expected_rows = [
        (s, p, (t.lower() if lowercase else t))
        for s, tokens in enumerate(token_lists)
        for p, t in enumerate(tokens)
    ]
    occ = index.occurrences
    rows = list(zip(occ["sentence_id"], occ["position"], occ["word"], strict=True))
    assert rows == expected_rows
    assert occ["occurrence_id"].tolist() == list(range(len(expected_rows)))
    assert int(vocab["count"].sum()) == len(occ)
    assert sorted(vocab["frequency_rank"]) == list(range(1, len(vocab) + 1))
    counts = np.bincount(occ["sentence_id"], minlength=len(sentences))
    assert counts.tolist() == [len(tokens) for tokens in token_lists]


# --------------------------------------------------------------------------------------
# Checksums and per-sentence counts
# --------------------------------------------------------------------------------------

SENTENCES = ["The cat sat on the mat.", "A dog barked.", "The cat ran."]


def test_index_checksum_equal_for_equal_content():
    a = index_of(SENTENCES, min_contexts=1).occurrences
    b = index_of(list(SENTENCES), min_contexts=3).occurrences
    assert index_checksum(a) == index_checksum(b)
    assert re.fullmatch(r"[0-9a-f]{64}", index_checksum(a))
    # Independent of storage dtypes and of columns it does not cover.
    c = a.astype({"sentence_id": "int64", "position": "int64"}).drop(
        columns=["occurrence_id", "word_id"]
    )
    c["word"] = c["word"].astype(object)
    assert index_checksum(c) == index_checksum(a)


def test_index_checksum_changes_with_one_word_or_position():
    occ = index_of(SENTENCES, min_contexts=1).occurrences
    base = index_checksum(occ)

    one_word = occ.copy()
    one_word.loc[4, "word"] = "rug"
    assert index_checksum(one_word) != base

    one_position = occ.copy()
    one_position.loc[2, "position"] = 7
    assert index_checksum(one_position) != base

    one_sentence = occ.copy()
    one_sentence.loc[len(occ) - 1, "sentence_id"] = 1
    assert index_checksum(one_sentence) != base

    # Changing the sentences changes it, and so does lowercasing.
    other = index_of(["The cat sat on the rug.", *SENTENCES[1:]], min_contexts=1)
    assert index_checksum(other.occurrences) != base
    lowered = index_of(SENTENCES, min_contexts=1, lowercase=True)
    assert index_checksum(lowered.occurrences) != base


def test_corpus_checksum():
    assert corpus_checksum(SENTENCES) == corpus_checksum(list(SENTENCES))
    assert corpus_checksum(SENTENCES) == hashlib.sha256("\n".join(SENTENCES).encode()).hexdigest()
    changed = [SENTENCES[0], "A dog barked!", SENTENCES[2]]
    assert corpus_checksum(changed) != corpus_checksum(SENTENCES)
    assert corpus_checksum(SENTENCES[::-1]) != corpus_checksum(SENTENCES)
    assert corpus_checksum(SENTENCES[:2]) != corpus_checksum(SENTENCES)


def test_each_sentence_is_a_contiguous_block_of_occurrences():
    sentences = ["a b c", "", "d e", "f"]
    occ = index_of(sentences, min_contexts=1).occurrences
    counts = np.bincount(occ["sentence_id"], minlength=len(sentences))
    assert counts.tolist() == [3, 0, 2, 1]
    # cumsum gives each sentence's contiguous block of occurrences.
    ends = np.cumsum(counts)
    starts = ends - counts
    for s, sentence in enumerate(sentences):
        block = occ.iloc[starts[s] : ends[s]]
        assert (block["sentence_id"] == s).all()
        assert block["word"].tolist() == split_words(sentence)


# --------------------------------------------------------------------------------------
# The paper's word units: spaCy tokens, punctuation dropped, occurrences counted
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("The U.S. can't go.", ["The", "U.S.", "ca", "n't", "go", "."]),
        ("It's $5.00 (really)!", ["It", "'s", "$", "5.00", "(", "really", ")", "!"]),
        ("e-mail 1,650 people", ["e", "-", "mail", "1,650", "people"]),
        ("", []),
    ],
)
def test_spacy_tokenizer(sentence, expected):
    assert tokenize_sentences([sentence], "spacy") == [expected]


def test_unknown_word_tokenizer_is_refused():
    with pytest.raises(ValueError, match="regex"):
        tokenize_sentences(["a"], "nltk")
    with pytest.raises(ValueError, match="count_by"):
        IndexSettings(count_by="sentences")


def test_punctuation_rule_is_spacys():
    """is_punctuation agrees with spaCy's lexeme attribute on every token of a varied text."""
    import spacy

    vocab = spacy.blank("en").vocab
    text = (
        'He said -- "1,650 $ for 100% of the U.S.A.?!" ... (see ##s, ## and `` too) '
        "½ + € – — ’s ' ; : / \\ @ # & * ¿ « » … · ¶ § † ‡ ‰ ⁂"
    )
    tokens = set(tokenize_sentences([text], "spacy")[0]) | set(split_words(text))
    assert {token for token in tokens if is_punctuation(token)} == {
        token for token in tokens if vocab[token].is_punct
    }
    assert is_punctuation("--") and not is_punctuation("##s") and not is_punctuation("$")


def test_repeated_sentences_count_toward_the_occurrence_rule():
    sentences = ["a b", "a c", "b c"]
    by_contexts = index_of(sentences, np.array([3, 1, 1]), min_contexts=3).vocab
    by_occurrences = index_of(
        sentences, np.array([3, 1, 1]), min_contexts=3, count_by="occurrences"
    ).vocab
    assert by_contexts.set_index("word")["indexed"].to_dict() == {
        "a": False,
        "b": False,
        "c": False,
    }
    assert by_occurrences.set_index("word")["indexed"].to_dict() == {
        "a": True,
        "b": True,
        "c": False,
    }
    assert by_occurrences.set_index("word")["count_with_repeats"].to_dict() == {
        "a": 4,
        "b": 4,
        "c": 2,
    }


def test_paper_units_reproduce_the_published_vocabulary(shared_data, tmp_path):
    """The paper's corpus and word units (gold-scored STS pairs, spaCy tokens, punctuation
    dropped, occurrences counted) index words that the authors' published ELMo table holds;
    counting distinct sentences instead loses hundreds of them."""
    import pandas as pd

    from contextuality.corpus.sentences import sts_archive_name
    from contextuality.corpus.settings import CorpusSettings, StsSource
    from contextuality.files.tables import read_parquet
    from contextuality.steps import sentences

    years = [2012, 2013, 2014, 2015, 2016]
    settings = CorpusSettings(source="sts", sts=StsSource(years, scored_only=True))
    archives = [shared_data / "sts" / sts_archive_name(year) for year in years]
    sentences(settings, archives, tmp_path / "sentences.parquet")
    table = read_parquet(tmp_path / "sentences.parquet")
    units = tokenize_sentences(table["text"].tolist(), "spacy")
    copies = table["n_copies"].to_numpy()
    published_path = shared_data / "reference/ethayarajh2019/elmo/self_similarity.csv"
    published = set(pd.read_csv(published_path, keep_default_na=False)["word"])

    def indexed(count_by):
        settings = IndexSettings(tokenizer="spacy", exclude_punctuation=True, count_by=count_by)
        vocab = build_occurrence_index(units, settings, copies).vocab
        return set(vocab.loc[vocab["indexed"], "word"])

    by_occurrences, by_contexts = indexed("occurrences"), indexed("contexts")
    assert by_contexts < by_occurrences
    assert len(by_occurrences - published) <= 0.002 * len(by_occurrences)
    assert len(by_occurrences & published) > len(by_contexts & published) + 500
    assert not any(is_punctuation(word) for word in by_occurrences)


def test_index_files_refuse_an_occurrence_table_or_vocabulary_of_another_index(tmp_path):
    """Files of a lowercased index beside the summary of a cased one (or rows edited
    under intact metadata) are refused, not measured under the wrong provenance."""
    import shutil

    from contextuality.corpus.index import IndexFiles
    from contextuality.errors import InputDataError

    units = [split_words(sentence) for sentence in SENTENCES * 2]
    written = {}
    for lowercase in (False, True):
        files = IndexFiles.in_directory(tmp_path / f"lowercase-{lowercase}")
        files.summary.parent.mkdir()
        index = build_occurrence_index(units, IndexSettings(min_contexts=2, lowercase=lowercase))
        summary = {"settings": {"lowercase": lowercase}}
        files.write(index, summary | {"index_checksum": index_checksum(index.occurrences)})
        written[lowercase] = files
    cased, lowered = written[False], written[True]
    assert cased.read_occurrences()["word"].tolist()[0] == "The"
    assert len(cased.read_vocab()) > len(lowered.read_vocab())
    for name in ("occurrences", "vocab"):
        mixed = IndexFiles.in_directory(tmp_path / f"mixed-{name}")
        shutil.copytree(cased.summary.parent, mixed.summary.parent)
        shutil.copy(getattr(lowered, name), getattr(mixed, name))
        with pytest.raises(InputDataError, match=f"{getattr(mixed, name)} is not part of"):
            getattr(mixed, f"read_{name}")()


def test_a_min_contexts_no_word_reaches_is_refused_before_the_index_is_rebuilt(tmp_path):
    """Judged on the vocabulary at hand, where it was built with the same other settings;
    nothing said without an index, or where another setting changes the counts too."""
    sentences = tmp_path / "sentences.parquet"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"the cat sat on mat {k}." for k in range(6)) + "\n")
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    files = IndexFiles.of({key: tmp_path / name for key, name in INDEX_FILE_NAMES.items()})
    check_min_contexts(files, IndexSettings(min_contexts=100))  # no index yet
    steps.occurrence_index(sentences, IndexSettings(min_contexts=3), files)
    check_min_contexts(files, IndexSettings(min_contexts=6))  # "the": 6 sentences
    with pytest.raises(ConfigError, match=r"min_contexts: 7: .* the most any word has is 6"):
        check_min_contexts(files, IndexSettings(min_contexts=7))
    check_min_contexts(files, IndexSettings(min_contexts=7, count_by="occurrences"))
