"""Train tiny GPT-2 and BERT models from scratch, saving checkpoints and held-out losses.

`bench/training_sweep.py` runs the workflow over these checkpoints to see whether the
anisotropy of contextual representations (Ethayarajh, 2019) emerges with training or is
there from the random initialization. The models train on the distinct sentences of STS
2012–2016 (about 38,000; the archives read from a local mirror, ``--sts``) and are judged on
sentences they never saw: the Lee background corpus, split into sentences as the embedded
default's workflow splits it, which is also the corpus the sweep measures. Two models per
seed: a causal LM (``GPT2LMHeadModel``, byte-level BPE tokenizer) and a masked LM
(``BertForMaskedLM``, 15 % masking, 80/10/10; cased WordPiece tokenizer), each tokenizer
trained on the training sentences (4,000 entries); 4 layers, hidden size 128, 4 heads,
intermediate size 512, 128 positions. The sentences are one token stream, separated by
``<|endoftext|>`` (GPT-2) or ``[SEP]`` (BERT), cut into blocks of 128 tokens (BERT's wrapped
in ``[CLS]`` ... ``[SEP]``), 8 to a batch in an order drawn from the seed. AdamW's learning
rate rises linearly over the first ``--warmup`` steps (default `WARMUP`, 50), then stays
constant: a step's checkpoint is the same whatever the last step asked for, and the same
seed and warm-up give the same checkpoints (bit for bit, at the same ``--threads``).

**Held-out loss and the unigram line.** At every checkpoint and at `EVAL_STEPS` more, the
model's mean cross-entropy (nats per predicted token) on the first `HELD_OUT_BLOCKS`
held-out blocks: every next
token for GPT-2; for BERT, the same 15 % of positions masked at every evaluation (one draw
from the seed). Beside it, the loss of a unigram model on the same predicted tokens: the
training stream's token frequencies, add-one smoothed. A model below that line uses context.

    python bench/train_checkpoints.py --out DIR [--steps 0 2 5 ... 2000] [--seeds 0 1 2]
        [--models gpt2 bert] [--warmup 50] [--sts DIR] [--threads N] [--overwrite]

Each ``DIR/<kind>/seed_<seed>/step_<N>/`` (step 0: the random initialization) is a
``save_pretrained`` directory, model and fast tokenizer, that ``AutoModel`` and
``AutoTokenizer`` load offline, with a ``training.json`` (held-out loss, unigram loss, the
mean training loss of the last 20 steps, and the run's settings, the warm-up's length as
``config.warmup_steps``). ``DIR/<kind>/seed_<seed>/losses.tsv`` holds the loss curve. Each
is written to a temporary path and renamed into place. `train` takes another action at
each checkpoint in place of saving it (`bench/early_steps.py` measures them in memory).
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
from collections.abc import Callable
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

from arguments import input_directory, nonnegative_int, output_directory, positive_int

VOCAB_SIZE = 4000
LAYERS, HIDDEN, HEADS, INTERMEDIATE = 4, 128, 4, 512
BLOCK = 128  # tokens per training sequence, and the models' maximum positions
BATCH = 8
LEARNING_RATE, WARMUP = 1e-3, 50
LOSS_WINDOW = 20
HELD_OUT_MASK_SEED = 12345  # BERT's held-out positions: one draw, the same for every seed
# Log-spaced steps (1-2-5) at which checkpoints are saved, and more at which the held-out
# loss is evaluated for its curve.
CHECKPOINT_STEPS = [0, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]
EVAL_STEPS = [1, 30, 70, 150, 300, 700, 1500]
HELD_OUT_BLOCKS = 200  # the first blocks of the held-out stream, about 25,600 tokens
STS_YEARS = range(2012, 2017)
BERT_SPECIALS = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
GPT2_END = "<|endoftext|>"


def training_sentences(sts: Path) -> list[str]:
    """The distinct sentences of the STS 2012–2016 archives in `sts`, in archive order."""
    from contextuality.corpus.sentences import (
        normalize_sentence,
        read_sts_archive,
        sts_archive_name,
        sts_sentences,
    )

    seen: dict[str, None] = {}
    for year in STS_YEARS:
        pairs, _ = read_sts_archive(sts / sts_archive_name(year), year, verify_checksums=True)
        for sentence in sts_sentences(pairs):
            seen.setdefault(normalize_sentence(sentence.text), None)
    return [text for text in seen if text]


def held_out_sentences() -> list[str]:
    """The Lee background corpus that gensim ships, split into sentences as the embedded
    default splits it: the sentences the sweep measures, never trained on."""
    from contextuality.corpus.sentences import normalize_sentence, split_sentences

    gensim_dir = Path(importlib.util.find_spec("gensim").origin).parent
    text = (gensim_dir / "test" / "test_data" / "lee_background.cor").read_text()
    paragraphs = [line.strip() for line in text.splitlines() if line.strip()]
    return [normalize_sentence(s) for paragraph in paragraphs for s in split_sentences(paragraph)]


def train_tokenizer(kind: str, paragraphs: list[str]):
    """A fast transformers tokenizer trained on the sentences: byte-level BPE for GPT-2,
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


