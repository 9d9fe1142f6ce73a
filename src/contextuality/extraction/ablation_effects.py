"""What an ablation of the massive activations does to the model (Sun et al. 2024,
"Massive Activations in Large Language Models", §3–4): its loss on held-out sentences,
and where its attention goes.

Five conditions (`CONDITIONS`): no intervention; the massive activations (`ablation`'s
``massive`` target) set to zero, or to their mean, at the output of one block (Sun et
al.'s: the block where they appear); and the same at the output of every block. The means
are calibrated on the first `calibration_sentences` sentences, run once without any
intervention; the loss and the attention are measured on the sentences after them.

Loss: the mean cross-entropy of each next token given the ones before it (nats per
predicted token; a sentence's first token is not predicted); perplexity is its
exponential. Its interval is a percentile bootstrap over sentences, the same draws for
every condition, so that the ratio of a condition's perplexity to the unablated one has
its own paired interval.

Attention, per block and head: the share of each query's attention on the sentence's
first token, on the tokens that carry a massive activation at the detection block in the
unablated pass (the same positions under every condition), and on those of them after the
first token; averaged over every query but the first (which can attend only to itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contextuality.backends.base import LoadedModel
from contextuality.backends.settings import Ablation
from contextuality.extraction.ablation import AblationHook, calibrate_all, hooked, massive_mask
from contextuality.extraction.forward import forward_dtype, pad_batch, plan_batches, precision
from contextuality.extraction.units import EncodedSentence, subword_inputs
from contextuality.jobs.console import Progress, say

# Logits held at once in a batch: the token budget is this over the vocabulary's size.
LOGIT_BUDGET = 200_000_000
ATTENTION_SHARES = ("first_token_share", "massive_share", "massive_after_first_share")
NOT_RETURNED = "not returned by this model's attention implementation"


@dataclass(frozen=True)
class Condition:
    """An intervention: `value` (zero, mean; None for none) at the detection block or at
    every block (`where`)."""

    name: str
    value: str | None = None
    where: str = "block"


CONDITIONS = (
    Condition("none"),
    Condition("zero at block", "zero"),
    Condition("mean at block", "mean"),
    Condition("zero at every block", "zero", "every block"),
    Condition("mean at every block", "mean", "every block"),
)


@dataclass
class PassTotals:
    """One pass over the sentences: each sentence's summed loss (nats) and predicted
    tokens; the attention shares summed over queries, (3, blocks, heads), in the order of
    `ATTENTION_SHARES` (None where the model returned no weights); the queries counted."""

    loss: np.ndarray
    tokens: np.ndarray
    attention: np.ndarray | None = None
    queries: int = 0


def _budget(loaded: LoadedModel) -> int:
    vocabulary = loaded.model.get_output_embeddings().weight.shape[0]
    return max(64, LOGIT_BUDGET // vocabulary)


def _attention_sums(attentions: Any, keys: Any, queries: Any) -> Any:
    """(3, blocks, heads) sums over `queries` (batch, tokens) of the attention on the first
    token, on the `keys` (batch, tokens) and on those keys after the first."""
    import torch

    later = keys.clone()
    later[:, 0] = False
    sums = []
    for weights in attentions:
        weights = weights.float() * queries[:, None, :, None]
        sums.append(
            torch.stack(
                [
                    weights[..., 0].sum(dim=(0, 2)),
                    (weights * keys[:, None, None, :]).sum(dim=(0, 2, 3)),
                    (weights * later[:, None, None, :]).sum(dim=(0, 2, 3)),
                ]
            )
        )
    return torch.stack(sums, dim=1)


def _run_pass(
    loaded: LoadedModel,
    inputs: list[EncodedSentence],
    massive_keys: list[np.ndarray],
    what: str,
) -> PassTotals:
    """Loss and attention shares of `loaded` (with whatever hooks are on it) over `inputs`,
    the keys carrying massive activations given per sentence (`massive_keys`)."""
    import torch

    device = next(loaded.model.parameters()).device
    dtype = forward_dtype(device, loaded.spec)
    totals = PassTotals(np.zeros(len(inputs)), np.zeros(len(inputs), dtype=np.int64))
    lengths = np.array([len(sentence.input_ids) for sentence in inputs])
    progress = Progress(what, len(inputs), "sentences")
    for batch in plan_batches(lengths, _budget(loaded)):
        ids, mask = pad_batch([inputs[i] for i in batch], loaded.encoder.pad_token_id)
        keys = np.zeros(mask.shape, dtype=bool)
        for row, sentence in enumerate(batch):
            keys[row, : len(massive_keys[sentence])] = massive_keys[sentence]
        input_ids, attention = torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)
        with torch.inference_mode(), precision(loaded, device, dtype):
            output = loaded.model(
                input_ids=input_ids, attention_mask=attention, output_attentions=True
            )
            losses = torch.nn.functional.cross_entropy(
                output.logits[:, :-1].float().transpose(1, 2), input_ids[:, 1:], reduction="none"
            )
            predicted = (attention[:, 1:] * attention[:, :-1]).float()
            totals.loss[batch] = (losses * predicted).sum(dim=1).double().cpu().numpy()
            totals.tokens[batch] = predicted.sum(dim=1).long().cpu().numpy()
            weights = output.attentions
            if weights and all(layer is not None for layer in weights):
                queries = attention.float().clone()
                queries[:, 0] = 0
                sums = _attention_sums(weights, torch.from_numpy(keys).to(device), queries)
                sums = sums.double().cpu().numpy()
                totals.attention = sums if totals.attention is None else totals.attention + sums
                totals.queries += int(queries.sum())
        progress.update(len(batch))
    progress.finish()
    return totals


def _massive_by_block(
    loaded: LoadedModel, inputs: list[EncodedSentence]
) -> Iterator[tuple[np.ndarray, np.ndarray, list[np.ndarray]]]:
    """Per batch of `inputs` run without intervention: the sentences' positions, their
    lengths and, for every hidden state 0..L, which tokens (batch, tokens) carry a massive
    activation (`ablation.massive_mask`)."""
    import torch

    device = next(loaded.model.parameters()).device
    dtype = forward_dtype(device, loaded.spec)
    lengths = np.array([len(sentence.input_ids) for sentence in inputs])
    for batch in plan_batches(lengths, _budget(loaded)):
        ids, mask = pad_batch([inputs[i] for i in batch], loaded.encoder.pad_token_id)
        attention = torch.from_numpy(mask).to(device)
        # The model without its language-modelling head: the hidden states are all this
        # pass needs, and the head's logits (a row per vocabulary entry) are most of its cost.
        with torch.inference_mode(), precision(loaded, device, dtype):
            output = loaded.model.base_model(
                input_ids=torch.from_numpy(ids).to(device),
                attention_mask=attention,
                output_hidden_states=True,
            )
        yield (
            batch,
            lengths[batch],
            [
                massive_mask(state, attention).any(dim=-1).cpu().numpy()
                for state in output.hidden_states
            ],
        )


def massive_positions(
    loaded: LoadedModel, inputs: list[EncodedSentence], block: int
) -> list[np.ndarray]:
    """Per sentence, which tokens carry a massive activation at the output of `block`
    (hidden state `block`), in a pass without intervention."""
    found: list[np.ndarray] = [np.zeros(0, dtype=bool)] * len(inputs)
    for batch, lengths, carrying in _massive_by_block(loaded, inputs):
        for row, (sentence, length) in enumerate(zip(batch, lengths, strict=True)):
            found[sentence] = carrying[block][row, :length]
    return found


def first_massive_block(loaded: LoadedModel, sentences: list[str]) -> int | None:
    """The first block at whose output some token of `sentences` carries a massive
    activation (where Sun et al. intervene), or None if no block's does."""
    inputs = subword_inputs(loaded, loaded.encoder.encode(sentences)).encode(0, len(sentences))
    seen = np.zeros(loaded.n_layers + 1, dtype=bool)
    for _, _, carrying in _massive_by_block(loaded, inputs):
        seen |= np.array([bool(state.any()) for state in carrying])
    blocks = np.flatnonzero(seen[1:]) + 1
    return int(blocks[0]) if len(blocks) else None


