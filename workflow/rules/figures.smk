rule figures:
    input:
        "results/tables/measures.tsv",
    output:
        *[
            report(
                f"results/figures/{name}.png",
                caption="../report/figure.rst",
                category="Figures",
                labels={"figure": name},
            )
            for name in FIGURES
        ],
        expand("results/figures/{name}.pdf", name=FIGURES),
    log:
        "logs/figures/figures.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        relative_layers=config["figures"]["relative_layers"],
    script:
        "../scripts/figures.py"


rule figures_under_transform:
    input:
        "results/tables/measures.tsv",
    output:
        *[
            report(
                f"results/figures/{{transform}}/{name}.png",
                caption="../report/figure.rst",
                category="Figures",
                labels={"figure": name, "transform": "{transform}"},
            )
            for name in FIGURES
        ],
        expand("results/figures/{{transform}}/{name}.pdf", name=FIGURES),
    log:
        "logs/figures/{transform}/figures.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        relative_layers=config["figures"]["relative_layers"],
    script:
        "../scripts/figures.py"


rule degeneration_figures:
    input:
        words=get_degeneration_words,
        bins=get_degeneration_bins,
        cones=get_degeneration_cones,
    output:
        report(
            expand(
                "results/figures/degeneration/{{model}}.{{transform}}.{kind}.png",
                kind=DEGENERATION_FIGURES,
            ),
            caption="../report/degeneration_figures.rst",
            category="Degeneration",
            labels={"model": "{model}", "transform": "{transform}"},
        ),
        expand(
            "results/figures/degeneration/{{model}}.{{transform}}.{kind}.pdf",
            kind=DEGENERATION_FIGURES,
        ),
    log:
        "logs/figures/degeneration/{model}.{transform}.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/degeneration_figures.py"


rule transforms_figure:
    input:
        "results/tables/measures.tsv",
    output:
        png=report(
            "results/figures/transforms.png",
            caption="../report/transforms_figure.rst",
            category="Figures",
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
