"""A study's devices against what it will run on, while the workflow plans, before any
job removes an output: a device asked for that this machine or torch build lacks. The
study's corpus files are checked against its config by `workflow.study_files`.
"""

from __future__ import annotations

from typing import Any

from contextuality.backends.base import resolved_device
from contextuality.configuration.schema import setting

# The devices every machine has: ``auto`` (a GPU where torch sees one, else the CPU) and
# the CPU.
ALWAYS_THERE = ("auto", "cpu")


def check_devices(config: dict[str, Any]) -> None:
    """Refuse (ConfigError naming the key) a device asked for (``models.<name>.device``,
    ``geometry.alignment.device``: ``cuda:N``, ``mps``, ``xpu``, any kind torch knows)
    that torch does not see here (`backends.base.resolved_device`): none, too few, or a
    torch built without it. Only for a run whose jobs run here: a cluster's jobs run on
    other nodes, and each checks its own device as it starts. ``auto`` and ``cpu`` are
    always there: a plan that asks only for them does not load torch (seconds of every
    ``snakemake`` call)."""
    asked = {
        f"models.{name}.device": section["device"] for name, section in config["models"].items()
    }
    asked["geometry.alignment.device"] = setting(config, "geometry", "alignment", "device")
    for key, device in asked.items():
        if str(device) not in ALWAYS_THERE:
            resolved_device(str(device), key)
