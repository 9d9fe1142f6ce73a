"""Errors that carry a message meant for the user, not a traceback."""


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


class DeviceMemoryError(ContextualityError):
    """A single model input does not fit in the device's memory, even alone."""


class StorageError(ContextualityError):
    """The disk cannot hold an output: the message gives the bytes needed and free."""
