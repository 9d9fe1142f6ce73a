"""Sums that do not depend on the order of their terms: a streamed layer's running sums.

Float64 addition rounds, so the sum of a layer's segments depends on how they were
grouped: one job adds segment after segment, a partitioned run adds each part's total.
An `ExactSum` keeps each float64 term truncated to a multiple of 2^-70 (`RESOLUTION_BITS`;
far below float64's precision for any value a vector holds) and adds those as integers,
in two int64 limbs, so that the total is the same integer whatever the grouping, and
`value` rounds it to float64 once. The parts of a partitioned extraction then merge into
the one job's state bit for bit (`merge`), wherever each segment's terms are computed the
same (a deterministic forward pass and summation).

value = (hi · 2^52 + lo) · 2^-70. A term's low limb is below 2^52, so 2^10 of them add
into ``lo`` before it is carried into ``hi`` (`_carry`, every `CARRY_EVERY` additions and
before the value is read), without overflowing int64. |value| must stay below 2^43 ≈
8.8·10^12: a term or a sum beyond that is an OverflowError (float32 shards of massive
activations summed over 10^9 occurrences could reach it; float16 rows over 10^8 cannot).
"""

from __future__ import annotations

from typing import Any

RESOLUTION_BITS = 70
LIMB_BITS = 52
VALUE_BITS = 43  # |value| < 2^43
CARRY_EVERY = 1024


class ExactSum:
    """A running sum of float64 tensors of one shape, on one device, kept exactly as an
    integer multiple of 2^-70 (`hi`, `lo`: int64 tensors of that shape)."""

    def __init__(self, shape: tuple[int, ...], device: Any) -> None:
        import torch

        self.hi = torch.zeros(shape, dtype=torch.int64, device=device)
        self.lo = torch.zeros(shape, dtype=torch.int64, device=device)
        self._pending = 0  # additions to ``lo`` since it was last carried

    def add(self, terms: Any, rows: Any = None) -> None:
        """Add float64 `terms` (finite: a row without a vector is left out before it is
        summed): of the sum's shape, or the rows `rows` (distinct indices of the first
        axis) of it."""
        hi, lo = limbs(terms)
        if rows is None:
            self.hi += hi
            self.lo += lo
        else:
            self.hi.index_add_(0, rows, hi)
            self.lo.index_add_(0, rows, lo)
        self._pending += 1
        if self._pending >= CARRY_EVERY:
            self._carry()

    def merge(self, other: ExactSum) -> None:
        """Add another sum of the same shape, exactly."""
        self._carry()
        other._carry()
        self.hi += other.hi
        self.lo += other.lo
        self._carry()

    def _carry(self) -> None:
        """Bring ``lo`` back into [0, 2^52), carrying into ``hi``; an OverflowError where
        the sum left the range."""
        carry = self.lo >> LIMB_BITS
        self.lo -= carry << LIMB_BITS
        self.hi += carry
        self._pending = 0
        if bool((self.hi.abs() >= 2 ** (VALUE_BITS + RESOLUTION_BITS - LIMB_BITS)).any()):
            raise OverflowError(f"a streamed sum reached 2^{VALUE_BITS}")

    def value(self) -> Any:
        """The sum as float64, rounded from the exact integer (the same bits for the same
        integer)."""
        import torch

        self._carry()
        high = self.hi.to(torch.float64) * 2.0 ** (LIMB_BITS - RESOLUTION_BITS)
        return high + self.lo.to(torch.float64) * 2.0**-RESOLUTION_BITS

    def carried_limbs(self) -> tuple[Any, Any]:
        """(hi, lo), ``lo`` carried into [0, 2^52): what a part's state file stores."""
        self._carry()
        return self.hi, self.lo

    @classmethod
    def of_limbs(cls, hi: Any, lo: Any) -> ExactSum:
        """A sum from its limbs (as a state file stores them)."""
        total = cls.__new__(cls)
        total.hi, total.lo, total._pending = hi, lo, 0
        return total


def limbs(terms: Any) -> tuple[Any, Any]:
    """Float64 `terms` as two int64 limbs (hi, lo) of floor(terms · 2^70), exactly: scaling
    by a power of two, the floor and the split at 2^52 are exact in float64. A term of
    2^43 or more is an OverflowError."""
    import torch

    whole = torch.floor_(terms.to(torch.float64) * 2.0**RESOLUTION_BITS)
    high = torch.floor_(whole * 2.0**-LIMB_BITS)
    whole -= high * 2.0**LIMB_BITS
    if len(high) and float(high.abs().max()) >= 2.0 ** (VALUE_BITS + RESOLUTION_BITS - LIMB_BITS):
        raise OverflowError(f"a streamed term reached 2^{VALUE_BITS}")
    return high.to(torch.int64), whole.to(torch.int64)
