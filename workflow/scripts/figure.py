"""Snakemake adapter: draw one of figures 1–4 from the summary table."""

from contextuality import steps
from contextuality.workflow import run_step

run_step(
    snakemake.log[0],
    lambda: steps.draw_figure(
        snakemake.input[0],
        int(snakemake.wildcards.number),
        [snakemake.output.png, snakemake.output.pdf],
        relative_layers=snakemake.params.relative_layers,
    ),
)
