"""Train tiny GPT-2 and BERT models from scratch, saving checkpoints along the way.

A later benchmark runs the workflow over these checkpoints to see whether the anisotropy of
contextual representations (Ethayarajh, 2019) emerges with training or is there from the
random initialization. Both models are trained on CPU on the Lee background corpus gensim
ships (300 news paragraphs): a causal LM (``GPT2LMHeadModel``, byte-level BPE tokenizer) and
a masked LM (``BertForMaskedLM``, 15% masking, 80/10/10; cased WordPiece tokenizer), each
tokenizer trained on the corpus (4,000 entries); 4 layers, hidden size 128, 4 heads,
intermediate size 512, 128 positions. The corpus is one token stream, paragraphs separated
by ``<|endoftext|>`` (GPT-2) or ``[SEP]`` (BERT), cut into blocks of 128 tokens (BERT's
wrapped in ``[CLS]`` ... ``[SEP]``), 8 to a batch in a seeded order. AdamW's learning rate
warms up over 50 steps, then stays constant: a step's checkpoint is the same whatever the
last step asked for, and the same seed gives the same checkpoints (bit for bit, at the same
``--threads``; default: the cores available, but 1 can be faster on a busy machine).

    python bench/train_checkpoints.py --out DIR [--steps 0 50 200 1000] [--seed 0]
        [--models gpt2 bert] [--threads N] [--overwrite]

Each ``DIR/<kind>/step_<N>/`` (step 0: the random initialization) is a ``save_pretrained``
directory, model and fast tokenizer, that ``AutoModel`` and ``AutoTokenizer`` load offline,
with a ``training.json`` (loss: the mean of the last 20 steps). It is written to a temporary
directory and renamed into place.
"""

from __future__ import annotations

import os

# OpenMP threads that spin while they wait make training several times slower when other
# jobs share the cores; this must be set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import importlib.util
import json
import shutil
import tempfile
import time
from collections import deque
from pathlib import Path

import torch
from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertTokenizerFast,
    DataCollatorForLanguageModeling,
    GPT2Config,
    GPT2LMHeadModel,
    GPT2TokenizerFast,
)
from transformers.utils import logging

VOCAB_SIZE = 4000
LAYERS, HIDDEN, HEADS, INTERMEDIATE = 4, 128, 4, 512
BLOCK = 128  # tokens per training sequence, and the models' maximum positions
BATCH = 8
LEARNING_RATE, WARMUP = 1e-3, 50
LOSS_WINDOW = 20
BERT_SPECIALS = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
GPT2_END = "<|endoftext|>"


def lee_paragraphs() -> list[str]:
    """The Lee background corpus that gensim ships, one paragraph per line."""
    gensim_dir = Path(importlib.util.find_spec("gensim").origin).parent
    text = (gensim_dir / "test" / "test_data" / "lee_background.cor").read_text()
    return [line.strip() for line in text.splitlines() if line.strip()]


def train_tokenizer(kind: str, paragraphs: list[str]):
    """A fast transformers tokenizer trained on the paragraphs: byte-level BPE for GPT-2,
    cased WordPiece for BERT."""
    if kind == "gpt2":
        bpe = ByteLevelBPETokenizer(trim_offsets=True)
        bpe.train_from_iterator(
            paragraphs, vocab_size=VOCAB_SIZE, special_tokens=[GPT2_END], show_progress=False
        )
        return GPT2TokenizerFast(
            tokenizer_object=bpe._tokenizer,
            bos_token=GPT2_END,
            eos_token=GPT2_END,
            unk_token=GPT2_END,
            model_max_length=BLOCK,
        )
    # The trainer numbers the "##x" pieces in hash-map order, which changes the vocabulary
    # from run to run (huggingface/tokenizers#1794); naming them up front, as special
    # tokens, fixes their order, and the tokenizer is then rebuilt from the vocabulary alone.
    pieces = sorted({f"##{character}" for character in "".join(paragraphs).replace(" ", "")})
    trainer = BertWordPieceTokenizer(lowercase=False)
    trainer.train_from_iterator(
        paragraphs,
        vocab_size=VOCAB_SIZE,
        special_tokens=[*BERT_SPECIALS.values(), *pieces],
        show_progress=False,
    )
    wordpiece = BertWordPieceTokenizer(trainer.get_vocab(), lowercase=False)
    return BertTokenizerFast(
        tokenizer_object=wordpiece._tokenizer,
        do_lower_case=False,
        model_max_length=BLOCK,
        **BERT_SPECIALS,
    )


