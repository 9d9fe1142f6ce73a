"""Measure how contextual contextualized word representations are (Ethayarajh, 2019)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("contextuality")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
