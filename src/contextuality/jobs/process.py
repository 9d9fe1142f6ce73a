"""How a process of this package runs its work and ends: a workflow job's script
(`run_job`, `run_step`) and the command line (`run_command`). Whatever a user can reach
(a refused input, memory or disk run out, even the import of numpy, torch or h5py failing
under a memory limit too tight to map their libraries) ends it with one line saying what
was wrong or ran out, and exit status 1, never a traceback.

Only the standard library and `errors` are imported here: the work, and every module it
needs, is imported inside the function handed over, where a failure is caught.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from contextuality.errors import ContextualityError, on_console

# What bounds a job's or a command's memory, by workflow rule (``extract_<model>``,
# ``stream_<model>`` and ``merge_stream_<model>`` by their prefix, ``{model}`` filled in) or
# command: what an out-of-memory message tells the user to lower or to give more memory to.
_LAYER_ROWS = "the layer's rows × width, read whole from its shards"
_ROWS = (
    f"{_LAYER_ROWS} (the corpus's size; a scheduler is asked for 3 × the shards' size + "
    "500 MB, doubled on each --retries attempt)"
)
MEMORY_BOUNDS = {
    "extract_": "models.{model}.token_budget (padded subwords per forward batch), "
    "models.{model}.segment_words (words held before they are written) and the model's "
    "weights (models.{model}.weights_dtype)",
    "stream_": "models.{model}.token_budget (padded subwords per forward batch), "
    "models.{model}.streaming.word_sample_size (occurrences kept per word) and the model's "
    "weights (models.{model}.weights_dtype)",
    "merge_stream_": "the streamed layers' sums, one part's state files at a time",
    "measure_layer": _ROWS,
    "measure_streamed_layer": "models.<model>.streaming.word_sample_size (occurrences kept "
    "per word)",
    "static_vectors": _ROWS,
    "special_tokens": "the model's weights and its token_budget (padded subwords per batch)",
    "layer_dimension": "geometry.sample_size (rows × the layer's width × 2 bytes)",
    "layer_alignment": "geometry.sample_size (rows × the sum of the layers' widths × 2 bytes)",
    "alignment_between_models": "geometry.sample_size (rows × both models' layer widths)",
    "extract": "--token-budget (padded subwords per forward batch), --segment-words (words "
    "held before they are written) and --weights-dtype",
    "stream": "--token-budget (padded subwords per forward batch) and --word-sample-size",
    "measure-layer": _LAYER_ROWS,
    "static-vectors": _LAYER_ROWS,
    "layer-geometry": "--sample-size (rows × the sum of the layers' widths × 2 bytes)",
}


def memory_bound(job: str | None) -> str:
    """What bounds the memory of `job` (a workflow rule's or a command's name; see
    `MEMORY_BOUNDS`), as a clause for a message; empty where nothing but its inputs does."""
    if not job:
        return ""
    job = job.removeprefix("contextuality ")
    for name, bound in MEMORY_BOUNDS.items():
        if name.endswith("_") and job.startswith(name):
            return bound.format(model=job.removeprefix(name))
        if job == name:
            return bound
    return ""


def out_of_memory_message(job: str | None) -> str:
    """The one line that says a job or command ran out of memory, naming it and what bounds
    its memory (`memory_bound`), with the remedies a workflow job (a rule's name) or a
    command (``contextuality <command>``) has."""
    bound = memory_bound(job)
    where = f" in {job}" if job else ""
    lower = f"; its memory is bounded by {bound}" if bound else ""
    if job and job.startswith("contextuality "):
        remedy = "Give it more (a larger machine or allocation)" + (
            ", or lower that" if bound else ""
        )
    else:
        remedy = (
            "Give it more (a profile's mem_mb, a larger machine)"
            + (", lower that," if bound else "")
            + " or run fewer jobs at once (--cores, --resources mem_mb=...)"
        )
    return f"out of memory{where}: it needs more than it was given{lower}. {remedy}"


def _is_out_of_memory(error: BaseException) -> bool:
    """Whether `error` is memory running out: a MemoryError, an allocation refused by the
    system (ENOMEM), or a library that could not be mapped into memory as it was imported
    (``failed to map segment``)."""
    if isinstance(error, MemoryError):
        return True
    if isinstance(error, OSError) and error.errno == errno.ENOMEM:
        return True
    text = str(error)
    return isinstance(error, ImportError | OSError) and (
        "failed to map segment" in text or "cannot allocate memory" in text.lower()
    )


def failure_message(error: BaseException, job: str | None) -> str | None:
    """The one line for an `error` a user can reach: a ContextualityError's own message,
    memory run out (`out_of_memory_message`), a full disk; None for any other error (a
    defect of this package, whose traceback is what its report needs)."""
    if isinstance(error, ContextualityError):
        return str(error)
    if _is_out_of_memory(error):
        return out_of_memory_message(job)
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return (
            f"the disk is full (writing {error.filename or 'an output'}); no output was kept: "
            "free space and rerun"
        )
    return None


@contextlib.contextmanager
def limited_threads(threads: int | None) -> Iterator[None]:
    """Run the block with the BLAS and OpenMP pools limited to `threads` (None: left as
    they are). A workflow job runs its step so (`run_step`), and so does the command
    line's measure-layer: on small matrices one thread is faster even alone, and jobs side
    by side would otherwise each start a thread per core (a MiniLM layer's measures:
    3.53 s with a thread per core, 2.34 s with one, on 2 cores;
    bench/results/default-run-cpu2.md)."""
    import scipy.linalg  # noqa: F401 (loads SciPy's own BLAS, so that the limit covers it)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads):
        yield


def _fail(message: str) -> None:
    """End a job with `message` on one line, in its log and on the process's own stderr
    (`errors.on_console`): Snakemake's console wherever the workflow runs, alone or as a
    module of a host workflow whose profile does not show failed jobs' logs, a cluster
    job's stderr file. Only on the console where the log cannot be written (a full disk);
    never a traceback or Python's "lost sys.stderr"."""
    try:
        print(f"error: {message}", file=sys.stderr, flush=True)
    except OSError:
        sys.stderr = sys.__stderr__
        print(f"error: {message}", file=sys.stderr, flush=True)
    else:
        on_console(f"error: {message}")
    sys.exit(1)


# A job that runs this long (seconds) says on the console that it ended, and how long it took.
LONG_JOB_SECONDS = 10.0


def run_step(
    log_path: str | Path | None,
    step: Callable[[], Any],
    threads: int | None = None,
    job: str | None = None,
    label: str | None = None,
) -> None:
    """Run a step from a Snakemake script with its log file as stderr and logging target,
    and its BLAS and OpenMP pools limited to the job's `threads`.

    Limiting the pools (`limited_threads`) keeps jobs that Snakemake runs side by side
    from each starting a thread per core. What a user can reach (`failure_message`: bad
    input, an unloadable model, a mismatched shard, memory or disk run out, in the step or
    in the imports it makes) ends the job with one line, naming the `job` and what bounds
    its memory where memory ran out, and exit status 1. A step of `LONG_JOB_SECONDS` or
    more ends with a line on the console naming the job (`label`: its rule and wildcards)
    and its time. After the step, the process's objects are frozen out of the garbage
    collector (`gc.freeze`), as the job ends next.
    """
    from contextuality import __version__

    if log_path is not None:
        sys.stderr = open(log_path, "w", buffering=1)  # noqa: SIM115 (kept open for the job)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
    )
    # FAISS's loader tells each library it tries at INFO level, an AVX2 or AVX-512 build
    # it does not ship among them; one build dispatches SIMD at run time, and a reader of
    # the job's log took the line for FAISS without it. Its warnings still show.
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    logging.getLogger(__name__).info("contextuality %s", __version__)
    started = time.monotonic()
    try:
        with limited_threads(threads):
            step()
    except Exception as error:  # noqa: BLE001 (only those failure_message words pass)
        message = failure_message(error, job)
        if message is None:
            raise
        _fail(message)
    elapsed = time.monotonic() - started
    if elapsed >= LONG_JOB_SECONDS:
        from contextuality.jobs.console import duration, say

        say(f"{label or job or 'step'}: done in {duration(elapsed)}")
    # The job's process ends next: leave what it holds out of the garbage collector's passes
    # at interpreter exit: 0.2 s, not 1.0, from an extraction's end to its exit
    # (bench/results/default-run-cpu2.md).
    gc.freeze()


