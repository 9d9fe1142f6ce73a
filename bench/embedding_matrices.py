"""The token embedding matrices of the three offline models (Gao et al. 2019,
"Representation Degeneration"), as a results file.

MiniLM, SmolLM2 and Gemma-3, as config/instruments.yaml names them, are loaded by the
project's backend (`backends.load_model`, on the CPU) and their input embedding matrix
measured (`contextuality.measures.embedding_matrix`); the output embedding too where the
model has one of its own. Whether it has: the same files read by
``transformers.AutoModelForCausalLM``; a head missing from the files means none (an encoder
shipped without it), a head holding the input's tensor means tied. Token frequencies: each
model's tokenizer (as the extraction tokenizes: running text) over the sentences of two
corpora, read as the workflow's corpus step reads them: the embedded default's Lee corpus
(config/instruments.yaml's ``corpus``) and STS 2012–2016 (the archives of ``--sts``), each
content token id counted (special tokens left out). Writes
``bench/results/embedding-matrices{.tsv,-norms.tsv,-spectrum.tsv,.md,.png}``. The workflow
measures the same with ``embedding_matrices: {activate: true}`` (config/instruments.yaml
sets it), through the same functions, counting tokens in the config's corpus alone.

    python bench/embedding_matrices.py [--config config/instruments.yaml] [--sts DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

import pandas as pd
import torch
import yaml
from threadpoolctl import threadpool_limits
from transformers.utils import logging

from contextuality import backends
from contextuality.backends.settings import ModelSettings
from contextuality.corpus.sentences import (
    build_sentence_table,
    read_corpus,
    sts_archive_name,
    text_corpus_files,
)
from contextuality.corpus.settings import CorpusSettings
from contextuality.extraction.token_counts import token_counts
from contextuality.figures.embedding import plot_embedding_matrices
from contextuality.files.fetch import resolve_data_path
from contextuality.measures.embedding_matrix import SPECTRUM_RANKS, measure_matrices

from arguments import config_file, input_directory, output_directory
from workdir import short_commit, with_sources_found, write_report

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
MODELS = ("minilm", "smollm2", "gemma3")
FIGURE = "embedding-matrices.png"
# The package's modules this script runs, whose changes `commit` marks.
MODULES = (
    "backends/token_embeddings",
    "extraction/token_counts",
    "measures/embedding_matrix",
    "figures/embedding",
)
COUNT_FREE = [
    "model",
    "matrix",
    "tied",
    "n_rows",
    "dimensions",
    "anisotropy",
    "cone_cosine",
    "top_singular_share",
    "top_singular_share_centered",
    "effective_rank",
    "isoscore",
    "partition_ratio",
    "matrix_entropy",
    "mean_norm",
]
BY_CORPUS = [
    "model",
    "matrix",
    "frequency_corpus",
    "n_seen",
    "anisotropy_seen",
    "cone_cosine_seen",
    "norm_frequency_spearman",
]


def model_specs(config: dict, names: list[str]) -> dict[str, ModelSettings]:
    """The models `names` as `config` names them (their layers left out: the matrix is no
    layer)."""
    models = with_sources_found(config)["models"]
    return {
        name: backends.model_settings(
            name, {k: v for k, v in models[name].items() if k != "layers"}
        )
        for name in names
    }


def corpus_texts(config: dict, sts: Path) -> dict[str, list[str]]:
    """The sentences of each frequency corpus, as the corpus step makes its sentence table
    (normalized, de-duplicated): `config`'s corpus and STS 2012–2016 from `sts`."""
    settings = {
        config["corpus"]["name"]: CorpusSettings.from_config(config["corpus"]),
        "sts-2012-2016": CorpusSettings(name="sts-2012-2016", source="sts"),
    }
    texts = {}
    for name, corpus in settings.items():
        if corpus.source == "sts":
            sources = [sts / sts_archive_name(year) for year in corpus.sts.years]
        else:
            sources = text_corpus_files(resolve_data_path(corpus.text.path), corpus.text.pattern)
        texts[name] = build_sentence_table(read_corpus(corpus, sources)[0])["text"].tolist()
    return texts


def measure_model(spec: ModelSettings, texts: dict[str, list[str]]) -> tuple[list, dict]:
    """The three tables' rows of one model's matrices, and the seconds of each stage."""
    seconds, started = {}, time.perf_counter()
    loaded = backends.load_model(spec)
    seconds["load"] = time.perf_counter() - started
    started = time.perf_counter()
    embeddings = backends.read_token_embeddings(loaded)
    inputs = embeddings.inputs
    seconds["output check"] = time.perf_counter() - started
    started = time.perf_counter()
    counts = {
        name: token_counts(loaded.encoder, sentences, len(inputs))
        for name, sentences in texts.items()
    }
    seconds["token counts"] = time.perf_counter() - started
    started = time.perf_counter()
    tables = measure_matrices(spec.name, inputs, embeddings.outputs, embeddings.tied, counts)
    seconds["measures"] = time.perf_counter() - started
    about = {"stored as": embeddings.stored_as, "rows": len(inputs), "dimensions": inputs.shape[1]}
    about |= {f"tokens in {corpus}": int(total.sum()) for corpus, total in counts.items()}
    return [tables.measures, tables.norms, tables.spectra], seconds | {"about": about}