def held_out_batches(kind: str, tokenizer, data: torch.Tensor) -> list[tuple]:
    """The held-out blocks as fixed (inputs, labels) batches: for BERT masked once, from
    `HELD_OUT_MASK_SEED`, so every evaluation predicts the same positions."""
    make_inputs = input_maker(kind, tokenizer, HELD_OUT_MASK_SEED)
    return [make_inputs(data[start : start + BATCH]) for start in range(0, len(data), BATCH)]


def predicted_tokens(kind: str, held_out: list[tuple]) -> torch.Tensor:
    """The tokens the held-out loss predicts: every token after a block's first (GPT-2),
    the masked positions' originals (BERT)."""
    if kind == "gpt2":
        return torch.cat([labels[:, 1:].reshape(-1) for _, labels in held_out])
    return torch.cat([labels[labels != -100] for _, labels in held_out])


def unigram_loss(training: torch.Tensor, targets: torch.Tensor, vocab_size: int) -> float:
    """Mean cross-entropy (nats) of `targets` under the add-one smoothed token frequencies
    of the `training` blocks: the loss of a model that ignores context."""
    counts = torch.bincount(training.reshape(-1), minlength=vocab_size).double() + 1.0
    return float(-(counts / counts.sum()).log()[targets].mean())


@torch.no_grad()
def held_out_loss(model, held_out: list[tuple]) -> float:
    """Mean cross-entropy (nats per predicted token) of the model on the held-out batches."""
    model.eval()
    total, count = 0.0, 0
    for inputs, labels in held_out:
        logits = model(input_ids=inputs).logits
        if labels is inputs:  # GPT-2: predict each next token
            logits, labels = logits[:, :-1], labels[:, 1:]
        losses = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(),
            labels.reshape(-1),
            ignore_index=-100,
            reduction="sum",
        )
        total += float(losses)
        count += int((labels != -100).sum())
    model.train()
    return total / count


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


def write_losses(path: Path, rows: list[dict]) -> None:
    """The loss curve as a tab-separated table, written to a temporary file and renamed."""
    columns = ["step", "tokens_seen", "train_loss", "held_out_loss", "unigram_loss"]
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(columns)]
    for row in rows:
        cells = [row[column] for column in columns]
        lines.append("\t".join("" if cell is None else f"{cell:.6g}" for cell in cells))
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text("\n".join(lines) + "\n")
    os.replace(temporary, path)


# What `train` does at each checkpoint: called with the step's record, the model (in
# training mode, to be left so), its tokenizer and the training blocks (blocks, BLOCK).
CheckpointAction = Callable[[dict, torch.nn.Module, object, torch.Tensor], None]


def saver(directory: Path) -> CheckpointAction:
    """The default checkpoint action: `save_checkpoint` to ``directory/step_<N>``."""

    def save(record: dict, model, tokenizer, data: torch.Tensor) -> None:
        save_checkpoint(directory / f"step_{record['step']}", model, tokenizer, record)

    return save