def _hooks(
    loaded: LoadedModel, condition: Condition, block: int, calibration: list[EncodedSentence]
) -> list[AblationHook]:
    blocks = [block] if condition.where == "block" else range(1, loaded.n_layers + 1)
    ablations = [Ablation(b, "massive", condition.value, len(calibration)) for b in blocks]
    device = next(loaded.model.parameters()).device
    dtype = forward_dtype(device, loaded.spec)
    return calibrate_all(loaded, ablations, calibration, _budget(loaded), dtype)


def _perplexity_rows(
    passes: dict[str, PassTotals], replaced: dict[str, int], draws: int, rng: Any
) -> pd.DataFrame:
    """A row per condition: loss, perplexity and its ratio to no intervention, each with
    its bootstrap interval over sentences (the same draws for every condition)."""
    n = len(passes["none"].loss)
    chosen = rng.integers(0, n, size=(draws, n))
    drawn = {
        name: totals.loss[chosen].sum(1) / totals.tokens[chosen].sum(1)
        for name, totals in passes.items()
    }
    unablated = passes["none"].loss.sum() / passes["none"].tokens.sum()
    rows = []
    for name, totals in passes.items():
        loss = totals.loss.sum() / totals.tokens.sum()
        ratio_draws = np.exp(drawn[name] - drawn["none"])
        rows.append(
            {
                "condition": name,
                "loss": loss,
                "perplexity": np.exp(loss),
                "low": np.exp(np.percentile(drawn[name], 2.5)),
                "high": np.exp(np.percentile(drawn[name], 97.5)),
                "ratio_to_none": np.exp(loss - unablated),
                "ratio_low": np.percentile(ratio_draws, 2.5),
                "ratio_high": np.percentile(ratio_draws, 97.5),
                "replaced": replaced[name],
                "n_sentences": n,
                "n_tokens": int(totals.tokens.sum()),
                "draws": draws,
            }
        )
    return pd.DataFrame(rows)


