rule measure_layer:
    input:
        unpack(get_index_files),
        unpack(get_fit_split),
        unpack(get_layer_shards),
        sentences="results/corpus/sentences.parquet",
    output:
        words="results/measures/{model}/{transform}/layer_{layer}.parquet",
        sentences="results/measures/{model}/{transform}/layer_{layer}.sentences.parquet",
        summary="results/measures/{model}/{transform}/layer_{layer}.json",
        degeneration_words="results/degeneration/{model}/{transform}/layer_{layer}.words.parquet",
        degeneration_bins="results/degeneration/{model}/{transform}/layer_{layer}.bins.parquet",
        degeneration_cone="results/degeneration/{model}/{transform}/layer_{layer}.cone.parquet",
        degeneration_positions="results/degeneration/{model}/{transform}/layer_{layer}.positions.parquet",
    log:
        "logs/measures/{model}/{transform}/layer_{layer}.log",
    benchmark:
        "benchmarks/measures/{model}/{transform}/layer_{layer}.tsv"
    wildcard_constraints:
        model=ctx.pattern(ctx.streamed_models(config, streamed=False)),
        transform=ctx.pattern(ctx.degeneration_transforms(config)),
    # First, so that the degeneration and paper figures run beside the other transforms.
    priority: 3
    conda:
        "../envs/contextuality.yaml"
    resources:
        mem_mb=ctx.measure_memory_mb,
    params:
        settings=ctx.measure_settings(config),
        model_settings=get_model_settings,
        transform_fit=get_transform_fit_settings,
        degeneration=ctx.degeneration_settings(config),
    script:
        "../scripts/measure_layer.py"


# The same job under the transforms whose degeneration analysis is not requested.
use rule measure_layer as measure_layer_without_degeneration with:
    output:
        words="results/measures/{model}/{transform}/layer_{layer}.parquet",
        sentences="results/measures/{model}/{transform}/layer_{layer}.sentences.parquet",
        summary="results/measures/{model}/{transform}/layer_{layer}.json",
    wildcard_constraints:
        model=ctx.pattern(ctx.streamed_models(config, streamed=False)),
        transform=ctx.pattern(ctx.transforms_without_degeneration(config)),
    priority: 1
    params:
        settings=ctx.measure_settings(config),
        model_settings=get_model_settings,
        transform_fit=get_transform_fit_settings,
        degeneration=None,


# A streamed model's layer, measured from its state file (transform none only).
rule measure_streamed_layer:
    input:
        unpack(get_index_files),
        unpack(get_layer_shards),
    output:
        words="results/measures/{model}/none/layer_{layer}.parquet",
        sentences="results/measures/{model}/none/layer_{layer}.sentences.parquet",
        summary="results/measures/{model}/none/layer_{layer}.json",
    log:
        "logs/measures/{model}/none/layer_{layer}.log",
    benchmark:
        "benchmarks/measures/{model}/none/layer_{layer}.tsv"
    wildcard_constraints:
        model=ctx.pattern(ctx.streamed_models(config)),
    conda:
        "../envs/contextuality.yaml"
    params:
        settings=ctx.measure_settings(config),
        model_settings=get_model_settings,
    script:
        "../scripts/measure_streamed_layer.py"


rule measures_table:
    input:
        summaries=get_layer_summaries,
        dimensions=ctx.dimension_files(config),
    output:
        table=report(
            "results/tables/measures.tsv",
            caption="../report/measures_table.rst",
            **ctx.report_section("measures_table"),
        ),
        provenance="results/tables/measures.provenance.json",
    log:
        "logs/tables/measures.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        # What the report's caption lists: the measures whose rows the table holds.
        measures=ctx.measures_in_run(config),
    script:
        "../scripts/measures_table.py"


# A table per census that the measures' rows gather across layers (`Measure.census`).
for census in ctx.censuses(config):

    rule:
        name:
            f"{census.name}_table"
        input:
            get_layer_summaries,
        output:
            table=report(
                f"results/tables/{census.name}.tsv",
                caption=ctx.record_caption(
                    workflow.source_path("../report/census_table.rst"), census=census
                ),
                **ctx.report_section(f"{census.name}_table"),
            ),
            provenance=f"results/tables/{census.name}.provenance.json",
        log:
            f"logs/tables/{census.name}.log",
        conda:
            "../envs/contextuality.yaml"
        params:
            census=census.name,
        script:
            "../scripts/census_table.py"


rule context_specific_words:
    input:
        get_layer_word_tables,
    output:
        table=report(
            "results/tables/words/{model}.{transform}.tsv",
            caption="../report/context_specific_words.rst",
            **ctx.report_section("context_specific_words"),
            labels={"model": "{model}", "transform": "{transform}"},
        ),
        provenance="results/tables/words/{model}.{transform}.provenance.json",
    log:
        "logs/tables/words/{model}.{transform}.log",
    conda:
        "../envs/contextuality.yaml"
    params:
        top=config["measures"]["top_words"],
    script:
        "../scripts/context_specific_words.py"


# The frequency bins and the position profiles of every analysed layer, in one job.
rule degeneration_table:
    input:
        bins=ctx.every_layer_output(config, ".bins.parquet", "degeneration"),
        positions=ctx.every_layer_output(config, ".positions.parquet", "degeneration"),
        special=ctx.special_token_files(config),
    output:
        table=report(
            "results/tables/degeneration.tsv",
            caption="../report/degeneration_table.rst",
            **ctx.report_section("degeneration_table"),
        ),
        provenance="results/tables/degeneration.provenance.json",
        positions=report(
            "results/tables/positions.tsv",
            caption="../report/positions_table.rst",
            **ctx.report_section("positions_table"),
        ),
        positions_provenance="results/tables/positions.provenance.json",
    log:
        "logs/tables/degeneration.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/degeneration_table.py"