def train(
    kind: str,
    steps: list[int],
    seed: int,
    out: Path,
    corpora: dict,
    warmup: int = WARMUP,
    at_checkpoint: CheckpointAction | None = None,
    held_out_blocks: int = HELD_OUT_BLOCKS,
) -> dict:
    """Train one model kind from `seed` for max(steps) updates on the training sentences,
    the learning rate warming up over `warmup` steps, evaluating the held-out loss (on the
    first `held_out_blocks` held-out blocks) at each of `steps` and at `EVAL_STEPS`, and
    at each of `steps` saving a checkpoint under `out` (or calling `at_checkpoint`);
    returns the last checkpoint's record."""
    torch.manual_seed(seed)
    tokenizer = train_tokenizer(kind, corpora["train"])
    data = blocks(kind, tokenizer, corpora["train"])
    held_out_stream = blocks(kind, tokenizer, corpora["held_out"])[:held_out_blocks]
    held_out = held_out_batches(kind, tokenizer, held_out_stream)
    unigram = unigram_loss(data, predicted_tokens(kind, held_out), len(tokenizer))
    model = new_model(kind, tokenizer)
    make_inputs = input_maker(kind, tokenizer, seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
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
        "warmup_steps": warmup,
        "training_sentences": len(corpora["train"]),
        "training_blocks": len(data),
        "held_out_sentences": len(corpora["held_out"]),
        "held_out_blocks": sum(len(inputs) for inputs, _ in held_out),
    }
    print(
        f"{kind} seed {seed}: {summary['parameters']:,} parameters, {len(data)} training and "
        f"{summary['held_out_blocks']} held-out blocks of {BLOCK} tokens; unigram {unigram:.3f}"
    )
    directory = out / kind / f"seed_{seed}"
    at_checkpoint = at_checkpoint or saver(directory)
    evaluated = set(steps) | {step for step in EVAL_STEPS if step <= max(steps)}
    recent: deque[float] = deque(maxlen=LOSS_WINDOW)
    curve, record, start, stream = [], {}, time.perf_counter(), batches(data, seed)
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
        if step not in evaluated:
            continue
        record = {
            "kind": kind,
            "step": step,
            "seed": seed,
            "tokens_seen": step * BATCH * BLOCK,
            "train_loss": sum(recent) / len(recent) if recent else None,
            "held_out_loss": held_out_loss(model, held_out),
            "unigram_loss": unigram,
            "seconds": round(time.perf_counter() - start, 2),
            "config": summary,
        }
        curve.append(record)
        print(
            f"{kind} seed {seed} step {step:5d}  held-out {record['held_out_loss']:.3f} "
            f"(unigram {unigram:.3f})  {record['seconds']:7.1f} s",
            flush=True,
        )
        if step in steps:
            at_checkpoint(record, model, tokenizer, data)
    write_losses(directory / "losses.tsv", curve)
    return record


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any training starts; checkpoints
    already in --out are refused unless --overwrite."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out", type=output_directory, required=True, help="directory for the checkpoints"
    )
    parser.add_argument("--steps", type=nonnegative_int, nargs="+", default=CHECKPOINT_STEPS)
    parser.add_argument("--seeds", type=nonnegative_int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--models", nargs="+", choices=["gpt2", "bert"], default=["gpt2", "bert"])
    parser.add_argument(
        "--warmup",
        type=positive_int,
        default=WARMUP,
        help=f"steps over which the learning rate rises to its full value (default {WARMUP})",
    )
    parser.add_argument(
        "--sts",
        type=input_directory,
        default=Path(__file__).resolve().parents[2] / "shared/data/sts",
    )
    parser.add_argument("--threads", type=positive_int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--overwrite", action="store_true", help="replace existing checkpoints")
    args = parser.parse_args(argv)
    runs = [args.out / kind / f"seed_{seed}" for kind in args.models for seed in args.seeds]
    if any(any(run.glob("step_*")) for run in runs) and not args.overwrite:
        parser.exit(2, f"{args.out} already holds checkpoints; pass --overwrite to replace them\n")
    return args


def main() -> None:
    """Parse the command line, train each model kind from each seed, print the last losses."""
    args = parse_arguments()
    runs = [args.out / kind / f"seed_{seed}" for kind in args.models for seed in args.seeds]
    if any(any(run.glob("step_*")) for run in runs):
        for run in runs:
            shutil.rmtree(run, ignore_errors=True)
    torch.set_num_threads(args.threads)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    corpora = {"train": training_sentences(args.sts), "held_out": held_out_sentences()}
    last = [
        train(kind, sorted(set(args.steps)), seed, args.out, corpora, args.warmup)
        for kind in args.models
        for seed in args.seeds
    ]
    print(f"\n{'model':<6} {'seed':>4} {'step':>6} {'held-out':>9} {'unigram':>8}")
    for record in last:
        print(
            f"{record['kind']:<6} {record['seed']:>4} {record['step']:>6} "
            f"{record['held_out_loss']:>9.3f} {record['unigram_loss']:>8.3f}"
        )


if __name__ == "__main__":
    main()
