"""The training part of the workflow (config ``training``): the runs, what each run's job
is given, where the checkpoints lie, and the models that are those checkpoints.

A model whose source is ``training:<run>/step_<N>`` is checkpoint N of a run the workflow
trains: `expand_trained_sources` writes its source as the checkpoint's directory, and its
extraction waits for the run's job, which no other model's settings change.
"""

from __future__ import annotations

import re
from typing import Any

from contextuality.backends.settings import spelled_numbers
from contextuality.errors import ConfigError

TRAINING = "results/training"
# A model's source naming a checkpoint, as written in a config and as planned.
TRAINED_SOURCE = re.compile(r"^training:(?P<run>[A-Za-z0-9][A-Za-z0-9_.-]*)/step_(?P<step>\d+)$")
PLANNED_SOURCE = re.compile(rf"^\./{TRAINING}/(?P<run>[^/]+)/checkpoints/step_(?P<step>\d+)$")
# Each run's files besides its checkpoints, by kind: its loss curve and its probes.
RUN_FILES = ("losses", "probes")
# The settings every run shares (config ``training``), besides its own and the steps.
SHARED_SETTINGS = (
    "evaluation_steps",
    "held_out_blocks",
    "layers",
    "hidden_size",
    "heads",
    "intermediate_size",
    "vocab_size",
    "block",
    "batch_size",
    "learning_rate",
)


def checkpoints_directory(run: str) -> str:
    """Where run `run` saves its checkpoints, one ``step_<N>`` directory each."""
    return f"{TRAINING}/{run}/checkpoints"


def expand_trained_sources(config: dict[str, Any]) -> None:
    """Write each model source ``training:<run>/step_<N>`` as the checkpoint's directory,
    in place, its ``layers`` every hidden state (0 to training.layers) where not listed,
    and training.probes.steps as a list where spelled as a string; a ConfigError for a run
    that training.runs lacks, a step it does not save, a layer beyond its blocks, or
    probe steps that are no list."""
    training = config.get("training") or {}
    runs, steps = training.get("runs") or {}, training.get("steps") or []
    depth = training.get("layers")
    probes = training.get("probes") or {}
    if isinstance(probes.get("steps"), str):
        key = "training.probes.steps"
        probes["steps"] = list(spelled_numbers(key, probes["steps"], "steps"))
    problems = []
    for name, section in (config.get("models") or {}).items():
        named = TRAINED_SOURCE.match(str(section.get("source") or ""))
        if not named:
            continue
        run, step = named["run"], int(named["step"])
        if run not in runs:
            problems.append(
                f"models.{name}.source: no training run named '{run}' under training.runs "
                f"(configured: {', '.join(runs) or 'none'})"
            )
            continue
        if step not in steps:
            problems.append(
                f"models.{name}.source: training saves no step {step} "
                f"(training.steps: {', '.join(map(str, sorted(steps)))})"
            )
            continue
        layers = section.get("layers")
        if layers is None:
            section["layers"] = list(range(depth + 1))
        elif isinstance(layers, list) and any(layer > depth for layer in layers):
            problems.append(
                f"models.{name}.layers: beyond the trained model's hidden states 0..{depth} "
                "(training.layers)"
            )
        section["source"] = f"./{checkpoints_directory(run)}/step_{step}"
    if problems:
        raise ConfigError("invalid config:\n  " + "\n  ".join(problems))


def trained_run(section: dict[str, Any]) -> str | None:
    """The run a planned model section is a checkpoint of, else None."""
    planned = PLANNED_SOURCE.match(str(section.get("source") or ""))
    return planned["run"] if planned else None


def training_runs(config: dict[str, Any]) -> list[str]:
    """The runs trained, in config order."""
    return list((config.get("training") or {}).get("runs") or {})


def run_settings(config: dict[str, Any], run: str) -> dict[str, Any]:
    """What run `run`'s job is given: its own settings, the steps saved and the settings
    every run shares (the config with the schema's defaults filled in); another run's
    settings do not change it."""
    training = config["training"]
    return {
        "run": dict(training["runs"][run]),
        "steps": sorted(training["steps"]),
        "shared": {key: training[key] for key in SHARED_SETTINGS},
        "probes": {**training["probes"], "seed": config["measures"]["seed"]},
    }


def run_files(config: dict[str, Any], kind: str) -> list[str]:
    """Each run's file of `kind` (one of `RUN_FILES`): ``results/training/<run>/<kind>.parquet``."""
    return [f"{TRAINING}/{run}/{kind}.parquet" for run in training_runs(config)]


def probed_architectures(config: dict[str, Any]) -> list[str]:
    """The architectures of the runs whose early steps are probed, in config order: none
    where training.probes.steps is empty."""
    training = config.get("training") or {}
    if not (training.get("probes") or {}).get("steps"):
        return []
    return list(dict.fromkeys(run["architecture"] for run in training["runs"].values()))


def probe_figures(config: dict[str, Any]) -> list[str]:
    """Each probed architecture's figure, png then pdf:
    ``results/figures/training_probes/<architecture>.<png|pdf>``."""
    return [
        f"results/figures/training_probes/{architecture}.{extension}"
        for architecture in probed_architectures(config)
        for extension in ("png", "pdf")
    ]


def training_outputs(config: dict[str, Any]) -> list[str]:
    """Every run's loss curves as a table and a figure (png and pdf), and where the early
    steps are probed their tables and a figure per architecture; none without runs."""
    if not training_runs(config):
        return []
    probed = probed_architectures(config)
    return [
        "results/tables/training_losses.tsv",
        "results/figures/training_losses.png",
        "results/figures/training_losses.pdf",
        *(
            ["results/tables/training_probes.tsv", "results/tables/training_probe_events.tsv"]
            if probed
            else []
        ),
        *probe_figures(config),
    ]


def trained_model_inputs(config: dict[str, Any], model: str) -> dict[str, str]:
    """The checkpoints directory model `model` is read from, as a rule's input (the run's
    job makes it); none for a model the workflow does not train."""
    run = trained_run((config.get("models") or {}).get(model) or {})
    return {"trained": checkpoints_directory(run)} if run else {}