def run_job(snakemake: Any, step: Callable[[], Any]) -> None:
    """`run_step` for a Snakemake script: its `snakemake` object's log (the first, if
    any), threads and rule name."""
    log = snakemake.log[0] if len(snakemake.log) else None
    wildcards = ", ".join(f"{key}={value}" for key, value in snakemake.wildcards.items())
    label = f"{snakemake.rule} ({wildcards})" if wildcards else snakemake.rule
    run_step(log, step, threads=snakemake.threads, job=snakemake.rule, label=label)


def run_command(
    command: Callable[[], Any],
    argv: list[str] | None = None,
    in_own_terms: Callable[[str], str] = str,
) -> int:
    """Run a command line's `command` (which parses `argv` and imports what it needs);
    return its exit status: 0, or 1 with one line ``contextuality: error: ...`` for what a
    user can reach (`failure_message`, naming the command and what bounds its memory where
    memory ran out), in the command line's own terms (`in_own_terms`: its options for the
    config keys a message names)."""
    arguments = sys.argv[1:] if argv is None else argv
    name = next((argument for argument in arguments if not argument.startswith("-")), None)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        command()
    except Exception as error:  # noqa: BLE001 (only those failure_message words pass)
        message = failure_message(error, name and f"contextuality {name}")
        if message is None:
            raise
        print(f"contextuality: error: {in_own_terms(message)}", file=sys.stderr)
        return 1
    return 0
