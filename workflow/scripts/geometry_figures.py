"""Snakemake adapter: the intrinsic dimension figures (by layer, over scale), the CKA heatmaps,
the alignment figure, the best-matching layers and the position profiles."""

from contextuality.jobs.process import run_job


def geometry_figures() -> None:
    from contextuality import steps

    steps.geometry_figures(
        snakemake.input.dimensions,
        snakemake.input.dimension_scales,
        snakemake.input.alignment,
        snakemake.input.best_layers,
        snakemake.input.positions[0] if snakemake.input.positions else None,
        list(snakemake.output),
    )


run_job(snakemake, geometry_figures)
