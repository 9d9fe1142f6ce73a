"""Checkpoint sweeps: a model section with ``sweep`` becomes one model per training step.

``models.<name>.sweep: {steps: [0, 1000, ...], revision: "step{step}"}`` (hub revisions,
as Pythia and OLMo publish them) or ``{steps: [...], source: "ckpt/step_{step}"}`` (local
checkpoints) plans model ``<name>.step<N>`` for each step N, its section the model's with
the template filled in: each checkpoint is a model of the DAG, so adding a step runs only
that checkpoint's jobs, and its provenance records the resolved commit or the checksums
of its files like any model's.
"""

from __future__ import annotations

import re
import string
from typing import Any

from contextuality.errors import ConfigError

# A member of a sweep: <base>.step<N>.
MEMBER = re.compile(r"^(?P<base>.+)\.step(?P<step>\d+)$")
TEMPLATED = ("source", "revision")


def _templates(name: str, sweep: dict[str, Any]) -> dict[str, str]:
    """The templated settings of `name`'s sweep (its shape is the schema's, which
    `config.check_config` checks), or ConfigError for a template that names a field other
    than ``{step}``, which no format spec can fill."""
    templates = {key: sweep[key] for key in TEMPLATED if key in sweep}
    for key, template in templates.items():
        try:
            fields = [field for _, field, _, _ in string.Formatter().parse(template) if field]
        except ValueError as error:
            fields = [f"({error})"]
        if not fields or set(fields) != {"step"}:
            raise ConfigError(
                f"models.{name}.sweep.{key}: a template may name {{step}} alone, got {template!r}"
            )
    return templates


def expand_sweeps(config: dict[str, Any]) -> None:
    """Replace each model section with a ``sweep`` by its checkpoints' sections, in place,
    in config order (`MEMBER` names them); a checkpoint named like a model of the config
    is a ConfigError, as is a template naming another field than ``{step}``."""
    models = config.get("models")
    if not isinstance(models, dict):
        return
    swept = {
        name for name, section in models.items() if isinstance(section, dict) and "sweep" in section
    }
    expanded: dict[str, Any] = {}
    for name, section in models.items():
        if name not in swept:
            expanded[name] = section
            continue
        templates = _templates(name, section["sweep"])
        for step in sorted(section["sweep"]["steps"]):
            member = f"{name}.step{step}"
            if member in models:
                raise ConfigError(
                    f"models.{member}: also a checkpoint of models.{name}.sweep; rename one"
                )
            settings = {key: value for key, value in section.items() if key != "sweep"}
            settings.update({key: value.format(step=step) for key, value in templates.items()})
            expanded[member] = settings
    config["models"] = expanded


def sweeps(config: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Each sweep's checkpoints: base name → {model: step}, in step order; only sweeps of
    two or more checkpoints."""
    found: dict[str, dict[str, int]] = {}
    for model in config.get("models") or {}:
        member = MEMBER.match(model)
        if member:
            found.setdefault(member["base"], {})[model] = int(member["step"])
    return {
        base: dict(sorted(members.items(), key=lambda item: item[1]))
        for base, members in found.items()
        if len(members) > 1
    }
