"""The registry of benchmarks (`BENCHMARKS`) and scoring under a protocol."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd

from contextuality.benchmarks.readers import (
    SEMEVAL2012_PARADIGMS,
    SEMEVAL2012_SUBCATEGORIES,
    read_categorization,
    read_google_analogies,
    read_msr_analogies,
    read_semeval2012,
    read_similarity,
    semeval2012_gold_file,
)
from contextuality.benchmarks.scorers import (
    Score,
    score_analogy,
    score_categorization,
    score_semeval2012,
    score_similarity,
)
from contextuality.benchmarks.sources import source_url
from contextuality.benchmarks.vectors import (
    OOV_POLICIES,
    OovPolicy,
    ScoringProtocol,
    WordVectors,
    check_protocol,
    paper_vectors,
)
from contextuality.configuration.schema import default
from contextuality.errors import ConfigError

Reader = Callable[[Path], pd.DataFrame]
Scorer = Callable[[pd.DataFrame, WordVectors, bool, OovPolicy], Score]
# The seed of a categorization benchmark's clusterings (the standard protocol's KMeans, the
# paper protocol's order of the words): fixed, so that a score is the vectors' alone.
CATEGORIZATION_SEED = 0


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark: its files (relative to the data root) and their public URLs, its
    kind (similarity, analogy, relational_similarity, categorization), the metric of
    `Score.value`, a reader taking the data root and a scorer taking the read table, and
    the reader and scorer of the paper protocol (the same where the protocols differ only
    in the vectors). `files` are what either protocol reads."""

    name: str
    title: str
    kind: str
    metric: str
    files: tuple[str, ...]
    urls: tuple[str, ...]
    reader: Reader
    scorer: Scorer
    paper_reader: Reader
    paper_scorer: Scorer

    def for_protocol(self, protocol: ScoringProtocol) -> tuple[Reader, Scorer]:
        """The reader and scorer of `protocol`."""
        check_protocol(protocol)
        if protocol == "paper":
            return self.paper_reader, self.paper_scorer
        return self.reader, self.scorer


def _spec(
    name: str,
    title: str,
    kind: str,
    metric: str,
    files: Sequence[str],
    reader: Reader,
    scorer: Scorer,
    paper_reader: Reader | None = None,
    paper_scorer: Scorer | None = None,
) -> BenchmarkSpec:
    return BenchmarkSpec(
        name,
        title,
        kind,
        metric,
        tuple(files),
        tuple(map(source_url, files)),
        reader,
        scorer,
        paper_reader or reader,
        paper_scorer or scorer,
    )


def _file_reader(read: Callable[[Path], pd.DataFrame], relative: str) -> Reader:
    return lambda data_root: read(Path(data_root) / relative)


def _similarity(name: str, title: str, relative: str) -> BenchmarkSpec:
    reader = _file_reader(read_similarity, relative)
    return _spec(name, title, "similarity", "spearman", [relative], reader, score_similarity)


def _analogy(
    name: str,
    title: str,
    relative: str,
    read: Callable[[Path], pd.DataFrame],
    method: Literal["3cosadd", "3cosmul"],
) -> BenchmarkSpec:
    scorer = functools.partial(score_analogy, method=method)
    return _spec(
        name,
        title,
        "analogy",
        f"accuracy_{method}",
        [relative],
        _file_reader(read, relative),
        scorer,
        paper_scorer=functools.partial(scorer, protocol="paper"),
    )


def _categorization(name: str, title: str, relative: str) -> BenchmarkSpec:
    scorer = functools.partial(score_categorization, seed=CATEGORIZATION_SEED)
    return _spec(
        name,
        title,
        "categorization",
        "purity",
        [relative],
        _file_reader(read_categorization, relative),
        scorer,
        paper_scorer=functools.partial(scorer, protocol="paper"),
    )


