"""Errors that carry a message meant for the user, not a traceback, and the checks of a
setting that raise them naming the setting; warnings that reach the console."""

import logging
import sys

log = logging.getLogger(__name__)


class ContextualityError(Exception):
    """Base class: bad input, bad config or a refused operation, explained in words."""


class ConfigError(ContextualityError, ValueError):
    """A setting the data or the model refuses (layers out of range, a window too short);
    the message names the setting."""


class InputDataError(ContextualityError):
    """An input file is missing, empty or malformed; the message names the file and line."""


class ModelLoadError(ContextualityError):
    """A model or tokenizer cannot be loaded (offline, bad id, unsupported loader)."""


class ShardMismatchError(ContextualityError):
    """An embedding shard disagrees with the occurrence index, model or settings it must match."""


class NumericOverflowError(ContextualityError):
    """Values do not fit the storage dtype."""


class NonFiniteValueError(ContextualityError):
    """A model produced ±inf or NaN vectors (e.g. a forward pass that overflowed its dtype)."""


class BatchParityError(ContextualityError):
    """A model's vectors differ between its padded batches and the same inputs run alone."""


class DeviceMemoryError(ContextualityError):
    """A single model input does not fit in the device's memory, even alone."""


class StorageError(ContextualityError):
    """The disk cannot hold an output: the message gives the bytes needed and free."""


def one_line(error: BaseException) -> str:
    """An error's message on one line (HDF5's and Arrow's messages span several)."""
    return " ".join(str(error).split())


def check_integer(section: str, name: str, value: object, minimum: int | None = None) -> None:
    """Refuse (ConfigError naming ``section.name``) a value that is not an integer of at
    least `minimum` (a bool is not an integer here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{section}.{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{section}.{name} must be at least {minimum}, got {value}")


def check_number(
    section: str,
    name: str,
    value: object,
    low: float,
    high: float,
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    """Refuse (ConfigError naming ``section.name``) a value that is not a number within
    [low, high], an end excluded where `open_low` or `open_high` says so."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{section}.{name} must be a number, got {value!r}")
    below = value <= low if open_low else value < low
    above = value >= high if open_high else value > high
    if below or above or value != value:  # NaN is within no bounds
        bounds = f"{'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"
        raise ConfigError(f"{section}.{name} must be in {bounds}, got {value}")


def warn(messages: list[str]) -> None:
    """Log each message as a warning and, where stderr is a workflow job's log file
    (`process.run_step`), also print it on the console (the process's own stderr), which
    Snakemake shows: a dropped word must not hide in a log file."""
    for message in messages:
        log.warning(message)
        on_console(f"WARNING: {message}")


def on_console(line: str) -> None:
    """Print `line` on the process's own stderr where stderr is a workflow job's log file
    (`process.run_step`), which Snakemake shows; elsewhere stderr is the console already."""
    if sys.stderr is not sys.__stderr__ and sys.__stderr__ is not None:
        print(line, file=sys.__stderr__, flush=True)
