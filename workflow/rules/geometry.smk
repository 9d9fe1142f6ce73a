# The geometry of each stored model's layers, beyond the paper: intrinsic dimension, one
# job a layer (curves over scale, and the value on their plateau), and the alignment
# between layers, and between models on the same occurrences (CKA, Procrustes, mutual
# k-NN, CKNNA); as stored and under each correction of geometry.transforms.


rule layer_dimension:
    input:
        unpack(get_index_files),
        unpack(get_layer_shards),
        unpack(get_fit_split),
    output:
        dimension="results/geometry/{model}/{transform}/dimension/layer_{layer}.json",
        curves="results/geometry/{model}/{transform}/dimension/layer_{layer}.parquet",
    log:
        "logs/geometry/{model}/{transform}/dimension/layer_{layer}.log",
    benchmark:
        "benchmarks/geometry/{model}/{transform}/dimension/layer_{layer}.tsv"
    wildcard_constraints:
        model=ctx.pattern(ctx.geometry_models(config)),
        transform=ctx.pattern(ctx.geometry_transforms(config)),
        layer=r"\d+",
    # Beside the measure jobs, not after them: the measures table waits for it.
    priority: 2
    conda:
        "../envs/contextuality.yaml"
    # Its searches and products run on every thread it is given (BLAS, FAISS, torch);
    # Snakemake gives it at most --cores (--set-threads in a profile sets another number).
    threads: 8
    resources:
        mem_mb=ctx.geometry_memory_mb(config, "intrinsic_dimension"),
        runtime=ctx.geometry_runtime_minutes(config, "intrinsic_dimension"),
    params:
        settings=ctx.geometry_settings(config, "intrinsic_dimension"),
        model_settings=get_model_settings,
        transform_fit=get_transform_fit_settings,
    script:
        "../scripts/layer_dimension.py"


rule layer_alignment:
    input:
        unpack(get_index_files),
        unpack(get_model_shards),
        unpack(get_fit_split),
    output:
        alignment="results/geometry/{model}/{transform}/alignment.parquet",
    log:
        "logs/geometry/{model}/{transform}/alignment.log",
    benchmark:
        "benchmarks/geometry/{model}/{transform}/alignment.tsv"
    wildcard_constraints:
        model=ctx.pattern(ctx.geometry_models(config)),
        transform=ctx.pattern(ctx.geometry_transforms(config)),
    conda:
        "../envs/contextuality.yaml"
    threads: 8
    resources:
        mem_mb=ctx.geometry_memory_mb(config, "alignment", word_baselines=True),
        runtime=ctx.geometry_runtime_minutes(config, "alignment", word_baselines=True),
    params:
        settings=ctx.geometry_settings(config, "alignment"),
        model_settings=get_model_settings,
        transform_fit=get_transform_fit_settings,
    script:
        "../scripts/layer_alignment.py"


rule alignment_between_models:
    input:
        unpack(get_pair_index_files),
        unpack(get_pair_shards),
        unpack(get_fit_split),
    output:
        alignment="results/geometry/alignment_between_models/{transform}/{model_a}~{model_b}.parquet",
        best_layers="results/geometry/alignment_between_models/{transform}/{model_a}~{model_b}.best_layers.parquet",
    log:
        "logs/geometry/alignment_between_models/{transform}/{model_a}~{model_b}.log",
    benchmark:
        "benchmarks/geometry/alignment_between_models/{transform}/{model_a}~{model_b}.tsv"
    wildcard_constraints:
        transform=ctx.pattern(ctx.geometry_transforms(config)),
    conda:
        "../envs/contextuality.yaml"
    threads: 8
    resources:
        mem_mb=ctx.geometry_memory_mb(config, "alignment"),
        runtime=ctx.geometry_runtime_minutes(config, "alignment"),
    params:
        settings=ctx.geometry_settings(config, "alignment"),
        model_settings=get_pair_model_settings,
        transform_fit=get_transform_fit_settings,
    script:
        "../scripts/alignment_between_models.py"


rule alignment_table:
    input:
        alignment=ctx.alignment_files(config),
        best_layers=ctx.best_layer_files(config),
    output:
        table=report(
            "results/tables/alignment.tsv",
            caption=ctx.record_caption(
                workflow.source_path("../report/alignment_table.rst")
            ),
            **ctx.report_section("alignment_table"),
        ),
        provenance="results/tables/alignment.provenance.json",
        best_layers=report(
            "results/tables/best_layers.tsv",
            caption=ctx.record_caption(
                workflow.source_path("../report/best_layers_table.rst")
            ),
            **ctx.report_section("best_layers_table"),
        ),
        best_layers_provenance="results/tables/best_layers.provenance.json",
    log:
        "logs/tables/alignment.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/alignment_table.py"


rule dimension_scales_table:
    input:
        ctx.dimension_curve_files(config),
    output:
        table=report(
            "results/tables/dimension_scales.tsv",
            caption="../report/dimension_scales_table.rst",
            **ctx.report_section("dimension_scales_table"),
        ),
        provenance="results/tables/dimension_scales.provenance.json",
    log:
        "logs/tables/dimension_scales.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/dimension_scales_table.py"


# How far a map of best-matching layers holds (config alignment_sensitivity): each pair of
# models aligned by mutual k-NN at every sample size, seed and k, then every pair's rows
# gathered into tables and a figure.
rule alignment_sensitivity:
    input:
        unpack(get_pair_index_files),
        unpack(get_pair_shards),
    output:
        "results/geometry/alignment_sensitivity/{model_a}~{model_b}.parquet",
    log:
        "logs/geometry/alignment_sensitivity/{model_a}~{model_b}.log",
    benchmark:
        "benchmarks/geometry/alignment_sensitivity/{model_a}~{model_b}.tsv"
    conda:
        "../envs/contextuality.yaml"
    threads: 8
    params:
        settings=ctx.geometry_settings(config, "alignment"),
        sensitivity=ctx.sensitivity_settings(config),
        model_settings=get_pair_model_settings,
    script:
        "../scripts/alignment_sensitivity.py"


rule alignment_sensitivity_tables:
    input:
        ctx.sensitivity_files(config),
    output:
        rows=report(
            "results/tables/alignment_sensitivity.tsv",
            caption="../report/alignment_sensitivity_table.rst",
            **ctx.report_section("alignment_sensitivity_table"),
        ),
        rows_provenance="results/tables/alignment_sensitivity.provenance.json",
        matches=report(
            "results/tables/alignment_sensitivity_matches.tsv",
            caption="../report/alignment_sensitivity_matches_table.rst",
            **ctx.report_section("alignment_sensitivity_matches_table"),
        ),
        matches_provenance="results/tables/alignment_sensitivity_matches.provenance.json",
        seeds=report(
            "results/tables/alignment_sensitivity_seeds.tsv",
            caption="../report/alignment_sensitivity_seeds_table.rst",
            **ctx.report_section("alignment_sensitivity_seeds_table"),
        ),
        seeds_provenance="results/tables/alignment_sensitivity_seeds.provenance.json",
        png=report(
            "results/figures/alignment_sensitivity.png",
            caption="../report/alignment_sensitivity_figure.rst",
            **ctx.report_section("alignment_sensitivity_figure"),
        ),
        pdf="results/figures/alignment_sensitivity.pdf",
    log:
        "logs/tables/alignment_sensitivity.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/alignment_sensitivity_tables.py"
