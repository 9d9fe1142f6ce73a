"""Snakemake adapter: every model's token embedding matrices into
results/tables/embedding_matrices.tsv, embedding_matrix_norms.tsv,
embedding_matrix_spectra.tsv and results/figures/embedding_matrices.png|pdf."""

from contextuality.jobs.process import run_job


def embedding_matrices() -> None:
    from contextuality import steps

    found, output = snakemake.input, snakemake.output
    models = zip(found.measures, found.norms, found.spectra, strict=True)
    steps.embedding_matrices(
        [steps.MatrixFiles(*files) for files in models],
        steps.MatrixFiles(output.measures, output.norms, output.spectra),
        [output.png, output.pdf],
    )


run_job(snakemake, embedding_matrices)
