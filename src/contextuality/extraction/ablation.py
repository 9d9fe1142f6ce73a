"""Sun et al.'s intervention in the forward pass. The ``ablation`` setting (its record
`backends.base.Ablation`): at the output of one block, the massive activations or each
sequence's first-token state set to zero or to their mean, before the next block reads
them, so that every later layer is what the model computes without them.

A forward hook on the block (`AblationHook`) replaces the targets; a pre-hook on the model
gives it each batch's attention mask, so that padding neither counts in a sequence's median
nor is replaced. ``mean`` needs the targets' mean first: `calibrate` runs the corpus's
first ``calibration_sentences`` sentences up to the block, the hook recording instead of
replacing, and fixes the mean it then writes (per dimension for ``massive``: a dimension
the calibration never saw massive is set to zero, and counted).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextuality.backends.base import LoadedModel, token_budget
from contextuality.backends.settings import Ablation
from contextuality.errors import ConfigError, warn
from contextuality.extraction.forward import forward_dtype, layer_states, pad_batch, plan_batches
from contextuality.extraction.units import SentenceUnits

# The two thresholds of a massive activation (Sun et al. 2024), as the measures use them.
MASSIVE_MAGNITUDE = 100.0
MASSIVE_RATIO = 1000.0


def massive_mask(hidden: Any, attention: Any) -> Any:
    """Which elements of `hidden` (batch, tokens, d) are massive: |a| above 100 and above
    1,000 times the median |a| of their sequence's real tokens (`attention` (batch, tokens),
    1 for a real token); padding never is."""
    import torch

    real = attention.bool()[..., None]
    magnitude = hidden.float().abs()
    masked = torch.where(real, magnitude, torch.full_like(magnitude, float("nan")))
    median = masked.flatten(1).nanmedian(dim=1).values
    threshold = torch.clamp(MASSIVE_RATIO * median, min=MASSIVE_MAGNITUDE)
    return (magnitude > threshold[:, None, None]) & real


def first_token_mask(hidden: Any, attention: Any) -> Any:
    """Every element of each sequence's first token's state (batch, tokens, d)."""
    import torch

    mask = torch.zeros(hidden.shape, dtype=torch.bool, device=hidden.device)
    mask[:, 0, :] = attention[:, 0].bool()[:, None]
    return mask


@dataclass
class AblationHook:
    """The hook on the ablated block's output. While `recording`, it sums the targets by
    dimension and changes nothing; otherwise it sets them to `replacement` (d,)."""

    ablation: Ablation
    attention: Any = None
    recording: bool = False
    sums: Any = None
    counts: Any = None
    replacement: Any = None
    calibration: dict[str, Any] = field(default_factory=dict)
    replaced: int = 0
    replaced_without_mean: int = 0

    def targets(self, hidden: Any) -> Any:
        if self.ablation.target == "massive":
            return massive_mask(hidden, self.attention)
        return first_token_mask(hidden, self.attention)

    def __call__(self, module: Any, inputs: Any, output: Any) -> Any:
        import torch

        hidden = output[0] if isinstance(output, tuple) else output
        chosen = self.targets(hidden)
        if self.recording:
            values = torch.where(
                chosen, hidden.float(), torch.zeros_like(hidden, dtype=torch.float)
            )
            sums, counts = values.sum(dim=(0, 1)).double(), chosen.sum(dim=(0, 1)).double()
            self.sums = sums if self.sums is None else self.sums + sums
            self.counts = counts if self.counts is None else self.counts + counts
            return None
        replacement = self.replacement.to(hidden.device, hidden.dtype)
        self.replaced += int(chosen.sum())
        if self.ablation.value == "mean" and self.counts is not None:
            unseen = (self.counts == 0).to(hidden.device)
            self.replaced_without_mean += int((chosen & unseen).sum())
        # In place, as Sun et al. do: whatever holds the block's output (the model's record
        # of its hidden states among them) sees the change, and so does the next block.
        hidden.copy_(torch.where(chosen, replacement.expand_as(hidden), hidden))
        return None


def _block(loaded: LoadedModel, block: int) -> Any:
    """The module whose output is hidden state `block` (1-based over the blocks)."""
    if loaded.blocks is None:
        raise ConfigError(
            f"model {loaded.spec.name}: ablation needs the model's list of blocks, which this "
            "architecture does not expose"
        )
    if not 1 <= block <= loaded.n_layers:
        raise ConfigError(
            f"model {loaded.spec.name}: ablation.block {block} is outside its blocks "
            f"1 to {loaded.n_layers}"
        )
    holder, name = loaded.blocks
    return getattr(holder, name)[block - 1]


@contextlib.contextmanager
def hooked(loaded: LoadedModel, *hooks: AblationHook) -> Iterator[None]:
    """Each of `hooks` on its ablated block, all fed each batch's attention mask, while
    inside."""

    def remember_mask(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        for hook in hooks:
            hook.attention = kwargs["attention_mask"]

    handles = [loaded.model.register_forward_pre_hook(remember_mask, with_kwargs=True)]
    handles += [_block(loaded, hook.ablation.block).register_forward_hook(hook) for hook in hooks]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def calibrate(loaded: LoadedModel, inputs: list[Any], budget: int, dtype: str) -> AblationHook:
    """The hook of `loaded`'s ablation, its replacement fixed (`calibrate_all`)."""
    return calibrate_all(loaded, [loaded.spec.ablation], inputs, budget, dtype)[0]


