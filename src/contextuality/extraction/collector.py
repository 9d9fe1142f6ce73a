"""The cyclic garbage collector around an extraction: paused while a model loads, and kept
off the objects alive before the forward passes (the model, its tokenizer, the imports)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (`gc.disable`) while the block runs, and restore
    its state after: importing torch and transformers and loading a model make some 400,000
    long-lived objects, and the collector's six full passes over them as they appeared took
    0.7 s of a MiniLM extraction job (bench/results/default-run-cpu2.md)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def collector_sparing_live_objects() -> Iterator[None]:
    """Leave the objects alive on entry (the model, its tokenizer, the imports) out of the
    cyclic garbage collector's passes while the block runs (`gc.freeze`); objects made
    inside are collected as usual, and on exit the frozen ones are tracked again unless
    some were frozen before (the caller's choice, kept)."""
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:
            gc.unfreeze()
