"""What ablating the massive activations does to the model (Sun et al. 2024): perplexity and
attention, for every decoder of a config (by default config/instruments.yaml's SmolLM2 and
Gemma-3; the ablated variants there are the same weights and are skipped).

For each decoder: the first block where a massive activation appears in the calibration
sentences (Sun et al.'s block), then the held-out loss and the attention on the first
token and on the tokens carrying massive activations, with no intervention, with them
set to zero and to their mean at that block, and at every block
(`contextuality.extraction.ablation_effects`). The corpus is the config's (its sentence
table, built as the workflow builds it); the first `--calibration` sentences calibrate the
means, the next `--sentences` are measured. Writes
``bench/results/ablation-effects-{perplexity,attention}.tsv``, ``ablation-effects.md`` and
``ablation-effects.png``.

    python bench/ablation_effects.py [config/instruments.yaml] [--sentences 512]
        [--calibration 256] [--draws 1000] [--seed 0] [--threads 2]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from contextuality.backends import is_decoder, load_language_model, model_settings  # noqa: E402
from contextuality.corpus.sentences import (  # noqa: E402
    build_sentence_table,
    read_text_corpus,
)
from contextuality.errors import ContextualityError  # noqa: E402
from contextuality.extraction.ablation_effects import (  # noqa: E402
    CONDITIONS,
    ablation_effects,
    first_massive_block,
)
from contextuality.files.fetch import resolve_data_path  # noqa: E402
from contextuality.files.provenance import atomic_path  # noqa: E402

from arguments import (  # noqa: E402
    config_file,
    configured_models,
    nonnegative_int,
    output_directory,
    positive_int,
)
from workdir import short_commit, write_report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHOWN_CONDITIONS = ("none", "zero at block", "mean at block", "mean at every block")


def corpus_sentences(config: dict) -> list[str]:
    """The config's text corpus as the workflow's sentence table holds it."""
    text = config["corpus"]["text"]
    sourced = read_text_corpus(
        resolve_data_path(text["path"]), not text.get("split_sentences", False)
    )
    return build_sentence_table(sourced)["text"].tolist()


def decoders(config: dict) -> list[str]:
    """The config's decoders, each once: models without an ablation of their own."""
    return [
        name
        for name, section in config["models"].items()
        if "ablation" not in section and is_decoder(model_settings(name, section))
    ]


def write_table(table: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as temporary:
        table.to_csv(temporary, sep="\t", index=False, float_format="%.6g")


def draw(perplexity: pd.DataFrame, attention: pd.DataFrame, path: Path) -> None:
    """Per model: perplexity by condition (log axis, 95 % intervals), and the mean over
    heads of the attention share on the first token by block, per condition."""
    models = list(dict.fromkeys(perplexity["model"]))
    figure, axes = plt.subplots(len(models), 2, figsize=(11, 3.6 * len(models)), squeeze=False)
    for (left, right), model in zip(axes, models, strict=True):
        rows = perplexity[perplexity["model"] == model].set_index("condition")
        positions = np.arange(len(rows))
        errors = [rows["perplexity"] - rows["low"], rows["high"] - rows["perplexity"]]
        left.bar(positions, rows["perplexity"], yerr=errors, color="0.6", capsize=3)
        left.set_yscale("log")
        left.set_xticks(positions, rows.index, rotation=20, ha="right", fontsize=8)
        left.set_ylabel("held-out perplexity (log scale)")
        block = int(rows["detection_block"].iloc[0])
        left.set_title(f"{model}: perplexity, massive activations ablated at block {block}")
        shares = attention[(attention["model"] == model) & attention["head"].notna()]
        by_block = shares.groupby(["condition", "block"])["first_token_share"].mean()
        for condition in SHOWN_CONDITIONS:
            if condition in by_block.index.get_level_values(0):
                line = by_block.loc[condition]
                right.plot(line.index, line.to_numpy(), marker=".", label=condition)
        right.axvline(block, color="0.5", linestyle=":", linewidth=1)
        right.set_ylim(0, 1)
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
        right.set_xlabel("block")
        right.set_ylabel("attention on the first token\n(mean over heads and queries)")
        right.set_title(f"{model}: attention on the first token")
        right.legend(fontsize=8)
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=110, format="png")
    plt.close(figure)


