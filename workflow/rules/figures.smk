# The paper's figures under each of figures.transforms: one rule per transform, writing
# into results/figures/ (none) or results/figures/<transform>/.
for transform in ctx.figure_transforms(config):

    rule:
        name:
            f"figures_{transform}"
        # The transform's own layer summaries: its figures need not wait for the others.
        input:
            ctx.every_layer_output(config, ".json", transform=transform),
        output:
            *[
                report(
                    f"{ctx.figures_directory(transform)}/{name}.png",
                    caption=figure_caption(name),
                    **ctx.report_section(name, transform),
                    labels={"figure": name, "transform": transform},
                )
                for name in ctx.paper_figure_names(config)
            ],
            expand(
                "{directory}/{name}.pdf",
                directory=ctx.figures_directory(transform),
                name=ctx.paper_figure_names(config),
            ),
        log:
            f"logs/figures/{transform}.log",
        # Before the measures of later transforms: they fill the cores to the end.
        priority: 2
        conda:
            "../envs/contextuality.yaml"
        params:
            transform=transform,
            relative_layers=config["figures"]["relative_layers"],
        script:
            "../scripts/figures.py"


rule degeneration_figures:
    input:
        words=get_degeneration_words,
        bins=get_degeneration_bins,
        cones=get_degeneration_cones,
    output:
        *[
            report(
                f"results/figures/degeneration/{{model}}.{{transform}}.{kind}.png",
                caption=f"../report/figures/{kind}.rst",
                **ctx.report_section("degeneration_figures"),
                labels={
                    "figure": kind,
                    "model": "{model}",
                    "transform": "{transform}",
                },
            )
            for kind in DEGENERATION_FIGURES
        ],
        expand(
            "results/figures/degeneration/{{model}}.{{transform}}.{kind}.pdf",
            kind=DEGENERATION_FIGURES,
        ),
    log:
        "logs/figures/degeneration/{model}.{transform}.log",
    priority: 2
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/degeneration_figures.py"


rule transforms_figure:
    # The layer summaries, not the table gathering them: one job less before it.
    input:
        ctx.every_layer_output(config, ".json"),
    output:
        png=report(
            "results/figures/transforms.png",
            caption=ctx.record_caption(
                workflow.source_path("../report/transforms_figure.rst")
            ),
            **ctx.report_section("transforms_figure"),
        ),
        pdf="results/figures/transforms.pdf",
    log:
        "logs/figures/transforms.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        relative_layers=config["figures"]["relative_layers"],
    script:
        "../scripts/transforms_figure.py"


rule sweep_figure:
    input:
        get_sweep_summaries,
    output:
        png=report(
            "results/figures/sweeps/{sweep}.png",
            caption=f"../report/figures/{SWEEP_FIGURE}.rst",
            **ctx.report_section("sweep_figure"),
            labels={"sweep": "{sweep}"},
        ),
        pdf="results/figures/sweeps/{sweep}.pdf",
    log:
        "logs/figures/sweeps/{sweep}.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        steps=get_sweep_steps,
    script:
        "../scripts/sweep_figure.py"


rule family_figure:
    input:
        summaries=get_family_summaries,
        metas=get_family_metas,
    output:
        png=report(
            "results/figures/families/{family}.png",
            caption=f"../report/figures/{FAMILY_FIGURE}.rst",
            **ctx.report_section("family_figure"),
            labels={"family": "{family}"},
        ),
        pdf="results/figures/families/{family}.pdf",
    log:
        "logs/figures/families/{family}.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/family_figure.py"


rule ablation_figure:
    input:
        measures="results/tables/measures.tsv",
        alignment=ctx.ablation_alignment(config),
    output:
        png=report(
            "results/figures/ablation/{model}.png",
            caption=ctx.record_caption(
                workflow.source_path(f"../report/figures/{ABLATION_FIGURE}.rst")
            ),
            **ctx.report_section("ablation_figure"),
            labels={"model": "{model}"},
        ),
        pdf="results/figures/ablation/{model}.pdf",
    log:
        "logs/figures/ablation/{model}.log",
    wildcard_constraints:
        model=ctx.pattern(list(ctx.ablated_models(config))),
    conda:
        "../envs/contextuality.yaml"
    params:
        base=get_ablation_base,
        block=get_ablation_block,
    script:
        "../scripts/ablation_figure.py"


rule geometry_figures:
    input:
        dimensions=ctx.dimension_files(config),
        dimension_scales="results/tables/dimension_scales.tsv",
        alignment="results/tables/alignment.tsv",
        best_layers="results/tables/best_layers.tsv",
        positions=ctx.positions_table_files(config),
    output:
        *[
            report(
                f"results/figures/{name}.png",
                caption=ctx.record_caption(
                    workflow.source_path(f"../report/figures/{name}.rst")
                ),
                **ctx.report_section(name),
                labels={"figure": name},
            )
            for name in ctx.geometry_figure_names(config)
        ],
        expand("results/figures/{name}.pdf", name=ctx.geometry_figure_names(config)),
    log:
        "logs/figures/geometry.log",
    priority: 2
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/geometry_figures.py"
