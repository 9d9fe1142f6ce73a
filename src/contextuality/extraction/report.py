"""What an extraction did (`ExtractionReport`, stored in the model's meta.json), and what a
user must be told about the units that got no vector (`coverage_warnings`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from contextuality.extraction.parity import merged_parity
from contextuality.extraction.units import EncodedSentence

N_EXAMPLES = 5  # occurrences named in a warning about units without vectors


@dataclass
class ExtractionReport:
    """What one extraction did; stored in the model's meta.json.

    ``non_finite_vectors`` counts vectors that were ±inf or NaN after the forward pass; an
    extraction that meets one is refused, so a written meta.json always records 0.
    ``subwords_spanning_words``: subwords that overlap two or more words and so serve each
    (``words_sharing_subwords``: the word occurrences that pool one of them).
    ``truncated_examples``, ``untokenized_examples``: the occurrence ids of the first few
    units lost to truncation and of units no token overlaps (`coverage_warnings`).
    ``blocks_run``: the blocks each forward pass ran (up to the last layer asked for);
    ``shard_bytes``: the size of the vectors written. ``partition``: for one part of a
    partitioned extraction, which part and which rows
    (`partitions.ExtractionPlan.part_attributes`); its keys are written beside the others,
    and nothing when the extraction is whole.
    ``forward_dtype``: the precision the forward passes ran in (the model's ``cuda_dtype``
    on CUDA, float32 elsewhere); ``autocast``: whether it was torch's autocast over weights
    kept in ``weights_dtype`` (else the weights were held in it);
    ``batches_rerun_in_float32``: the batches whose float16 or bfloat16 pass gave ±inf or
    NaN and were run again in float32, whose vectors were kept.
    ``storage_dtype``: what the vectors are stored as; ``stored_float32_after_overflow``:
    whether, with ``storage_dtype: auto``, a value beyond float16's range made the whole
    extraction run again into float32. ``ablation``: for an ablated model, its block and
    target, the value they were set to (its calibration) and how many were, over every
    forward pass (a batch run again in float32 counts twice, and so does an input the
    parity check runs alone; `ablation.ablated`).
    ``parity``: the check of a seeded sample of sentences run alone against their batches
    (`parity.ParityCheck.record`: the sample, the tolerance, and per layer the largest
    absolute and relative difference).
    """

    n_sentences: int = 0
    n_occurrences: int = 0
    n_subword_tokens: int = 0
    n_batches: int = 0
    sentences_truncated: int = 0
    words_truncated: int = 0
    words_without_tokens: int = 0
    sentences_windowed: int = 0
    out_of_memory_retries: int = 0
    non_finite_vectors: int = 0
    subwords_spanning_words: int = 0
    words_sharing_subwords: int = 0
    subwords_outside_words: int = 0
    truncated_examples: list[int] = field(default_factory=list)
    untokenized_examples: list[int] = field(default_factory=list)
    token_budget: int = 0
    storage_dtype: str = "float16"
    stored_float32_after_overflow: bool = False
    device: str = "cpu"
    forward_dtype: str = "float32"
    autocast: bool = False
    batches_rerun_in_float32: int = 0
    seconds: float = 0.0
    shard_bytes: int = 0
    blocks_run: int = 0
    partition: dict[str, int] | None = None
    ablation: dict[str, Any] | None = None
    parity: dict[str, Any] | None = None

    @property
    def tokens_per_second(self) -> float:
        return self.n_subword_tokens / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        partition = values.pop("partition") or {}
        return {**values, **partition, "tokens_per_second": round(self.tokens_per_second, 1)}


def count_coverage(
    encoded: list[EncodedSentence], first_rows: np.ndarray, report: ExtractionReport
) -> None:
    """Add a segment's truncated, windowed and token-less sentences and units to the report,
    and the first few such units (`first_rows`: occurrence id of each sentence's first)."""
    present: dict[int, set[int]] = {}
    inputs: dict[int, list[EncodedSentence]] = {}
    for sentence in encoded:
        words = present.setdefault(sentence.sentence, set())
        words.update(sentence.word_index[sentence.word_index >= 0].tolist())
        words.update(sentence.shared[:, 1].tolist())
        inputs.setdefault(sentence.sentence, []).append(sentence)
    for owner, parts in inputs.items():
        n_words, words = parts[0].n_words, present[owner]
        truncated = any(part.truncated for part in parts)
        reached = max(words, default=-1) + 1 if truncated else n_words
        report.sentences_truncated += int(truncated)
        report.sentences_windowed += int(len(parts) > 1)
        report.words_truncated += n_words - reached
        report.words_without_tokens += reached - len(words)
        first = int(first_rows[owner])
        _add_examples(report.truncated_examples, range(first + reached, first + n_words))
        if reached > len(words):
            missing = np.setdiff1d(np.arange(reached), list(words))
            _add_examples(report.untokenized_examples, (first + missing).tolist())


def _add_examples(examples: list[int], rows: Sequence[int]) -> None:
    """Extend `examples` with `rows` up to `N_EXAMPLES`."""
    examples.extend(rows[: N_EXAMPLES - len(examples)])


def coverage_warnings(
    report: ExtractionReport, name: str, max_length: int, words: Sequence[str], units: str
) -> list[str]:
    """What a user must be told about units that got no vector: those past the model's
    `max_length` and those that no token overlaps, with counts and the first few examples
    (`words`: the index's unit strings, by occurrence id; `units`: what they are)."""
    messages = []
    if report.words_truncated:
        lost = _counted(report.words_truncated, f"{units} occurrence")
        sentences = _counted(report.sentences_truncated, "sentence")
        messages.append(
            f"model {name}: no vector for {lost} in {sentences} beyond the model's "
            f"{max_length:,}-token limit (e.g. {_examples(report.truncated_examples, words)}); "
            f"set models.{name}.long_sentences: window to read long sentences in windows"
        )
    if report.words_without_tokens:
        lost = _counted(report.words_without_tokens, f"{units} occurrence")
        messages.append(
            f"model {name}: no vector for {lost} that no token of the model overlaps "
            f"(e.g. {_examples(report.untokenized_examples, words)})"
        )
    return messages


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _examples(rows: list[int], words: Sequence[str]) -> str:
    return ", ".join(f"{str(words[row])!r} (occurrence {row:,})" for row in rows)


# What the parts of a partitioned extraction each count, and what says which part it was.
_ADDED = (
    "n_sentences",
    "n_occurrences",
    "n_subword_tokens",
    "n_batches",
    "sentences_truncated",
    "words_truncated",
    "words_without_tokens",
    "sentences_windowed",
    "out_of_memory_retries",
    "non_finite_vectors",
    "subwords_spanning_words",
    "words_sharing_subwords",
    "subwords_outside_words",
    "batches_rerun_in_float32",
    "seconds",
    "shard_bytes",
)
_PART = ("part", "n_parts", "first_row", "n_rows_total", "first_sentence", "end_sentence")


def merged_meta(metas: list[dict[str, Any]]) -> dict[str, Any]:
    """The meta.json of an extraction run in parts, from each part's (in order): their
    counts and seconds added (``tokens_per_second`` over all of them: the rate of one GPU),
    their first examples and warnings in turn, their parity checks together
    (`parity.merged_parity`), what says which part left out and
    ``merged_parts`` recording how many there were."""
    merged = {key: value for key, value in metas[0].items() if key not in _PART}
    for key in _ADDED:
        merged[key] = sum(meta[key] for meta in metas)
    for key in ("truncated_examples", "untokenized_examples"):
        merged[key] = [row for meta in metas for row in meta[key]][:N_EXAMPLES]
    merged["warnings"] = [text for meta in metas for text in meta["warnings"]]
    merged["parity"] = merged_parity([meta.get("parity") for meta in metas])
    seconds = merged["seconds"]
    merged["tokens_per_second"] = round(merged["n_subword_tokens"] / seconds, 1) if seconds else 0.0
    merged["merged_parts"] = len(metas)
    return merged