def _attention_rows(passes: dict[str, PassTotals], n_blocks: int) -> pd.DataFrame:
    """A row per condition, block and head with the three attention shares; a condition
    whose pass returned no weights has one row per block saying so."""
    rows = []
    for name, totals in passes.items():
        if totals.attention is None:
            rows += [
                {"condition": name, "block": b, "head": None, "attention_weights": NOT_RETURNED}
                for b in range(1, n_blocks + 1)
            ]
            continue
        shares = totals.attention / max(totals.queries, 1)
        for b in range(shares.shape[1]):
            for head in range(shares.shape[2]):
                row = {"condition": name, "block": b + 1, "head": head}
                row |= {share: shares[k, b, head] for k, share in enumerate(ATTENTION_SHARES)}
                rows.append(row | {"n_queries": totals.queries, "attention_weights": "returned"})
    return pd.DataFrame(rows)


def ablation_effects(
    loaded: LoadedModel,
    sentences: list[str],
    block: int | None,
    calibration_sentences: int,
    draws: int,
    rng: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The perplexity table and the attention table of `loaded` (`load_language_model`)
    under every condition of `CONDITIONS`, the massive activations detected and ablated at
    `block`, calibrated on the first `calibration_sentences` of `sentences` and measured on
    the others (`draws` bootstrap draws from `rng`). With no `block` (a model without
    massive activations, `first_massive_block`), the unablated condition alone."""
    if not calibration_sentences < len(sentences):
        raise ValueError(
            f"{len(sentences)} sentences leave none after the {calibration_sentences} "
            "calibration sentences to measure the loss on"
        )
    inputs = subword_inputs(loaded, loaded.encoder.encode(sentences)).encode(0, len(sentences))
    calibration, held_out = inputs[:calibration_sentences], inputs[calibration_sentences:]
    if block is None:
        keys = [np.zeros(len(sentence.input_ids), dtype=bool) for sentence in held_out]
    else:
        keys = massive_positions(loaded, held_out, block)
        say(
            f"{loaded.spec.name}: {sum(int(k.any()) for k in keys):,} of {len(held_out):,} "
            f"held-out sentences carry a massive activation at block {block}"
        )
    passes: dict[str, PassTotals] = {}
    replaced: dict[str, int] = {}
    for condition in CONDITIONS if block is not None else CONDITIONS[:1]:
        what = f"{loaded.spec.name}: loss and attention, {condition.name}"
        if condition.value is None:
            passes[condition.name], replaced[condition.name] = (
                _run_pass(loaded, held_out, keys, what),
                0,
            )
            continue
        hooks = _hooks(loaded, condition, block, calibration)
        with hooked(loaded, *hooks):
            passes[condition.name] = _run_pass(loaded, held_out, keys, what)
        replaced[condition.name] = sum(hook.replaced for hook in hooks)
    perplexity = _perplexity_rows(passes, replaced, draws, rng)
    attention = _attention_rows(passes, loaded.n_layers)
    for table in (perplexity, attention):
        table.insert(0, "model", loaded.spec.name)
        table.insert(2, "detection_block", block)
    return perplexity, attention
