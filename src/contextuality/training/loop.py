"""The training loop: AdamW after a linear warm-up, the held-out loss beside a unigram
model's, and an action at each saved step (`saver` writes the checkpoint).

Batches come in an order drawn from the run's seed."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from contextuality.errors import InputDataError
from contextuality.training.settings import RunSettings, TrainingSettings
from contextuality.training.tiny import blocks, new_model, train_tokenizer

log = logging.getLogger(__name__)

MASKED_SHARE = 0.15  # BERT's masked positions (80 % [MASK], 10 % random, 10 % kept)
HELD_OUT_MASK_SEED = 12345  # BERT's held-out positions: one draw, the same for every run
LOSS_WINDOW = 20  # training steps the recorded training loss is the mean of

# What `train` does at each saved step: called with the step's record, the model (in
# training mode, to be left so), its tokenizer and the training blocks (blocks, block).
CheckpointAction = Callable[[dict[str, Any], torch.nn.Module, Any, torch.Tensor], None]


def batches(data: torch.Tensor, batch_size: int, seed: int) -> Iterator[torch.Tensor]:
    """Endless batches of `batch_size` blocks, each epoch in a new order drawn from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(data), generator=generator)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            yield data[order[start : start + batch_size]]


def input_maker(architecture: str, tokenizer: Any, seed: int) -> Callable:
    """A function from a batch of blocks to (inputs, labels): the blocks themselves for
    GPT-2 (the model shifts the labels), `MASKED_SHARE` of the tokens masked for BERT."""
    if architecture == "gpt2":
        return lambda batch: (batch, batch)
    from transformers import DataCollatorForLanguageModeling

    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=MASKED_SHARE, seed=seed)

    def mask(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        masked = collator([{"input_ids": row} for row in batch])
        return masked["input_ids"], masked["labels"]

    return mask


def held_out_batches(
    architecture: str, tokenizer: Any, data: torch.Tensor, batch_size: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The held-out blocks as fixed (inputs, labels) batches: for BERT masked once, from
    `HELD_OUT_MASK_SEED`, so every evaluation predicts the same positions."""
    make_inputs = input_maker(architecture, tokenizer, HELD_OUT_MASK_SEED)
    return [
        make_inputs(data[start : start + batch_size]) for start in range(0, len(data), batch_size)
    ]


def predicted_tokens(architecture: str, held_out: Sequence[tuple]) -> torch.Tensor:
    """The tokens the held-out loss predicts: every token after a block's first (GPT-2),
    the masked positions' originals (BERT)."""
    if architecture == "gpt2":
        return torch.cat([labels[:, 1:].reshape(-1) for _, labels in held_out])
    return torch.cat([labels[labels != -100] for _, labels in held_out])


def unigram_loss(training: torch.Tensor, targets: torch.Tensor, vocab_size: int) -> float:
    """Mean cross-entropy (nats) of `targets` under the add-one smoothed token frequencies
    of the `training` blocks: the loss of a model that ignores context."""
    counts = torch.bincount(training.reshape(-1), minlength=vocab_size).double() + 1.0
    return float(-(counts / counts.sum()).log()[targets].mean())


@torch.no_grad()
def held_out_loss(model: torch.nn.Module, held_out: Sequence[tuple]) -> float:
    """Mean cross-entropy (nats per predicted token) of the model on the held-out batches."""
    model.eval()
    total, count = 0.0, 0
    for inputs, labels in held_out:
        logits = model(input_ids=inputs).logits
        if labels is inputs:  # GPT-2: predict each next token
            logits, labels = logits[:, :-1], labels[:, 1:]
        total += float(
            torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(),
                labels.reshape(-1),
                ignore_index=-100,
                reduction="sum",
            )
        )
        count += int((labels != -100).sum())
    model.train()
    return total / count


def save_checkpoint(directory: Path, model: Any, tokenizer: Any, record: dict) -> None:
    """Write model, tokenizer and training.json to a temporary directory beside
    `directory`, then rename it into place."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    temporary.chmod(0o755)
    model.save_pretrained(temporary)
    tokenizer.save_pretrained(temporary)
    (temporary / "training.json").write_text(json.dumps(record, indent=2) + "\n")
    os.replace(temporary, directory)


def saver(directory: Path) -> CheckpointAction:
    """The checkpoint action that saves each step to ``directory/step_<N>``
    (`save_checkpoint`): a directory ``AutoModel`` and ``AutoTokenizer`` load offline."""

    def save(record: dict, model: Any, tokenizer: Any, data: torch.Tensor) -> None:
        save_checkpoint(Path(directory) / f"step_{record['step']}", model, tokenizer, record)

    return save


def _data(run: RunSettings, corpora: tuple[list[str], list[str]], settings: TrainingSettings):
    """The tokenizer, training blocks, held-out batches and unigram loss of `run`; an
    InputDataError where the sentences make no batch or no held-out block."""
    train_sentences, held_out_sentences = corpora
    tokenizer = train_tokenizer(run.architecture, train_sentences, settings)
    data = blocks(run.architecture, tokenizer, train_sentences, settings.block)
    held_out_stream = blocks(run.architecture, tokenizer, held_out_sentences, settings.block)
    held_out_stream = held_out_stream[: settings.held_out_blocks]
    if len(data) < settings.batch_size or not len(held_out_stream):
        raise InputDataError(
            f"training: {len(data)} training and {len(held_out_stream)} held-out blocks of "
            f"{settings.block} tokens; a run needs a batch of {settings.batch_size} and one "
            "held-out block"
        )
    held_out = held_out_batches(run.architecture, tokenizer, held_out_stream, settings.batch_size)
    unigram = unigram_loss(data, predicted_tokens(run.architecture, held_out), len(tokenizer))
    return tokenizer, data, held_out, unigram


def _summary(run, model, tokenizer, corpora, blocks_seen, unigram: float) -> dict[str, Any]:
    """What a run's records carry about it (sizes, seed, warm-up, threads), logged once:
    `blocks_seen` are its training blocks and held-out batches."""
    data, held_out = blocks_seen
    summary = {
        "architecture": run.architecture,
        "seed": run.seed,
        "warmup_steps": run.warmup,
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "vocab_size": len(tokenizer),
        "training_sentences": len(corpora[0]),
        "training_blocks": len(data),
        "held_out_sentences": len(corpora[1]),
        "held_out_blocks": sum(len(inputs) for inputs, _ in held_out),
        "threads": torch.get_num_threads(),
    }
    log.info(
        "%s seed %d: %s parameters, %d training and %d held-out blocks of %d tokens; "
        "unigram %.3f nats",
        run.architecture,
        run.seed,
        f"{summary['parameters']:,}",
        len(data),
        summary["held_out_blocks"],
        data.shape[1],
        unigram,
    )
    return summary


def train(
    run: RunSettings,
    steps: Sequence[int],
    corpora: tuple[list[str], list[str]],
    settings: TrainingSettings,
    at_checkpoint: CheckpointAction,
) -> list[dict[str, Any]]:
    """Train `run` for max(`steps`) updates on ``corpora[0]`` (the training sentences),
    judged on ``corpora[1]`` (held-out sentences): the held-out loss at each of `steps`
    and ``settings.evaluation_steps`` below the last, `at_checkpoint` called at each of
    `steps`. Returns the loss curve, one record per evaluated step (step, tokens_seen,
    train_loss: the mean of the last `LOSS_WINDOW` steps, held_out_loss, unigram_loss,
    seconds, and the run's sizes under ``config``). The same run, steps and threads give
    the same checkpoints, bit for bit: a step's does not depend on the last step asked."""
    torch.manual_seed(run.seed)
    tokenizer, data, held_out, unigram = _data(run, corpora, settings)
    model = new_model(run.architecture, tokenizer, settings)
    make_inputs = input_maker(run.architecture, tokenizer, run.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / run.warmup)
    )
    summary = _summary(run, model, tokenizer, corpora, (data, held_out), unigram)
    last = max(steps)
    evaluated = set(steps) | {step for step in settings.evaluation_steps if step <= last}
    recent: deque[float] = deque(maxlen=LOSS_WINDOW)
    curve, start = [], time.perf_counter()
    stream = batches(data, settings.batch_size, run.seed)
    model.train()
    for step in range(last + 1):
        if step > 0:
            inputs, labels = make_inputs(next(stream))
            loss = model(input_ids=inputs, labels=labels).loss
            loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            recent.append(loss.item())
        if step not in evaluated:
            continue
        record = {
            "step": step,
            "tokens_seen": step * settings.batch_size * settings.block,
            "train_loss": sum(recent) / len(recent) if recent else None,
            "held_out_loss": held_out_loss(model, held_out),
            "unigram_loss": unigram,
            "seconds": round(time.perf_counter() - start, 2),
            "config": summary,
        }
        curve.append(record)
        log.info(
            "%s seed %d: step %d of %d, held-out %.3f nats (unigram %.3f), %.0f s",
            run.architecture,
            run.seed,
            step,
            last,
            record["held_out_loss"],
            unigram,
            record["seconds"],
        )
        if step in steps:
            at_checkpoint(record, model, tokenizer, data)
    return curve