def calibrate_all(
    loaded: LoadedModel, ablations: list[Ablation], inputs: list[Any], budget: int, dtype: str
) -> list[AblationHook]:
    """A hook for each of `ablations` (of one value), its replacement fixed: zeros, or the
    mean of the targets at its block over `inputs` (encoded sentences, run once without
    any ablation up to the last block needed, in batches of at most `budget` padded
    tokens, autocast to `dtype`), recorded with how many targets and sentences it came
    from (``calibration``)."""
    import torch

    if len({ablation.value for ablation in ablations}) != 1:
        raise ValueError("calibrate_all takes ablations of one value")
    hooks = [AblationHook(ablation) for ablation in ablations]
    width = loaded.hidden_size
    if all(ablation.value == "zero" for ablation in ablations):
        for hook in hooks:
            hook.replacement = torch.zeros(width)
            hook.calibration = {"value": "zero"}
        return hooks
    for hook in hooks:
        hook.recording = True
    lengths = np.array([len(sentence.input_ids) for sentence in inputs])
    last = max(ablation.block for ablation in ablations)
    with hooked(loaded, *hooks):
        for batch in plan_batches(lengths, budget):
            input_ids, attention = pad_batch(
                [inputs[i] for i in batch], loaded.encoder.pad_token_id
            )
            layer_states(loaded, input_ids, attention, (last,), dtype)
    for hook in hooks:
        _fix_mean(hook, width, len(inputs))
    return hooks


def _fix_mean(hook: AblationHook, width: int, n_sentences: int) -> None:
    """End `hook`'s recording: its replacement the mean of what it recorded by dimension
    (0 where it saw no target), and its ``calibration`` record."""
    import torch

    hook.recording = False
    sums = hook.sums if hook.sums is not None else torch.zeros(width, dtype=torch.float64)
    counts = hook.counts if hook.counts is not None else torch.zeros(width, dtype=torch.float64)
    means = torch.where(counts > 0, sums / counts.clamp(min=1), torch.zeros_like(sums))
    hook.replacement = means.float().cpu()
    seen = counts.cpu().numpy()
    hook.calibration = {
        "value": "mean",
        "sentences": n_sentences,
        "targets": int(seen.sum()),
        "dimensions_seen": [int(d) for d in np.flatnonzero(seen)][:64],
        "mean_norm": float(torch.linalg.vector_norm(means).item()),
    }


@dataclass
class AblationRun:
    """An ablation in place during an extraction of `model`: what meta.json keeps of it
    (`record`: the calibration, and after the run how many targets were replaced) and its
    hook."""

    model: str
    record: dict[str, Any]
    hook: AblationHook

    def check_replaced(self) -> None:
        """Refuse (ConfigError) an extraction in which the ablation replaced nothing: its
        model would be the one without it, and a reader would conclude the ablation
        changes nothing. Called before the extraction's outputs are committed."""
        if not self.hook.replaced:
            ablation = self.hook.ablation
            raise ConfigError(
                f"models.{self.model}.ablation: no {ablation.target} activation at "
                f"block {ablation.block} in any sentence, so nothing was ablated and the "
                "model is the one without the ablation; choose another block or target"
            )


def check_block_extracted(loaded: LoadedModel, layers: list[int]) -> None:
    """Refuse (ConfigError) an ablation of a block after the last of `layers` extracted:
    no layer extracted would change (`ModelSettings.check_effective` refuses it from a config's
    layers; this, from the layers a spec made without a config resolves to). A block past
    the model's last is `calibrate`'s to refuse."""
    ablation = loaded.spec.ablation
    if ablation is not None and max(layers) < ablation.block <= loaded.n_layers:
        raise ConfigError(
            f"models.{loaded.spec.name}.ablation.block: {ablation.block}, after the last "
            f"layer extracted ({max(layers)}), so no layer would change"
        )


@contextlib.contextmanager
def ablated(loaded: LoadedModel, units: SentenceUnits) -> Iterator[AblationRun | None]:
    """`loaded` with its ablation in place while inside (as it is without one), calibrated
    on the first ``calibration_sentences`` sentences of `units`; yields the `AblationRun`,
    whose record is filled in when the block exits, and warns where some targets had no
    calibrated mean."""
    ablation = loaded.spec.ablation
    if ablation is None:
        yield None
        return
    device = next(loaded.model.parameters()).device
    count = min(ablation.calibration_sentences, len(units.counts))
    inputs = units.encode(0, count) if ablation.value == "mean" else []
    hook = calibrate(
        loaded, inputs, token_budget(loaded.spec, device.type), forward_dtype(device, loaded.spec)
    )
    run = AblationRun(loaded.spec.name, {"block": ablation.block, "target": ablation.target}, hook)
    with hooked(loaded, hook):
        yield run
    run.record |= hook.calibration | {
        "replaced": hook.replaced,
        "replaced_without_mean": hook.replaced_without_mean,
    }
    if hook.replaced_without_mean:
        warn(
            [
                f"{loaded.spec.name}: {hook.replaced_without_mean:,} of {hook.replaced:,} "
                f"ablated activations at block {ablation.block} are in dimensions the "
                f"{count} calibration sentences had none in, and were set to 0 (raise "
                "ablation.calibration_sentences)"
            ]
        )
