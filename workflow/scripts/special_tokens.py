"""Snakemake adapter: one stored model's special tokens, measured on a sample of
sentences, into results/degeneration/{model}/special_tokens.parquet."""

from contextuality.jobs.process import run_job


def special_tokens() -> None:
    from contextuality import backends, steps
    from contextuality.corpus.index import IndexFiles

    steps.special_tokens(
        backends.model_settings(
            snakemake.wildcards.model,
            snakemake.params.settings | {"layers": snakemake.params.layers},
        ),
        snakemake.input.sentences,
        IndexFiles.of(snakemake.input),
        snakemake.output[0],
        threads=snakemake.threads,
        **snakemake.params.special,
    )


run_job(snakemake, special_tokens)
