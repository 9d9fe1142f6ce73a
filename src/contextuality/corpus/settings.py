"""The sentence step's settings (config section ``corpus``) as one typed record, its
defaults the schema's, checked when made."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from contextuality.configuration.schema import check_bounds, choices, default

# The STS years there are to read (the schema's choices of ``corpus.sts.years``).
STS_YEARS: tuple[int, ...] = choices("corpus", "sts", "years")


@dataclass(frozen=True)
class TextSource:
    """Source ``text``: a file, a directory's files matching `pattern`, or
    ``package:<module>/<path>``; `split_sentences`: lines are paragraphs, split by rule
    (else one sentence a line)."""

    path: str = default("corpus", "text", "path")
    pattern: str = default("corpus", "text", "pattern")
    split_sentences: bool = default("corpus", "text", "split_sentences")


@dataclass(frozen=True)
class StsSource:
    """Source ``sts``: the STS `years` read, from `mirror` (a directory of the archives;
    None: downloaded), their SHA-256 verified, only the scored pairs where `scored_only`."""

    years: tuple[int, ...] = tuple(default("corpus", "sts", "years"))
    mirror: str | None = default("corpus", "sts", "mirror")
    verify_checksums: bool = default("corpus", "sts", "verify_checksums")
    scored_only: bool = default("corpus", "sts", "scored_only")

    def __post_init__(self) -> None:
        object.__setattr__(self, "years", tuple(self.years))  # a YAML list
        check_bounds(("corpus", "sts"), {"years": self.years})


@dataclass(frozen=True)
class CorpusSettings:
    """Where the sentences come from (config ``corpus``): its `name` (provenance), the
    `source` read (the schema's choices) with its settings, and `max_sentences` (the first that
    many read; None: all)."""

    name: str = default("corpus", "name")
    source: str = default("corpus", "source")
    max_sentences: int | None = default("corpus", "max_sentences")
    text: TextSource = field(default_factory=TextSource)
    sts: StsSource = field(default_factory=StsSource)

    def __post_init__(self) -> None:
        check_bounds(("corpus",), {"source": self.source, "max_sentences": self.max_sentences})

    @classmethod
    def from_config(cls, corpus: dict[str, Any]) -> CorpusSettings:
        """From config ``corpus`` (keys left out: the defaults)."""
        nested = {"text": TextSource, "sts": StsSource}
        return cls(
            **{key: value for key, value in corpus.items() if key not in nested},
            **{key: kind(**corpus[key]) for key, kind in nested.items() if key in corpus},
        )

    def as_config(self) -> dict[str, Any]:
        """The settings as config ``corpus`` holds them, lists for tuples (what its
        provenance hashes)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))