def draw_figure(spectra: pd.DataFrame, norms: pd.DataFrame, path: Path) -> None:
    """The figure the workflow draws of the same tables (`plot_embedding_matrices`)."""
    plot_embedding_matrices(spectra, norms, [path], source="bench/embedding_matrices.py")


def commit() -> str:
    """The short commit, marked where this script or a module it runs is uncommitted."""
    head = short_commit()
    paths = [
        "bench/embedding_matrices.py",
        *(f"src/contextuality/{module}.py" for module in MODULES),
    ]
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", *paths], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    return head + (" (with the script or its modules not yet committed)" if dirty else "")


def report(tables: list[pd.DataFrame], seconds: dict, texts: dict, total: float) -> list[str]:
    """The sections of embedding-matrices.md."""
    rows, norms, spectra = tables
    timing = pd.DataFrame(
        {
            model: {k: v for k, v in stages.items() if k != "about"}
            for model, stages in seconds.items()
        }
    ).T
    about = pd.DataFrame({model: stages["about"] for model, stages in seconds.items()}).T
    top = spectra[spectra["rank"] <= 5].pivot_table(
        index=["model", "matrix", "centered"], columns="rank", values="share", sort=False
    )
    corpora = ", ".join(
        f"{name} ({len(sentences):,} sentences)" for name, sentences in texts.items()
    )
    return [
        "# Token embedding matrices: anisotropy, spectrum and norm against frequency",
        f"Written by `bench/embedding_matrices.py` on {time.strftime('%Y-%m-%d %H:%M')} at commit "
        f"{commit()}, on the CPU (1 thread), in {total:.0f} s. Models: {', '.join(seconds)} as "
        "config/instruments.yaml loads them (the decoders from their GGUF files, dequantized "
        "to float32). `layer` is the matrix itself, not layer 0 (the embedding output for a "
        "corpus's occurrences). Every row of each matrix is measured (no sample). Frequency "
        f"corpora: {corpora}; counts are of content token ids, special tokens left out.",
        "## Seconds per stage\n\n" + timing.to_markdown(floatfmt=".1f"),
        "## The matrices and the content tokens counted\n\nStored as: the input embedding's "
        "type in the model's files.\n\n" + about.to_markdown(),
        "## Measures of each matrix (every row)\n\n`tied`: True where the output embedding is "
        "the input's tensor (no separate output row then), <NA> where the model ships no "
        "output embedding. Anisotropy: the exact mean cosine between distinct rows; cone: the "
        "mean cosine of a row to the mean row; top singular share: σ₁²/Σσ² of the matrix "
        "(centered: less its mean row). Table: `embedding-matrices.tsv`.\n\n"
        + rows.drop_duplicates(["model", "matrix"])[COUNT_FREE].to_markdown(
            index=False, floatfmt=".4g"
        ),
        "## Over the tokens each corpus has\n\nSpearman ρ of the row norm against the token's "
        "count, over the tokens seen.\n\n"
        + rows[BY_CORPUS].to_markdown(index=False, floatfmt=".4g"),
        "## Norm and cone cosine by frequency-rank bin\n\nTable: "
        "`embedding-matrices-norms.tsv`.\n\n" + norms.to_markdown(index=False, floatfmt=".4g"),
        f"## First singular-value shares σᵢ²/Σσ²\n\nThe first {SPECTRUM_RANKS}: "
        "`embedding-matrices-spectrum.tsv`. Figure: `embedding-matrices.png`.\n\n"
        + top.reset_index().to_markdown(index=False, floatfmt=".4f"),
    ]


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=config_file, default=REPO / "config" / "instruments.yaml")
    parser.add_argument(
        "--sts", type=input_directory, default=REPO.parent / "shared" / "data" / "sts"
    )
    parser.add_argument("--out", type=output_directory, default=RESULTS)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument(
        "--redraw", action="store_true", help="draw the figure again from the tables in --out"
    )
    return parser.parse_args(argv)


def main() -> None:
    options = parse_arguments()
    if options.redraw:
        norms, spectra = (
            pd.read_csv(options.out / f"embedding-matrices-{name}.tsv", sep="\t")
            for name in ("norms", "spectrum")
        )
        draw_figure(spectra, norms.astype({"rank_low": "Int64"}), options.out / FIGURE)
        return
    torch.set_num_threads(1)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    started = time.perf_counter()
    config = yaml.safe_load(options.config.read_text())
    texts = corpus_texts(config, options.sts)
    measured, seconds = [], {}
    with threadpool_limits(1):
        for name, spec in model_specs(config, options.models).items():
            tables, seconds[name] = measure_model(spec, texts)
            measured.append(tables)
    tables = [pd.concat(parts, ignore_index=True) for parts in zip(*measured, strict=True)]
    options.out.mkdir(parents=True, exist_ok=True)
    for table, suffix in zip(tables, ("", "-norms", "-spectrum"), strict=True):
        table.to_csv(
            options.out / f"embedding-matrices{suffix}.tsv",
            sep="\t",
            index=False,
            float_format="%.6g",
        )
    draw_figure(tables[2], tables[1], options.out / FIGURE)
    total = time.perf_counter() - started
    write_report(options.out / "embedding-matrices.md", report(tables, seconds, texts, total))


if __name__ == "__main__":
    main()
