"""Snakemake adapter: one stored model's special tokens, measured on a sample of
sentences, into results/degeneration/{model}/special_tokens.parquet."""

from contextuality import steps
from contextuality.corpus.index import IndexFiles
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.special_tokens(
        snakemake.wildcards.model,
        snakemake.params.settings,
        snakemake.input.sentences,
        IndexFiles.of(snakemake.input),
        snakemake.output[0],
        threads=snakemake.threads,
        **snakemake.params.special,
    ),
    threads=snakemake.threads,
)
