"""Batched equals one at a time: a seeded sample of an extraction's sentences run alone.

Every extraction pads inputs into length-sorted batches (`forward.plan_batches`); a wrong
padding side or attention mask, or an engine whose batched kernels differ, gives every
vector a silent error that no other check sees. So each extraction draws a seeded sample
of its sentences (``models.<name>.parity_sentences``, stream ``parity_sentences`` of the
run's seed), keeps their word rows as their batches gave them (float32, before storage),
runs each of their inputs again alone (a batch of one: no padding), in the same dtype, and
compares each layer's rows. The largest absolute difference per layer, and the relative
one (each row's largest difference over that row's largest |value|, so that a row of
massive activations hides no error in the others), go into every output's
attributes and meta.json (`ParityCheck.record`); a relative difference beyond the
forward precision's `PARITY_TOLERANCE` refuses the extraction (BatchParityError) before
any output is put in place.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextuality.backends.base import LoadedModel
from contextuality.configuration import random_streams
from contextuality.errors import BatchParityError, ConfigError
from contextuality.extraction.forward import forward_batch
from contextuality.extraction.partitions import ExtractionPlan
from contextuality.extraction.units import EncodedSentence

# The largest relative difference (a row's largest |batched − alone| over its largest
# |value|, the most of any row, per layer) a forward precision allows between an input in
# its batch and alone: see bench/results/parity-cpu.md for what MiniLM's batches and its
# first Lee sentences alone differ by on a CPU in each precision, and what a planted wrong
# padding side or attention mask gives.
PARITY_TOLERANCE = {"float32": 1e-4, "float16": 3e-2, "bfloat16": 2e-1}


def parity_sentences(
    row_offsets: np.ndarray, first_sentence: int, end_sentence: int, count: int, seed: int
) -> np.ndarray:
    """The sorted corpus ids of up to `count` sentences of ``first_sentence:end_sentence``
    that hold some row (row_offsets: first row of each sentence, then the total), drawn
    without replacement from stream ``parity_sentences`` of `seed`."""
    ids = np.arange(first_sentence, end_sentence)
    ids = ids[np.diff(row_offsets[first_sentence : end_sentence + 1]) > 0]
    rng = random_streams.generator(seed, "parity_sentences")
    return np.sort(rng.choice(ids, min(count, len(ids)), replace=False))


def precision_of(loaded: LoadedModel, forward_dtype: str) -> str:
    """The narrowest precision a forward pass runs in: `forward_dtype` (the autocast or held
    dtype on CUDA), else the dtype the weights are held in (``weights_dtype`` on a CPU)."""
    if forward_dtype != "float32":
        return forward_dtype
    return str(next(loaded.model.parameters()).dtype).removeprefix("torch.")


@dataclass
class _Kept:
    """One sampled input's rows as its batch gave them: the segment rows, the (n_layers,
    rows, dim) float32 vectors and the dtype its batch ran in."""

    rows: np.ndarray
    vectors: Any
    dtype: str


@dataclass
class SegmentParity:
    """The sampled inputs of one segment (`positions` in its encoded list) and their rows
    from the batches (`keep`), until `compare` runs them alone."""

    check: ParityCheck
    encoded: list[EncodedSentence]
    first_rows: np.ndarray
    positions: set[int]
    kept: dict[int, _Kept] = field(default_factory=dict)

    def keep(self, positions: np.ndarray, pooled: Any, rows: np.ndarray, dtype: str) -> None:
        """Keep the sampled inputs' rows of a batch that ran `positions` (pooled: its
        (n_layers, rows, dim) float32 vectors, rows: their segment rows). A batch run
        again (in float32, after an overflow) replaces what its first pass gave."""
        for position in self.positions.intersection(positions.tolist()):
            mine = input_rows(self.encoded[position], self.first_rows)
            columns = np.searchsorted(rows, mine)
            self.kept[position] = _Kept(mine, pooled[:, columns].clone(), dtype)

    def compare(self, loaded: LoadedModel, layers: tuple[int, ...]) -> None:
        """Run each kept input alone, in the dtype its batch ran in, and add the layers'
        differences to the check."""
        import torch

        started = time.perf_counter()
        for position in sorted(self.kept):
            kept = self.kept.pop(position)
            alone, _, rows = forward_batch(
                loaded, [self.encoded[position]], layers, self.first_rows, kept.dtype
            )
            if not np.array_equal(rows, kept.rows):
                raise ValueError(f"input {position} gave rows {rows} alone, {kept.rows} batched")
            with torch.inference_mode():
                self.check.add(kept.vectors, alone)
        self.check.seconds += time.perf_counter() - started


def input_rows(sentence: EncodedSentence, first_rows: np.ndarray) -> np.ndarray:
    """The sorted segment rows one input gives a vector to (`forward.pool_batch`'s rows of
    a batch of it alone)."""
    first = first_rows[sentence.sentence]
    words = np.concatenate([sentence.word_index[sentence.word_index >= 0], sentence.shared[:, 1]])
    return np.unique(first + words)


@dataclass
class ParityCheck:
    """One extraction's parity check: the sampled sentences (corpus ids), and per layer
    the largest |batched − alone| of the sample's rows so far, and the largest relative
    one of a row (its largest |batched − alone| over its largest |value|).

    A model that must see its inputs one at a time in corpus order (``sequential``) has
    no batches to check; nor does a sample of 0 sentences."""

    model: str
    layers: tuple[int, ...]
    sentences: np.ndarray
    seed: int
    precision: str
    enabled: bool = True
    n_inputs: int = 0
    n_rows: int = 0
    seconds: float = 0.0
    difference: np.ndarray | None = None
    row_relative: np.ndarray | None = None

    @classmethod
    def planned(
        cls, loaded: LoadedModel, plan: ExtractionPlan, forward_dtype: str, seed: int
    ) -> ParityCheck:
        """The check of the extraction `plan` (its layers, over its sentences), its sample
        drawn by `parity_sentences`."""
        count = loaded.spec.parity_sentences
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(
                f"models.{loaded.spec.name}.parity_sentences: {count!r} is not a count of "
                "sentences; set 0 (no check) or more"
            )
        count = 0 if loaded.sequential else count
        bounds = (plan.first_sentence, plan.end_sentence)
        chosen = parity_sentences(plan.row_offsets, *bounds, count, seed)
        zeros = np.zeros(len(plan.layers))
        return cls(
            loaded.spec.name,
            tuple(plan.layers),
            chosen,
            seed,
            precision_of(loaded, forward_dtype),
            enabled=not loaded.sequential,
            difference=zeros.copy(),
            row_relative=zeros.copy(),
        )

    @property
    def tolerance(self) -> float:
        return PARITY_TOLERANCE[self.precision]

    def segment(
        self, encoded: list[EncodedSentence], start: int, first_rows: np.ndarray
    ) -> SegmentParity | None:
        """The sampled inputs of the segment of corpus sentences from `start` (encoded:
        its inputs; first_rows: segment row of each of its sentences' first), or None."""
        wanted = set((self.sentences - start).tolist())
        positions = {i for i, sentence in enumerate(encoded) if sentence.sentence in wanted}
        if not positions:
            return None
        return SegmentParity(self, encoded, first_rows, positions)

    def add(self, batched: Any, alone: Any) -> None:
        """Add one input's (n_layers, rows, dim) float32 vectors from its batch and alone
        (rows no subword reached are NaN in both; a value finite in one and not in the
        other is an infinite difference)."""
        import torch

        alone = alone.to(batched.device)
        both_missing = torch.isnan(batched) & torch.isnan(alone)
        gap = torch.where(both_missing, 0.0, (batched - alone).abs().nan_to_num(torch.inf))
        size = torch.where(torch.isfinite(batched), batched.abs(), 0.0).amax(dim=2)
        relative = gap.amax(dim=2) / size.clamp_min(torch.finfo(torch.float32).tiny)
        self.difference = np.maximum(self.difference, gap.amax(dim=(1, 2)).cpu().numpy())
        self.row_relative = np.maximum(self.row_relative, relative.amax(dim=1).cpu().numpy())
        self.n_inputs += 1
        self.n_rows += batched.shape[1]

    def relative(self) -> np.ndarray:
        """Each layer's largest relative difference: of a row, over that row's largest
        |value| (rows of massive activations do not scale the others')."""
        return self.row_relative

    def refuse_if_beyond_tolerance(self) -> None:
        """BatchParityError naming the model, the worst layer, its difference and the
        tolerance, where some layer's relative difference exceeds `tolerance`."""
        relative = self.relative()
        beyond = np.flatnonzero(~(relative <= self.tolerance))
        if not len(beyond):
            return
        worst = int(beyond[np.argmax(np.nan_to_num(relative[beyond], nan=np.inf))])
        raise BatchParityError(
            f"model {self.model}: layer {self.layers[worst]}'s vectors of {self.n_inputs} "
            f"sampled inputs differ between their padded batches and the same inputs run "
            f"alone by {self.difference[worst]:.3g} (a row by {relative[worst]:.3g} of its "
            f"largest |value|), beyond the {self.precision} tolerance {self.tolerance:g} "
            f"({len(beyond)} of {len(self.layers)} layers beyond it): the batches' padding or "
            "attention mask is wrong for this model; nothing was written"
        )

    def record(self) -> dict[str, Any]:
        """What outputs and meta.json record of the check: the sample (its sentences'
        corpus ids, the seed, inputs and rows compared), the precision and tolerance, and
        per layer the largest absolute and relative difference."""
        relative = self.relative()
        return {
            "checked": self.enabled and self.n_inputs > 0,
            "sentences": [int(sentence) for sentence in self.sentences],
            "seed": self.seed,
            "inputs": self.n_inputs,
            "rows": self.n_rows,
            "precision": self.precision,
            "tolerance": self.tolerance,
            "max_abs_difference": {
                str(layer): float(value)
                for layer, value in zip(self.layers, self.difference, strict=True)
            },
            "max_relative_difference": {
                str(layer): float(value) for layer, value in zip(self.layers, relative, strict=True)
            },
            "seconds": round(self.seconds, 3),
        }


def merged_parity(records: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The parity record of an extraction run in parts, from each part's (in order): their
    sentences, inputs, rows and seconds together, and per layer the largest difference of
    any part (the relative one too: each part was held to the tolerance on its own)."""
    if any(record is None for record in records):
        return None
    merged = dict(records[0])
    merged["checked"] = all(record["checked"] for record in records)
    merged["sentences"] = [sentence for record in records for sentence in record["sentences"]]
    for key in ("inputs", "rows"):
        merged[key] = sum(record[key] for record in records)
    merged["seconds"] = round(sum(record["seconds"] for record in records), 3)
    for key in ("max_abs_difference", "max_relative_difference"):
        merged[key] = {
            layer: max(record[key][layer] for record in records) for layer in records[0][key]
        }
    return merged
