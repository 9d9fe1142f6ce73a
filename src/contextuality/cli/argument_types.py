"""The command line's argument types. Each refuses a value no command could run with (a
count of 0 or below, a device torch does not know, a file where a directory is written)
as argparse's one line naming the option, exit status 2, before anything is read or
written."""

from __future__ import annotations

import argparse
from pathlib import Path


def positive_int(text: str) -> int:
    """A count of at least 1 (threads, parts, neighbours, a batch's tokens)."""
    return _integer_from(text, 1, "a positive integer")


def nonnegative_int(text: str) -> int:
    """A count or index of at least 0 (a part's number, draws where 0 means none)."""
    return _integer_from(text, 0, "an integer of 0 or more")


def _integer_from(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} is not {what}")
    return value


def device(text: str) -> str:
    """``auto`` or a device string torch parses (``cpu``, ``cuda:N``, ``mps``, ``xpu``,
    ...); whether this machine has it is the command's to check, before it writes."""
    from contextuality.backends.base import torch_device
    from contextuality.errors import ConfigError

    if text != "auto":
        try:
            torch_device(text, "device")
        except ConfigError as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix("device: ")) from None
    return text


def output_directory(text: str) -> str:
    """A directory to write into: one that exists, or can be made (no file on its path)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a directory to write into")
    blocking = _file_on_the_way(path)
    if blocking is not None:
        raise argparse.ArgumentTypeError(f"{text}: {blocking} is a file, not a directory")
    return text


def output_file(text: str) -> str:
    """A file (or a prefix of files) to write: not a directory, none of its folders a file."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file to write")
    blocking = _file_on_the_way(path.parent)
    if blocking is not None:
        raise argparse.ArgumentTypeError(f"{text}: {blocking} is a file, not a directory")
    return text


def study_directory(text: str) -> str:
    """``workflow --init``'s directory: an output directory whose ``config`` is not a file."""
    output_directory(text)
    config = Path(text) / "config"
    if config.exists() and not config.is_dir():
        raise argparse.ArgumentTypeError(f"{config} is a file, where the study's configs go")
    return text


def _file_on_the_way(path: Path) -> Path | None:
    """The first existing folder of `path` (itself, or the nearest parent that exists)
    when it is a file, which no directory can be made under; None when there is none."""
    for folder in (path, *path.parents):
        if folder.exists():
            return None if folder.is_dir() else folder
    return None
