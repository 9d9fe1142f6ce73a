rule figure:
    input:
        "results/tables/measures.tsv",
    output:
        png=report(
            "results/figures/fig{number}_{name}.png",
            caption="../report/figure.rst",
            category="Figures",
            labels={"figure": "{number}", "measure": "{name}"},
        ),
        pdf="results/figures/fig{number}_{name}.pdf",
    log:
        "logs/figures/fig{number}_{name}.log",
    wildcard_constraints:
        number=r"[1-4]",
    conda:
        "../envs/contextuality.yaml"
    params:
        relative_layers=config["figures"]["relative_layers"],
    script:
        "../scripts/figure.py"
