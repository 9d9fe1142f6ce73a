"""The deterministic word tokenizer that defines what a "word" is everywhere downstream.

Rule, applied left to right to a normalized sentence (the longest match wins at each place):

1. a number with internal separators: ``1,650``, ``0.11``, ``4:00`` (``\\d+([.,:]\\d+)+``);
2. a run of letters, digits and underscores, with internal apostrophes or hyphens kept:
   ``don't``, ``drive-ins``, ``O'Brien`` (``\\w+(['’-]\\w+)*``);
3. any other single non-space character, so punctuation is split off: ``,`` ``.`` ``"``.

Case is kept (the paper's models are cased); lowercasing is a separate option of the index.
"""

from __future__ import annotations

import re

WORD_PATTERN = re.compile(r"\d+(?:[.,:]\d+)+|\w+(?:['’\-]\w+)*|[^\w\s]")


def split_words(sentence: str) -> list[str]:
    """Split one normalized sentence into words by the rule in this module's docstring."""
    return WORD_PATTERN.findall(sentence)
