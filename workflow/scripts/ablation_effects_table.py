"""Snakemake adapter: every decoder's perplexity and attention under the ablation into
results/tables/ablation_effects_{perplexity,attention}.tsv and
results/figures/ablation_effects.png|pdf."""

from contextuality.jobs.process import run_job


def ablation_effects_table() -> None:
    from contextuality import steps

    found, output = snakemake.input, snakemake.output
    steps.ablation_effects_tables(
        [
            steps.EffectFiles(*files)
            for files in zip(found.perplexity, found.attention, strict=True)
        ],
        steps.EffectFiles(output.perplexity, output.attention),
        [output.png, output.pdf],
    )


run_job(snakemake, ablation_effects_table)
