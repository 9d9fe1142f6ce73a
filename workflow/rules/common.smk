import re

from snakemake.utils import validate

from contextuality import workflow as ctx
from contextuality.degeneration_figures import DEGENERATION_FIGURES
from contextuality.figures import FIGURES
from contextuality.models import ModelSpec

ctx.check_config(config, workflow.source_path("../schemas/config.schema.yaml"))
validate(config, schema="../schemas/config.schema.yaml", set_default=True)


wildcard_constraints:
    model="|".join(ctx.model_names(config)),
    tokenizer="|".join(map(re.escape, ctx.subword_tokenizers(config))),
    transform="|".join(config["measures"]["transforms"]),
    layer=r"\d+",
    year=r"\d{4}",
    part=ctx.PART_PATTERN,


def final_outputs(config):
    return ctx.final_outputs(config)


def get_corpus_inputs(wildcards):
    return ctx.corpus_inputs(config)


def get_sts_mirror():
    return config["corpus"]["sts"]["mirror"]


def get_elmo_mirror():
    return config["elmo"]["mirror"]


def get_elmo_checksums():
    return config["elmo"]["checksums"]


def get_index_files(wildcards):
    return ctx.index_files(config, wildcards.model)


def get_tokenizer_settings(wildcards):
    return ctx.subword_tokenizers(config)[wildcards.tokenizer]


def get_subword_index_settings():
    return {
        key: config["index"][key]
        for key in ("min_contexts", "exclude_punctuation", "count_by")
    }


def get_model_settings(model):
    return ModelSpec.from_config(model, config["models"][model]).settings()


def get_model_settings_of(wildcards):
    return get_model_settings(wildcards.model)


def get_layer_shards(wildcards):
    return ctx.layer_shards(config, wildcards.model, wildcards.layer)


def get_model_gpus(model):
    return config["models"][model].get("gpus", 0)


def get_measure_settings():
    return {
        key: value
        for key, value in config["measures"].items()
        if key not in ("transforms", "top_words", "correction")
    }


def get_degeneration_settings():
    return {
        key: value
        for key, value in config["degeneration"].items()
        if key != "transforms"
    }


def get_transforms_without_degeneration():
    return [
        transform
        for transform in config["measures"]["transforms"]
        if transform not in ctx.degeneration_transforms(config)
    ]


def get_correction_split(wildcards):
    if wildcards.transform == "none":
        return {}
    return {"split": "results/corpus/correction_split.parquet"}


def get_correction_settings(wildcards):
    if wildcards.transform == "none":
        return {}
    return {**config["measures"]["correction"], "seed": config["measures"]["seed"]}


def get_degeneration_words(wildcards):
    return ctx.layer_outputs(
        config, wildcards.model, wildcards.transform, ".words.parquet", "degeneration"
    )


def get_degeneration_bins(wildcards):
    return ctx.layer_outputs(
        config, wildcards.model, wildcards.transform, ".bins.parquet", "degeneration"
    )


def get_degeneration_cones(wildcards):
    return ctx.layer_outputs(
        config, wildcards.model, wildcards.transform, ".cone.parquet", "degeneration"
    )


def get_layer_summaries(wildcards):
    return ctx.every_layer_output(config, ".json")


def get_layer_word_tables(wildcards):
    return ctx.layer_outputs(config, wildcards.model, wildcards.transform, ".parquet")


def get_reference_mirror():
    return config["reference"]["mirror"]


def get_published_files(wildcards):
    return ctx.published_files(ctx.compared_models(config)[wildcards.model])


def get_model_summaries(wildcards):
    return ctx.layer_outputs(config, wildcards.model, "none", ".json")


def get_model_word_tables(wildcards):
    return ctx.layer_outputs(config, wildcards.model, "none", ".parquet")


def get_benchmark_mirror():
    return config["static"]["mirror"]


def get_benchmark_files(wildcards):
    return ctx.benchmark_files(config)


def get_static_settings():
    return {key: config["static"][key] for key in ("benchmarks", "lowercase", "oov")}


def get_comparison_vectors(wildcards):
    return config["static"]["compare"][wildcards.name]


def get_static_scores(wildcards):
    return ctx.static_score_paths(config)
