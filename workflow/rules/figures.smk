rule figure:
    input:
        "results/tables/measures.tsv",
    output:
        png=report(
            "results/figures/{name}.png",
            caption="../report/figure.rst",
            category="Figures",
            labels={"figure": "{name}"},
        ),
        pdf="results/figures/{name}.pdf",
    log:
        "logs/figures/{name}.log",
    wildcard_constraints:
        name="|".join(FIGURES),
    conda:
        "../envs/contextuality.yaml"
    params:
        relative_layers=config["figures"]["relative_layers"],
    script:
        "../scripts/figure.py"
