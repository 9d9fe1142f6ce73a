"""Golden word-to-subword alignments for each tokenizer family.

Each tokenizer is built here from an explicit vocabulary, so its segmentation can be
checked by hand: WordPiece (BERT), byte-level BPE (GPT-2, Llama-3; offsets with and without
the leading space) and SentencePiece-style Unigram with its ``▁`` marker (Llama-2, T5).
Every test states which subwords each word pools, as written by the tokenizer, and checks
the subword ids the extraction gives each word, and the counts of subwords that span two
words (each of which pools them) or belong to none.
"""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from contextuality.backends.hf import encode_running_text
from contextuality.corpus.words import tokenize_sentences, word_spans
from contextuality.extraction.units import align_to_words

SENTENCES = [
    "The dog's bark can't stop.",
    "It cost $1,650 in Zürich.",
    "An unbelievably loud dog.",
]


def _per_word(tokenizer, sentence: str, word_tokenizer: str = "regex"):
    """Each word of `sentence` with the subword tokens it pools, and the alignment counts."""
    (encoding,) = encode_running_text(tokenizer, [sentence])
    (spans,) = word_spans([sentence], word_tokenizer)
    alignment = align_to_words(encoding.offsets, spans)
    words = [sentence[start:end] for start, end in spans]
    pooled = {word: [] for word in words}
    units = [[unit] if unit >= 0 else [] for unit in alignment.token_unit.tolist()]
    for subword, unit in alignment.shared.tolist():
        units[subword].append(unit)
    for token_id, token_units in zip(encoding.content, units, strict=True):
        for unit in token_units:
            pooled[words[unit]].append(token_id)
    return pooled, alignment


def _assert_golden(
    tokenizer, sentence, expected, spanning=0, outside=0, word_tokenizer="regex", sharing=0
):
    pooled, alignment = _per_word(tokenizer, sentence, word_tokenizer)
    assert list(pooled) == list(expected)
    for word, tokens in expected.items():
        assert pooled[word] == tokenizer.convert_tokens_to_ids(tokens), (word, tokens)
    assert (alignment.spanning, alignment.sharing, alignment.outside) == (
        spanning,
        sharing,
        outside,
    )


# --------------------------------------------------------------------------------------
# WordPiece (BERT): punctuation split off by the pre-tokenizer, ## continuations
# --------------------------------------------------------------------------------------

WORDPIECE_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "The", "dog", "'", "s", "bark", "can", "t", "stop", ".",
    "It", "cost", "$", "1", ",", "650", "in", "Z", "##ü", "##rich", "An", "un", "##believ",
    "##ably", "loud", "ca", "n", "at", "4", ":", "00pm",
]  # fmt: skip


@pytest.fixture(scope="module")
def wordpiece():
    backend = Tokenizer(
        models.WordPiece({t: i for i, t in enumerate(WORDPIECE_VOCAB)}, unk_token="[UNK]")
    )
    backend.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]"
    )


def test_wordpiece_alignment(wordpiece):
    assert wordpiece(SENTENCES[0])["input_ids"][0] == 2  # [CLS] never joins a word
    _assert_golden(
        wordpiece,
        SENTENCES[0],
        {
            "The": ["The"],
            "dog's": ["dog", "'", "s"],
            "bark": ["bark"],
            "can't": ["can", "'", "t"],
            "stop": ["stop"],
            ".": ["."],
        },
    )
    _assert_golden(
        wordpiece,
        SENTENCES[1],
        {
            "It": ["It"],
            "cost": ["cost"],
            "$": ["$"],
            "1,650": ["1", ",", "650"],
            "in": ["in"],
            "Zürich": ["Z", "##ü", "##rich"],
            ".": ["."],
        },
    )
    _assert_golden(
        wordpiece,
        SENTENCES[2],
        {
            "An": ["An"],
            "unbelievably": ["un", "##believ", "##ably"],
            "loud": ["loud"],
            "dog": ["dog"],
            ".": ["."],
        },
    )


def test_a_subword_spanning_two_words_goes_to_both(wordpiece):
    """spaCy splits "can't" into "ca" + "n't"; WordPiece's "can" covers both."""
    assert tokenize_sentences([SENTENCES[0]], "spacy")[0][4:6] == ["ca", "n't"]
    pooled, alignment = _per_word(wordpiece, SENTENCES[0], "spacy")
    assert pooled["ca"] == wordpiece.convert_tokens_to_ids(["can"])
    assert pooled["n't"] == wordpiece.convert_tokens_to_ids(["can", "'", "t"])
    assert (alignment.spanning, alignment.sharing, alignment.outside) == (1, 2, 0)


def test_a_wordpiece_over_two_words_goes_to_both(wordpiece):
    """MiniLM's WordPiece reads "4:00pm" as "4" ":" "00pm"; the words are "4:00" and "pm"."""
    _assert_golden(
        wordpiece,
        "It cost $1,650 at 4:00pm.",
        {
            "It": ["It"],
            "cost": ["cost"],
            "$": ["$"],
            "1,650": ["1", ",", "650"],
            "at": ["at"],
            "4:00": ["4", ":", "00pm"],
            "pm": ["00pm"],
            ".": ["."],
        },
        spanning=1,
        sharing=2,
    )


