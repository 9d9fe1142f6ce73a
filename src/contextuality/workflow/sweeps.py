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
from typing import Any

from contextuality.errors import ConfigError

# A member of a sweep: <base>.step<N>.
MEMBER = re.compile(r"^(?P<base>.+)\.step(?P<step>\d+)$")
TEMPLATED = ("source", "revision")


def _checked(name: str, sweep: Any) -> tuple[list[int], dict[str, str]]:
    """The steps and the templated settings of `name`'s sweep, or ConfigError naming what
    is wrong."""
    where = f"models.{name}.sweep"
    if not isinstance(sweep, dict) or set(sweep) - {"steps", *TEMPLATED}:
        raise ConfigError(f"{where}: a mapping of steps and a source or revision template")
    steps = sweep.get("steps")
    if (
        not isinstance(steps, list)
        or not steps
        or not all(isinstance(step, int) and not isinstance(step, bool) for step in steps)
        or min(steps) < 0
        or len(set(steps)) != len(steps)
    ):
        raise ConfigError(f"{where}.steps: a list of distinct training steps (integers ≥ 0)")
    templates = {key: sweep[key] for key in TEMPLATED if key in sweep}
    if not templates or not all(
        isinstance(value, str) and "{step}" in value for value in templates.values()
    ):
        raise ConfigError(f"{where}: source or revision must be a template naming {{step}}")
    return sorted(steps), templates


def expand_sweeps(config: dict[str, Any]) -> None:
    """Replace each model section with a ``sweep`` by its checkpoints' sections, in place,
    in config order (`MEMBER` names them)."""
    models = config.get("models")
    if not isinstance(models, dict):
        return
    expanded: dict[str, Any] = {}
    for name, section in models.items():
        if not isinstance(section, dict) or "sweep" not in section:
            expanded[name] = section
            continue
        steps, templates = _checked(name, section["sweep"])
        for step in steps:
            member = {key: value for key, value in section.items() if key != "sweep"}
            member.update({key: value.format(step=step) for key, value in templates.items()})
            expanded[f"{name}.step{step}"] = member
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
