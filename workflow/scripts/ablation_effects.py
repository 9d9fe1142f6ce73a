"""Snakemake adapter: one decoder's perplexity and attention under the ablation of its
massive activations, into results/ablation_effects/{model}/."""

from contextuality.jobs.process import run_job


def ablation_effects() -> None:
    from contextuality import backends, steps

    output, effects = snakemake.output, snakemake.params.effects
    steps.ablation_effects(
        backends.model_settings(snakemake.wildcards.model, snakemake.params.settings),
        snakemake.input.sentences,
        steps.EffectFiles(output.perplexity, output.attention),
        effects["sentences"],
        effects["calibration_sentences"],
        effects["draws"],
        effects["seed"],
        threads=snakemake.threads,
    )


run_job(snakemake, ablation_effects)
