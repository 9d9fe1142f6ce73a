"""Measure how contextual contextualized word representations are (Ethayarajh, 2019).

The functions researchers call on their own arrays (`contextuality.api`) are importable
from here; they load on first use, so that importing a submodule stays light.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("contextuality")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

_API = ("alignment", "intrinsic_dimension", "measure_layer", "word_rows")

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    """`contextuality.measure_layer` and the other functions of `contextuality.api`."""
    if name in _API:
        return getattr(import_module("contextuality.api"), name)
    raise AttributeError(f"module 'contextuality' has no attribute {name!r}")
