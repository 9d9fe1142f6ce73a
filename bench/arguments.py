"""The benches' argument types (imported by the scripts beside it): each refuses a value
a bench could not run with as argparse's one line naming the option, exit status 2,
before any model loads or any file is written: a count of 0 or below, a config that is
missing or not YAML, a file where a directory is wanted, a device torch does not have."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from contextuality.backends.base import resolved_device
from contextuality.cli import argument_types
from contextuality.errors import ConfigError

positive_int = argument_types.positive_int
nonnegative_int = argument_types.nonnegative_int


def output_directory(text: str) -> Path:
    """A directory results are written into: one that exists or can be made."""
    return Path(argument_types.output_directory(text))


def input_directory(text: str) -> Path:
    """A directory a bench reads (the STS mirror, a data root), which must exist."""
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such directory")
    return Path(text)


def input_file(text: str) -> Path:
    """A file a bench reads (a shard), which must exist."""
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    return Path(text)


def config_file(text: str) -> Path:
    """A workflow config: a file of UTF-8 YAML holding a mapping (read again by the bench)."""
    read_config(input_file(text))
    return Path(text)


def read_config(path: Path) -> dict:
    """The mapping the YAML file at `path` holds; anything else is an ArgumentTypeError."""
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        raise argparse.ArgumentTypeError(f"{path}: not a YAML config") from None
    if not isinstance(config, dict):
        raise argparse.ArgumentTypeError(f"{path}: not a YAML config (no mapping of settings)")
    return config


def configured_models(path: Path) -> dict:
    """The ``models`` mapping of the config at `path` (checked by `config_file`); a
    ConfigError where it has none."""
    models = read_config(path).get("models")
    if not isinstance(models, dict) or not models:
        raise ConfigError("no models configured")
    return models


def device(text: str) -> str:
    """``auto``, or a device torch knows and sees here (``cpu``, ``cuda:N``, ``mps``, ...)."""
    try:
        return resolved_device(text, "device")
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("device: ")) from None
