"""One streamed layer's running sums, on the device the model runs on: what a segment adds.

The sums are `state.LayerSums`' (see `state` for their definitions): the floating ones kept
exactly (`exact.ExactSum`, so that parts merge into the one job's sums bit for bit), the
counts as int64, each sentence's IntraSim and row count set once (a sentence never spans
two segments). A segment's rows (n, d) arrive as a torch tensor; every pass over them is
one index_add on the device, in float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from contextuality.streaming.exact import ExactSum

# LayerSums' fields, by how they are kept and merged.
EXACT_FIELDS = (
    "word_vector_sum",
    "word_unit_sum",
    "word_context_square",
    "unit_sum",
    "sentence_square_by_dimension",
)
COUNT_FIELDS = ("word_n", "word_context_pairs", "word_n_with_repeats")
SENTENCE_FIELDS = ("sentence_n", "sentence_intrasim")


@dataclass(frozen=True)
class RowIndex:
    """The occurrence index as the sums read it, on their device: each row's tracked-word
    slot (-1 for a word not tracked) and sentence, each sentence's copies in the corpus."""

    slot: Any
    sentence: Any
    copies: Any
    n_words: int
    n_sentences: int
    dim: int


class DeviceLayerSums:
    """One layer's sums over the rows added so far (`add`), on `index`'s device."""

    def __init__(self, index: RowIndex) -> None:
        import torch

        device, d = index.slot.device, index.dim
        self.index = index
        # Σ f | Σ u per tracked word, side by side: one index_add a segment
        self.words = ExactSum((index.n_words, 2 * d), device)
        self.word_context_square = ExactSum((index.n_words,), device)
        self.unit_sum = ExactSum((d,), device)
        self.sentence_square_by_dimension = ExactSum((d,), device)
        self.counts = {
            name: torch.zeros(index.n_words, dtype=torch.int64, device=device)
            for name in COUNT_FIELDS
        }
        self.totals = torch.zeros(2, dtype=torch.int64, device=device)  # N, Σ_s n_s²
        self.sentence_n = torch.zeros(index.n_sentences, dtype=torch.int64, device=device)
        self.sentence_intrasim = torch.full(
            (index.n_sentences,), float("nan"), dtype=torch.float64, device=device
        )

    def add(self, both: Any, valid: Any, first_row: int) -> None:
        """Add a segment's rows of occurrences first_row, first_row + 1, ...: `both` (n, 2d)
        float64 holds each row f and its unit vector u = f/‖f‖ side by side, `valid` (n,)
        which rows count (finite, not all zero)."""
        import torch

        index, d = self.index, self.index.dim
        sentence = index.sentence[first_row : first_row + len(both)]
        slot = index.slot[first_row : first_row + len(both)]
        if not bool(valid.all()):
            kept = valid.nonzero().flatten()
            both, sentence, slot = both[kept], sentence[kept], slot[kept]
        # sentences: the layer's sums and each sentence's IntraSim
        keys, of_sentence, sizes = torch.unique_consecutive(
            sentence, return_inverse=True, return_counts=True
        )
        by_sentence = sums_by(of_sentence, len(keys), both)
        vector_sums, unit_sums = by_sentence[:, :d], by_sentence[:, d:]
        self.unit_sum.add(unit_sums.sum(dim=0))
        self.sentence_square_by_dimension.add((unit_sums * unit_sums).sum(dim=0))
        self.totals += torch.stack([sizes.sum(), (sizes**2).sum()])
        self.sentence_intrasim[keys] = (unit_sums * vector_sums).sum(dim=1) / (
            sizes * torch.linalg.vector_norm(vector_sums, dim=1)
        )
        self.sentence_n[keys] = sizes
        self._add_words(both, sentence, slot)

    def _add_words(self, both: Any, sentence: Any, slot: Any) -> None:
        """The words' sums: Σ f | Σ u of each word the segment holds, and per context
        (word, sentence) the square of its unit rows' sum, which for a context of one row
        is that row's own ‖u‖² (rows of words not tracked go to a spare slot, dropped)."""
        import torch

        index, d = self.index, self.index.dim
        spare = index.n_words
        words, of_word = torch.unique(torch.where(slot >= 0, slot, spare), return_inverse=True)
        by_word = sums_by(of_word, len(words), both)
        tracked = len(words) - int(words[-1] == spare) if len(words) else 0  # spare: last
        self.words.add(by_word[:tracked], words[:tracked])
        context_key = torch.where(slot >= 0, slot * index.n_sentences + sentence, -1)
        contexts, of_context, context_sizes = torch.unique(
            context_key, return_inverse=True, return_counts=True
        )
        shared = context_sizes[of_context] > 1
        own_square = torch.where(shared, 0.0, (both[:, d:] * both[:, d:]).sum(dim=1))
        squares = sums_by(of_context, len(contexts), own_square[:, None])[:, 0]
        if bool(shared.any()):
            rows = shared.nonzero().flatten()
            numbered = torch.cumsum(context_sizes > 1, dim=0) - 1
            unit_sums = sums_by(numbered[of_context[rows]], int(numbered[-1]) + 1, both[rows, d:])
            squares[context_sizes > 1] = (unit_sums * unit_sums).sum(dim=1)
        keep = contexts >= 0
        contexts, context_sizes, squares = contexts[keep], context_sizes[keep], squares[keep]
        context_word = contexts // index.n_sentences
        # the words' contexts: each word's squares summed over the segment, then added
        in_segment = torch.searchsorted(words, context_word)
        by_segment_word = sums_by(in_segment, len(words), squares[:, None])[:, 0]
        self.word_context_square.add(by_segment_word[:tracked], words[:tracked])
        self.counts["word_context_pairs"].index_add_(0, context_word, context_sizes**2)
        self.counts["word_n"].index_add_(0, context_word, context_sizes)
        repeats = index.copies[contexts % index.n_sentences] * context_sizes
        self.counts["word_n_with_repeats"].index_add_(0, context_word, repeats)

    def merge(self, other: DeviceLayerSums) -> None:
        """Add the sums of other rows (another part's), exactly; their sentences' values
        taken as they are (a part's sentences are its own)."""
        for name in ("words", "word_context_square", "unit_sum", "sentence_square_by_dimension"):
            getattr(self, name).merge(getattr(other, name))
        for name in COUNT_FIELDS:
            self.counts[name] += other.counts[name]
        self.totals += other.totals
        theirs = other.sentence_n > 0
        self.sentence_n[theirs] = other.sentence_n[theirs]
        self.sentence_intrasim[theirs] = other.sentence_intrasim[theirs]

    def arrays(self, limbs: bool = False) -> dict[str, np.ndarray]:
        """Every field as the state file stores it: each exact sum as float64 (and with
        `limbs`, for a part to merge, as its two limbs ``<name>_hi``, ``<name>_lo``), the
        counts and the sentences' values."""
        d = self.index.dim
        exact = {
            "word_context_square": self.word_context_square,
            "unit_sum": self.unit_sum,
            "sentence_square_by_dimension": self.sentence_square_by_dimension,
        }
        words = self.words.value().cpu().numpy()
        values = {"word_vector_sum": words[:, :d], "word_unit_sum": words[:, d:]}
        values |= {name: total.value().cpu().numpy() for name, total in exact.items()}
        if limbs:
            for name, total in {"words": self.words, **exact}.items():
                hi, lo = total.carried_limbs()
                values |= {f"{name}_hi": hi.cpu().numpy(), f"{name}_lo": lo.cpu().numpy()}
        values |= {name: tensor.cpu().numpy() for name, tensor in self.counts.items()}
        values["sentence_n"] = self.sentence_n.cpu().numpy()
        values["sentence_intrasim"] = self.sentence_intrasim.cpu().numpy()
        return values

    def totals_attributes(self) -> dict[str, int]:
        """The layer's N and Σ_s n_s², as a state file's attributes."""
        n_valid, pairs = self.totals.tolist()
        return {"n_valid": n_valid, "same_sentence_pairs": pairs}

    @classmethod
    def of_arrays(
        cls, index: RowIndex, arrays: dict[str, np.ndarray], totals: tuple[int, int]
    ) -> DeviceLayerSums:
        """The sums a state file holds (`arrays`, as `arrays` wrote them), on `index`'s
        device, to merge."""
        import torch

        device = index.slot.device
        sums = cls(index)

        def tensor(name: str) -> Any:
            return torch.as_tensor(arrays[name], device=device)

        sums.words = ExactSum.of_limbs(tensor("words_hi"), tensor("words_lo"))
        for name in ("word_context_square", "unit_sum", "sentence_square_by_dimension"):
            setattr(sums, name, ExactSum.of_limbs(tensor(f"{name}_hi"), tensor(f"{name}_lo")))
        sums.counts = {name: tensor(name) for name in COUNT_FIELDS}
        sums.totals = torch.tensor(totals, dtype=torch.int64, device=device)
        sums.sentence_n, sums.sentence_intrasim = tensor("sentence_n"), tensor("sentence_intrasim")
        return sums


def sums_by(group: Any, n_groups: int, rows: Any) -> Any:
    """(n_groups, width) sums of `rows` (n, width) by their group (n,), in rows' dtype."""
    import torch

    sums = torch.zeros((n_groups, rows.shape[1]), dtype=rows.dtype, device=rows.device)
    return sums.index_add_(0, group, rows)