_SEMEVAL_FILES = [SEMEVAL2012_PARADIGMS] + list(
    map(semeval2012_gold_file, SEMEVAL2012_SUBCATEGORIES)
)
_GOOGLE = "analogy/questions-words.txt"
_MSR = "analogy/msr.csv"
BENCHMARKS: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        _similarity("simlex999", "SimLex-999", "wordsim/EN-SIMLEX-999.txt"),
        _similarity("men", "MEN", "wordsim/EN-MEN-TR-3k.txt"),
        _similarity("ws353", "WordSim-353", "wordsim/EN-WS-353-ALL.txt"),
        _similarity("rw", "Stanford Rare Words", "wordsim/EN-RW-STANFORD.txt"),
        _analogy("google", "Google analogies", _GOOGLE, read_google_analogies, "3cosadd"),
        _analogy("msr", "MSR analogies", _MSR, read_msr_analogies, "3cosadd"),
        _analogy(
            "google_3cosmul",
            "Google analogies, 3CosMul",
            _GOOGLE,
            read_google_analogies,
            "3cosmul",
        ),
        _analogy("msr_3cosmul", "MSR analogies, 3CosMul", _MSR, read_msr_analogies, "3cosmul"),
        _spec(
            "semeval2012",
            "SemEval-2012 Task 2",
            "relational_similarity",
            "mean_spearman",
            _SEMEVAL_FILES,
            read_semeval2012,
            score_semeval2012,
            paper_reader=functools.partial(read_semeval2012, split="all"),
            paper_scorer=functools.partial(score_semeval2012, relation="dot"),
        ),
        _categorization("bless", "BLESS", "categorization/bless.csv"),
        _categorization("ap", "AP", "categorization/ap.csv"),
    )
}


@dataclass(frozen=True)
class ScoringSettings:
    """How the static vectors are scored (config ``static``, less what chooses jobs): the
    benchmarks, whether their words are lowercased, and what an out-of-vocabulary word
    gets (`OOV_POLICIES`); checked when made."""

    benchmarks: tuple[str, ...] = tuple(default("static", "benchmarks"))
    lowercase: bool = default("static", "lowercase")
    oov: str = default("static", "oov")

    def __post_init__(self) -> None:
        object.__setattr__(self, "benchmarks", tuple(self.benchmarks))  # a YAML list
        unknown = [name for name in self.benchmarks if name not in BENCHMARKS]
        if unknown:
            raise ConfigError(
                f"static.benchmarks: unknown {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}"
            )
        if self.oov not in OOV_POLICIES:
            raise ConfigError(f"static.oov must be one of {OOV_POLICIES}, not {self.oov!r}")


def _spec_of(name: str) -> BenchmarkSpec:
    if name not in BENCHMARKS:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")
    return BENCHMARKS[name]


def _protocol_vectors(
    vectors: WordVectors, protocol: ScoringProtocol, shared_vocabulary: Iterable[str] | None
) -> WordVectors:
    """`vectors` as `protocol` scores them: as given, or `paper_vectors`."""
    check_protocol(protocol)
    if protocol == "paper":
        return paper_vectors(vectors, shared_vocabulary)
    if shared_vocabulary is not None:
        raise ValueError("shared_vocabulary belongs to the paper protocol, not the standard one")
    return vectors


def _score(
    spec: BenchmarkSpec,
    vectors: WordVectors,
    data_root: str | Path,
    lowercase: bool,
    oov: OovPolicy,
    protocol: ScoringProtocol,
) -> Score:
    reader, scorer = spec.for_protocol(protocol)
    return scorer(reader(Path(data_root)), vectors, lowercase, oov)


def score_benchmark(
    name: str,
    vectors: WordVectors,
    data_root: str | Path,
    *,
    lowercase: bool,
    oov: OovPolicy,
    protocol: ScoringProtocol = "standard",
    shared_vocabulary: Iterable[str] | None = None,
) -> Score:
    """Read benchmark `name` (a key of BENCHMARKS) under `data_root` and score `vectors`
    under `protocol` (one of PROTOCOLS), their words lowercased or not, an OOV word as `oov`
    says (`ScoringSettings`). `shared_vocabulary`: the paper protocol's common vocabulary
    (see `paper_vectors`); None keeps every word."""
    spec = _spec_of(name)
    prepared = _protocol_vectors(vectors, protocol, shared_vocabulary)
    return _score(spec, prepared, data_root, lowercase, oov, protocol)


def score_benchmarks(
    vectors: WordVectors,
    data_root: str | Path,
    names: Sequence[str] | None = None,
    *,
    lowercase: bool,
    oov: OovPolicy,
    protocol: ScoringProtocol = "standard",
    shared_vocabulary: Iterable[str] | None = None,
) -> pd.DataFrame:
    """`score_benchmark` for each of `names` (default: all), as rows of
    (benchmark, metric, value, coverage, n); the paper protocol's vectors are prepared once."""
    specs = [_spec_of(name) for name in (BENCHMARKS if names is None else names)]
    prepared = _protocol_vectors(vectors, protocol, shared_vocabulary)
    rows = []
    for spec in specs:
        score = _score(spec, prepared, data_root, lowercase, oov, protocol)
        rows.append((spec.name, spec.metric, score.value, score.coverage, score.n))
    return pd.DataFrame(rows, columns=["benchmark", "metric", "value", "coverage", "n"])
