"""The options of the commands that run a model: the model and every setting of its config
section (``models.<name>``), so that a workflow's model runs the same outside Snakemake."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from contextuality import backends
from contextuality.backends.settings import ModelSettings, model_choices
from contextuality.cli.argument_types import (
    device,
    nonnegative_int,
    output_directory,
    positive_int,
)
from contextuality.cli.option_terms import MODEL_OPTION_HELP

# The type of each setting's option but text and the layers (`layer_list`): the model's
# other integers (max_length, token_budget, segment_words) are counts of at least 1.
_OPTION_TYPES = {
    "ablation": json.loads,
    "device": device,
    "window_overlap": nonnegative_int,
    "random_weights_seed": nonnegative_int,
    "parity_sentences": nonnegative_int,  # 0: no check
}


def add_model_arguments(command: argparse.ArgumentParser) -> None:
    """The options of 'extract' and 'stream': the model and every setting of its config
    section (`add_model_setting_arguments`), the corpus and index, the output."""
    add_model_setting_arguments(command)
    command.add_argument("--sentences", required=True, help="sentences.parquet from 'sentences'")
    command.add_argument("--index", required=True, help="directory written by 'occurrence-index'")
    command.add_argument(
        "-o", "--output", type=output_directory, required=True, help="directory to write into"
    )


def add_model_setting_arguments(command: argparse.ArgumentParser) -> None:
    """The model, every setting of its config section (`MODEL_OPTION_HELP`) and the CPU
    threads it runs on: the options of every command that runs a model."""
    command.add_argument("model", help="hub id, local directory or package:<module>/<dir>")
    command.add_argument("--name", help="name recorded in the outputs (default: MODEL's last part)")
    for setting, help_text in MODEL_OPTION_HELP.items():
        option = "--" + setting.replace("_", "-")
        field = ModelSettings.__dataclass_fields__[setting]
        default = field.default  # the schema's (`settings.model_default`)
        if isinstance(default, bool):
            command.add_argument(option, action="store_true", help=help_text)
            continue
        shown = f" (default: {default})" if default is not None else ""
        if setting == "layers":
            option_type = layer_list
        elif setting in _OPTION_TYPES:
            option_type = _OPTION_TYPES[setting]
        else:  # by the annotation, as text
            option_type = positive_int if "int" in str(field.type) else str
        command.add_argument(
            option,
            type=option_type,
            choices=model_choices(setting),
            help=help_text + ("" if "default:" in help_text else shown),
        )
    command.add_argument(
        "--threads",
        type=positive_int,
        default=usable_cpus(),
        help=f"CPU threads for the model (default: the CPUs this process may use, {usable_cpus()})",
    )


def layer_list(text: str) -> tuple[int, ...]:
    """``--layers``: one argument, a comma list of layer numbers (``0,3,6``), so that the
    model named after it is never read as a layer."""
    try:
        layers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma list of layer numbers, such as 0,3,6"
        ) from None
    if min(layers) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: layer numbers start at 0")
    return layers


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one): what a
    workflow extraction job gets with ``--cores`` all of them, and what the forward pass
    uses best (2 threads are 9 % faster than 1 on 2 cores)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def model_section(args: argparse.Namespace) -> dict[str, Any]:
    """The config section (``models.<name>``) the options of 'extract' and 'stream' give:
    the source and every setting given (`MODEL_OPTION_HELP`)."""
    section = {"source": args.model}
    for setting in MODEL_OPTION_HELP:
        value = getattr(args, setting)
        if value is not None and value is not False:
            section[setting] = value
    return section


def model_options(args: argparse.Namespace) -> ModelSettings:
    """The model the options of 'extract' and 'stream' give (`model_section`), named by
    ``--name`` (else MODEL's last part), checked as a config's model is."""
    return backends.model_settings(args.name or Path(args.model).name, model_section(args))
