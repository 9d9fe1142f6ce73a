# Tiny models trained from scratch (config training) on the distinct STS 2012-2016
# sentences: each run's checkpoints, loss curve and probes of its early steps, and every
# run's curves and probes gathered into tables and figures. A model whose source is
# training:<run>/step_<N> is extracted from its run's checkpoints.
rule train_model:
    input:
        training="results/corpus/sts_sentences.parquet",
        held_out="results/corpus/sentences.parquet",
    output:
        checkpoints=directory("results/training/{run}/checkpoints"),
        losses="results/training/{run}/losses.parquet",
        probes="results/training/{run}/probes.parquet",
    log:
        "logs/training/{run}.log",
    benchmark:
        "benchmarks/training/{run}.tsv"
    wildcard_constraints:
        run=ctx.pattern(ctx.training_runs(config)),
    conda:
        "../envs/contextuality.yaml"
    threads: 2
    resources:
        mem_mb=4000,
    params:
        settings=get_run_settings,
    script:
        "../scripts/train_model.py"


rule training_losses_table:
    input:
        ctx.run_files(config, "losses"),
    output:
        table=report(
            "results/tables/training_losses.tsv",
            caption="../report/training_losses_table.rst",
            **ctx.report_section("training_losses_table"),
        ),
        provenance="results/tables/training_losses.provenance.json",
        png=report(
            "results/figures/training_losses.png",
            caption="../report/training_losses_figure.rst",
            **ctx.report_section("training_losses_figure"),
        ),
        pdf="results/figures/training_losses.pdf",
    log:
        "logs/tables/training_losses.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/training_losses_table.py"


rule training_probes_table:
    input:
        ctx.run_files(config, "probes"),
    output:
        table=report(
            "results/tables/training_probes.tsv",
            caption="../report/training_probes_table.rst",
            **ctx.report_section("training_probes_table"),
        ),
        provenance="results/tables/training_probes.provenance.json",
        events=report(
            "results/tables/training_probe_events.tsv",
            caption="../report/training_probe_events_table.rst",
            **ctx.report_section("training_probes_table"),
        ),
        events_provenance="results/tables/training_probe_events.provenance.json",
        figures=ctx.probe_figures(config),
    log:
        "logs/tables/training_probes.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        corpus=config["corpus"]["name"],
    script:
        "../scripts/training_probes_table.py"