# --------------------------------------------------------------------------------------
# Byte-level BPE (GPT-2, Llama-3): Ġ marks a leading space; ü is two byte pieces
# --------------------------------------------------------------------------------------

BPE_TOKENS = [
    "The", "Ġdog", "'s", "Ġbark", "Ġcan", "'t", "Ġstop", "ĠIt", "It", "Ġcost", "Ġ$", "1", ",",
    "650", "Ġin", "ĠZ", "rich", "An", "Ġun", "believ", "ably", ").", "Ġx", "-*", "y",
]  # fmt: skip


def _byte_level_bpe(trim_offsets: bool) -> PreTrainedTokenizerFast:
    """A BPE over the 256 byte symbols whose merges build exactly BPE_TOKENS."""
    vocab = {symbol: i for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges = []
    for token in BPE_TOKENS:
        for end in range(2, len(token) + 1):
            if token[:end] not in vocab:
                vocab[token[:end]] = len(vocab)
                merges.append((token[: end - 1], token[end - 1]))
    backend = Tokenizer(models.BPE(vocab, merges))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.ByteLevel(trim_offsets=trim_offsets)
    return PreTrainedTokenizerFast(tokenizer_object=backend)


@pytest.mark.parametrize("trim_offsets", [False, True])
def test_byte_level_bpe_alignment(trim_offsets):
    tokenizer = _byte_level_bpe(trim_offsets)
    _assert_golden(
        tokenizer,
        SENTENCES[0],
        {
            "The": ["The"],
            "dog's": ["Ġdog", "'s"],
            "bark": ["Ġbark"],
            "can't": ["Ġcan", "'t"],
            "stop": ["Ġstop"],
            ".": ["."],
        },
    )
    _assert_golden(
        tokenizer,
        SENTENCES[1],
        {
            "It": ["It"],
            "cost": ["Ġcost"],
            "$": ["Ġ$"],
            "1,650": ["1", ",", "650"],
            "in": ["Ġin"],
            "Zürich": ["ĠZ", "Ã", "¼", "rich"],  # ü: two byte pieces, one character
            ".": ["."],
        },
    )
    # "loud" has no merges: its space is a piece of its own (its span the space, or empty
    # with trimmed offsets), in no word.
    _assert_golden(
        tokenizer,
        SENTENCES[2],
        {
            "An": ["An"],
            "unbelievably": ["Ġun", "believ", "ably"],
            "loud": ["l", "o", "u", "d"],
            "dog": ["Ġdog"],
            ".": ["."],
        },
        outside=1,
    )


# --------------------------------------------------------------------------------------
# SentencePiece-style Unigram (Llama-2, T5): ▁ marks a word start; <s> first
# --------------------------------------------------------------------------------------

PIECES = [
    "▁The", "▁dog", "'", "s", "▁bark", "▁can", "t", "▁stop", ".", "▁It", "▁cost", "▁$", "1",
    ",", "650", "▁in", "▁Zürich", "▁An", "▁un", "believ", "ably", "▁loud", "▁",
]  # fmt: skip
CHARACTERS = sorted(set("".join(SENTENCES)) - {" "})


@pytest.fixture(scope="module")
def sentencepiece():
    pieces = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0)]
    pieces += [(piece, -1.0) for piece in PIECES]
    pieces += [(character, -20.0) for character in CHARACTERS if character not in PIECES]
    backend = Tokenizer(models.Unigram(pieces, unk_id=0))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", 1)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def test_sentencepiece_alignment(sentencepiece):
    assert sentencepiece(SENTENCES[0])["input_ids"][0] == 1  # <s> never joins a word
    _assert_golden(
        sentencepiece,
        SENTENCES[0],
        {
            "The": ["▁The"],
            "dog's": ["▁dog", "'", "s"],
            "bark": ["▁bark"],
            "can't": ["▁can", "'", "t"],
            "stop": ["▁stop"],
            ".": ["."],
        },
    )
    _assert_golden(
        sentencepiece,
        SENTENCES[1],
        {
            "It": ["▁It"],
            "cost": ["▁cost"],
            "$": ["▁$"],
            "1,650": ["1", ",", "650"],
            "in": ["▁in"],
            "Zürich": ["▁Zürich"],
            ".": ["."],
        },
    )
    _assert_golden(
        sentencepiece,
        SENTENCES[2],
        {
            "An": ["▁An"],
            "unbelievably": ["▁un", "believ", "ably"],
            "loud": ["▁loud"],
            "dog": ["▁dog"],
            ".": ["."],
        },
    )


@pytest.mark.parametrize("trim_offsets", [False, True])
def test_byte_level_pieces_spanning_words_go_to_each(trim_offsets):
    """Byte-level BPE merges runs of punctuation that the word tokenizer splits into one
    word per character (as SmolLM2 does with "*" and "-"): each word pools the piece."""
    tokenizer = _byte_level_bpe(trim_offsets)
    _assert_golden(
        tokenizer,
        "It cost $1,650). x-*y",
        {
            "It": ["It"],
            "cost": ["Ġcost"],
            "$": ["Ġ$"],
            "1,650": ["1", ",", "650"],
            ")": [")."],
            ".": [")."],
            "x": ["Ġx"],
            "-": ["-*"],
            "*": ["-*"],
            "y": ["y"],
        },
        spanning=2,
        sharing=4,
    )
