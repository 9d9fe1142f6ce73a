"""Snakemake adapter: one model's token embedding matrices, measured against its tokens'
counts in the sentence table, into results/embedding_matrices/{model}/."""

from contextuality.jobs.process import run_job


def embedding_matrix() -> None:
    from contextuality import backends, steps

    output = snakemake.output
    steps.embedding_matrix(
        backends.model_settings(snakemake.wildcards.model, snakemake.params.settings),
        snakemake.input.sentences,
        steps.MatrixFiles(output.measures, output.norms, output.spectra),
        threads=snakemake.threads,
    )


run_job(snakemake, embedding_matrix)
