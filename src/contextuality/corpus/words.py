"""Word tokenizers: what a "word" is everywhere downstream of the occurrence index.

``regex`` (the default), applied left to right to a normalized sentence (the longest match
wins at each place):

1. a number with internal separators: ``1,650``, ``0.11``, ``4:00`` (``\\d+([.,:]\\d+)+``);
2. a run of letters, digits and underscores, with internal apostrophes or hyphens kept:
   ``don't``, ``drive-ins``, ``O'Brien`` (``\\w+(['’-]\\w+)*``);
3. any other single non-space character, so punctuation is split off: ``,`` ``.`` ``"``.

``spacy``: spaCy's rule-based English tokenizer (``spacy.blank("en")``, no statistical
model), which the paper's code used: it splits clitics (``ca`` ``n't``, ``it`` ``'s``) and
keeps abbreviations whole (``U.S.``).

Case is kept (the paper's models are cased); lowercasing is a separate option of the index.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from contextuality.configuration.schema import default
from contextuality.errors import ConfigError
from contextuality.files.fetch import DEFAULT_EXTRA

WORD_PATTERN = re.compile(r"\d+(?:[.,:]\d+)+|\w+(?:['’\-]\w+)*|[^\w\s]")
WORD_TOKENIZERS = ("regex", "spacy")


def split_words(sentence: str) -> list[str]:
    """Split one normalized sentence into words by the ``regex`` rule of this module."""
    return WORD_PATTERN.findall(sentence)


@functools.cache
def _spacy_tokenizer() -> Any:
    try:
        import spacy
    except ModuleNotFoundError as error:
        raise ConfigError(f"index.tokenizer: spacy needs spaCy; {DEFAULT_EXTRA}") from error

    return spacy.blank("en").tokenizer


Span = tuple[int, int]


def word_spans(
    sentences: Sequence[str], tokenizer: str = default("index", "tokenizer")
) -> list[list[Span]]:
    """Character spans [start, end) of the words of each sentence by `tokenizer` (one of
    WORD_TOKENIZERS; the default is config ``index.tokenizer``'s); a word is
    ``sentence[start:end]``.

    spaCy's whitespace tokens (it keeps runs of extra spaces as tokens) are dropped.
    """
    if tokenizer == "regex":
        return [[m.span() for m in WORD_PATTERN.finditer(sentence)] for sentence in sentences]
    if tokenizer == "spacy":
        return [
            [(token.idx, token.idx + len(token)) for token in document if not token.is_space]
            for document in _spacy_tokenizer().pipe(sentences, batch_size=1000)
        ]
    raise ConfigError(f"word tokenizer must be one of {WORD_TOKENIZERS}, not {tokenizer!r}")


def tokenize_sentences(
    sentences: Sequence[str], tokenizer: str = default("index", "tokenizer")
) -> list[list[str]]:
    """The words of each sentence by `tokenizer` (see `word_spans`)."""
    return [
        [sentence[start:end] for start, end in spans]
        for sentence, spans in zip(sentences, word_spans(sentences, tokenizer), strict=True)
    ]


def is_punctuation(word: str) -> bool:
    """True when every character is Unicode punctuation (category P*), as spaCy's
    ``is_punct``, which the paper's code used to keep punctuation out of its index.

    ``.``, ``--``, ``"`` and ``%`` are punctuation; ``$``, ``+``, ``'s`` and ``##s`` are not.
    """
    return bool(word) and all(unicodedata.category(character)[0] == "P" for character in word)