def new_model(kind: str, tokenizer) -> torch.nn.Module:
    """A randomly initialized LM-head model of the given kind (the seed set beforehand)."""
    vocab = len(tokenizer)
    if kind == "gpt2":
        config = GPT2Config(
            vocab_size=vocab,
            n_positions=BLOCK,
            n_embd=HIDDEN,
            n_layer=LAYERS,
            n_head=HEADS,
            n_inner=INTERMEDIATE,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        return GPT2LMHeadModel(config)
    config = BertConfig(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        max_position_embeddings=BLOCK,
        pad_token_id=tokenizer.pad_token_id,
    )
    return BertForMaskedLM(config)


def blocks(kind: str, tokenizer, paragraphs: list[str]) -> torch.Tensor:
    """The corpus as one token stream cut into training blocks of BLOCK tokens (the last,
    partial block dropped), shape (blocks, BLOCK)."""
    encoded = tokenizer(paragraphs, add_special_tokens=False, verbose=False)["input_ids"]
    if kind == "gpt2":
        stream = [token for ids in encoded for token in [tokenizer.eos_token_id, *ids]]
        return torch.tensor(stream[: len(stream) // BLOCK * BLOCK]).view(-1, BLOCK)
    stream = [token for ids in encoded for token in [*ids, tokenizer.sep_token_id]]
    width = BLOCK - 2
    content = torch.tensor(stream[: len(stream) // width * width]).view(-1, width)
    cls = torch.full((len(content), 1), tokenizer.cls_token_id)
    sep = torch.full((len(content), 1), tokenizer.sep_token_id)
    return torch.cat([cls, content, sep], dim=1)


def batches(data: torch.Tensor, seed: int):
    """Endless batches of BATCH blocks, each epoch in a new order drawn from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(data), generator=generator)
        for start in range(0, len(order) - BATCH + 1, BATCH):
            yield data[order[start : start + BATCH]]


def input_maker(kind: str, tokenizer, seed: int):
    """A function from a batch of blocks to (inputs, labels): the blocks themselves for
    GPT-2 (the model shifts the labels), 15% of the tokens masked (80/10/10) for BERT."""
    if kind == "gpt2":
        return lambda batch: (batch, batch)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=seed)

    def mask(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        masked = collator([{"input_ids": block} for block in batch])
        return masked["input_ids"], masked["labels"]

    return mask


def save_checkpoint(directory: Path, model, tokenizer, record: dict) -> None:
    """Write model, tokenizer and training.json to a temporary directory beside
    `directory`, then rename it into place."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    temporary.chmod(0o755)
    model.save_pretrained(temporary)
    tokenizer.save_pretrained(temporary)
    (temporary / "training.json").write_text(json.dumps(record, indent=2) + "\n")
    os.replace(temporary, directory)


def train(kind: str, steps: list[int], seed: int, out: Path, paragraphs: list[str]) -> list[tuple]:
    """Train one model kind for max(steps) updates, saving a checkpoint at each step in
    `steps`; return (kind, step, loss) rows."""
    torch.manual_seed(seed)
    tokenizer = train_tokenizer(kind, paragraphs)
    data = blocks(kind, tokenizer, paragraphs)
    model = new_model(kind, tokenizer)
    make_inputs = input_maker(kind, tokenizer, seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / WARMUP))
    summary = {  # the training blocks are max_positions tokens long
        "layers": LAYERS,
        "hidden_size": HIDDEN,
        "heads": HEADS,
        "intermediate_size": INTERMEDIATE,
        "max_positions": BLOCK,
        "vocab_size": len(tokenizer),
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "batch_size": BATCH,
        "learning_rate": LEARNING_RATE,
        "warmup_steps": WARMUP,
        "training_blocks": len(data),
    }
    print(f"{kind}: {summary['parameters']:,} parameters, {len(data)} blocks of {BLOCK} tokens")
    recent: deque[float] = deque(maxlen=LOSS_WINDOW)
    rows, start, stream = [], time.perf_counter(), batches(data, seed)
    model.train()
    for step in range(max(steps) + 1):
        if step > 0:
            inputs, labels = make_inputs(next(stream))
            loss = model(input_ids=inputs, labels=labels).loss
            loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            recent.append(loss.item())
        elapsed = time.perf_counter() - start
        loss_now = sum(recent) / len(recent) if recent else None
        if step > 0 and step % 50 == 0:
            print(f"{kind} step {step:5d}  loss {loss_now:.3f}  {elapsed:7.1f} s", flush=True)
        if step in steps:
            record = {
                "kind": kind,
                "step": step,
                "seed": seed,
                "loss": loss_now,
                "seconds": round(elapsed, 2),
                "tokens_seen": step * BATCH * BLOCK,
                "config": summary,
            }
            save_checkpoint(out / kind / f"step_{step}", model, tokenizer, record)
            rows.append((kind, step, loss_now))
    return rows


def main() -> None:
    """Parse the command line, train each model kind and print a summary table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the checkpoints")
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 50, 200, 1000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", choices=["gpt2", "bert"], default=["gpt2", "bert"])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--overwrite", action="store_true", help="replace existing checkpoints")
    args = parser.parse_args()
    if any(step < 0 for step in args.steps):
        parser.error("steps must be non-negative")
    if any(args.out.glob("*/step_*")):
        if not args.overwrite:
            parser.exit(
                2, f"{args.out} already holds checkpoints; pass --overwrite to replace them\n"
            )
        for kind in args.models:
            shutil.rmtree(args.out / kind, ignore_errors=True)
    torch.set_num_threads(args.threads)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    paragraphs = lee_paragraphs()
    rows = []
    for kind in args.models:
        rows += train(kind, sorted(set(args.steps)), args.seed, args.out, paragraphs)
    print(f"\n{'model':<6} {'step':>6} {'loss':>8}")
    for kind, step, loss in rows:
        print(f"{kind:<6} {step:>6} {'-' if loss is None else f'{loss:.3f}':>8}")


if __name__ == "__main__":
    main()
