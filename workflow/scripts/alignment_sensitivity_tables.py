"""Snakemake adapter: every pair's alignment sensitivity gathered into three tables and a
figure."""

from contextuality.jobs.process import run_job


def alignment_sensitivity_tables() -> None:
    from contextuality import steps

    output = snakemake.output
    steps.alignment_sensitivity_tables(
        list(snakemake.input), [output.rows, output.matches, output.seeds], [output.png, output.pdf]
    )


run_job(snakemake, alignment_sensitivity_tables)