def summary_sections(perplexity: pd.DataFrame, attention: pd.DataFrame) -> list[str]:
    """The perplexity table, and per model the attention shares by block (mean over heads)
    without intervention and under each ablation at the detection block."""
    shown = perplexity[
        ["model", "condition", "detection_block", "loss", "perplexity", "low", "high"]
        + ["ratio_to_none", "ratio_low", "ratio_high", "replaced", "n_sentences", "n_tokens"]
    ]
    sections = ["## Held-out perplexity\n\n" + shown.to_markdown(index=False, floatfmt=".4g")]
    for model, rows in attention[attention["head"].notna()].groupby("model", sort=False):
        wide = rows.pivot_table(
            index="block",
            columns="condition",
            values=["first_token_share", "massive_after_first_share"],
            aggfunc="mean",
        )
        wide.columns = [f"{share} | {condition}" for share, condition in wide.columns]
        sections.append(
            f"## {model}: attention by block (mean over heads)\n\n"
            + wide.reset_index().to_markdown(index=False, floatfmt=".3f")
        )
    return sections


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before any model loads: a config with a decoder among
    its models, counts of at least 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "config", type=config_file, nargs="?", default=REPO / "config/instruments.yaml"
    )
    parser.add_argument("--sentences", type=positive_int, default=512)
    parser.add_argument("--calibration", type=positive_int, default=256)
    parser.add_argument("--draws", type=positive_int, default=1000)
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    args = parser.parse_args(argv)
    try:
        found = decoders({"models": configured_models(args.config)})
    except ContextualityError as error:
        parser.error(f"{args.config}: {error}")
    if not found:
        parser.error(f"{args.config}: no decoder among its models (nothing to ablate)")
    return args


def main() -> None:
    args = parse_arguments()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)
    config = yaml.safe_load(args.config.read_text())
    sentences = corpus_sentences(config)[: args.calibration + args.sentences]
    rng = np.random.default_rng(args.seed)
    tables, timings = ([], []), []
    for name in decoders(config):
        started = time.perf_counter()
        loaded = load_language_model(model_settings(name, config["models"][name]))
        block = first_massive_block(loaded, sentences[: args.calibration])
        for kept, table in zip(
            tables,
            ablation_effects(loaded, sentences, block, args.calibration, args.draws, rng),
            strict=True,
        ):
            kept.append(table)
        timings.append(f"{name} {time.perf_counter() - started:.0f} s")
    perplexity, attention = (pd.concat(kept, ignore_index=True) for kept in tables)
    write_table(perplexity, args.out / "ablation-effects-perplexity.tsv")
    write_table(attention, args.out / "ablation-effects-attention.tsv")
    draw(perplexity, attention, args.out / "ablation-effects.png")
    commit = short_commit()
    header = [
        "# Perplexity and attention under the ablation of massive activations",
        f"Written by `bench/ablation_effects.py {args.config.name}` ({time.strftime('%Y-%m-%d')}, "
        f"commit {commit}; {', '.join(timings)} on {args.threads} CPU threads). The config's "
        f"corpus: the first {args.calibration} sentences calibrate the means, the next "
        f"{len(sentences) - args.calibration} are measured; {args.draws} bootstrap draws over "
        f"sentences (seed {args.seed}) give the 95 % intervals. Conditions: "
        + "; ".join(condition.name for condition in CONDITIONS)
        + ". Tables beside this file: `ablation-effects-perplexity.tsv`, "
        "`ablation-effects-attention.tsv` (every block and head); figure `ablation-effects.png`.",
    ]
    write_report(args.out / "ablation-effects.md", header + summary_sections(perplexity, attention))


if __name__ == "__main__":
    main()
