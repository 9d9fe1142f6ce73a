"""Snakemake adapter: one model's token embedding matrices, measured against its tokens'
counts in each frequency corpus's sentence table, into results/embedding_matrices/{model}/."""

from contextuality.jobs.process import run_job

# The inputs that are sentence tables to count tokens in: the corpus's, and the STS
# sentences' with embedding_matrices.sts_counts.
FREQUENCY_CORPORA = ("sentences", "sts_sentences")


def embedding_matrix() -> None:
    from contextuality import backends, steps

    output = snakemake.output
    steps.embedding_matrix(
        backends.model_settings(snakemake.wildcards.model, snakemake.params.settings),
        [path for key, path in snakemake.input.items() if key in FREQUENCY_CORPORA],
        steps.MatrixFiles(output.measures, output.norms, output.spectra),
        threads=snakemake.threads,
    )


run_job(snakemake, embedding_matrix)
