from snakemake.utils import validate

from contextuality import workflow as ctx
from contextuality.figures.specs import (
    ABLATION_FIGURE,
    DEGENERATION_FIGURES,
    FAMILY_FIGURE,
    SWEEP_FIGURE,
    figure_caption,
)

ctx.plan_config(
    config,
    workflow.overwrite_configfiles,
    workflow.source_path("../schemas/config.schema.yaml"),
    workflow.configfiles,
)
validate(config, schema="../schemas/config.schema.yaml", set_default=True)
ctx.check_planned_inputs(config, dry_run=workflow.output_settings.dryrun)
if workflow.is_main_process:
    ctx.warn_unnamed_layers(config)


onstart:
    ctx.check_run_devices(config, local_run=workflow.local_exec)


wildcard_constraints:
    **ctx.wildcard_constraints(config),


# Downloads by their published checksums and outside files by their fingerprint records,
# not by time stamps (contextuality.workflow.inputs).
def get_corpus_inputs(wildcards):
    return {
        "archives": ancient(ctx.corpus_archives(config)),
        "files": ctx.input_record(config, "corpus"),
    }


def task_archive_inputs():
    return {name: ancient(path) for name, path in ctx.task_archives().items()}


def get_run_settings(wildcards):
    return ctx.run_settings(config, wildcards.run)


def get_index_files(wildcards):
    return ctx.index_files(config, wildcards.model)


def get_subword_settings_record(wildcards):
    return ctx.settings_record(config, ctx.SUBWORD_STAGE + wildcards.tokenizer)


def get_input_checksums(wildcards):
    return ctx.input_checksums(config, wildcards.source)


def get_stage_settings(wildcards):
    return ctx.stage_settings(config, wildcards.stage)


def get_tokenizer_settings(wildcards):
    return ctx.subword_tokenizers(config)[wildcards.tokenizer]


def get_model_layers(wildcards):
    return ctx.model_layers(config, wildcards.model)


def get_model_settings(wildcards):
    return ctx.vector_settings(config, wildcards.model)


# A model's own files: their fingerprint record, those the workflow downloads, and the
# checkpoints directory of the run it is a checkpoint of.
def model_file_inputs(model):
    return {
        "model_files": ctx.input_record(config, ctx.MODEL_SOURCE + model),
        "downloads": ancient(ctx.downloaded_model_files(config, model)),
        **ctx.trained_model_inputs(config, model),
    }


def get_model_files(wildcards):
    return model_file_inputs(wildcards.model)


def get_embedding_matrix_settings(wildcards):
    return ctx.embedding_matrix_settings(config, wildcards.model)


def get_forward_settings(wildcards):
    return ctx.forward_settings(config, wildcards.model)


def get_special_token_inputs(wildcards):
    model = wildcards.model
    return ctx.special_token_inputs(config, model) | model_file_inputs(model)


def get_model_gpus(wildcards):
    return ctx.model_gpus(config, wildcards.model)


def get_layer_shards(wildcards):
    return ctx.layer_shards(config, wildcards.model, wildcards.layer)


def get_fit_split(wildcards):
    if wildcards.transform == "none":
        return {}
    return {"split": "results/corpus/fit_split.parquet"}


def get_transform_fit_settings(wildcards):
    return ctx.transform_fit_settings(config, wildcards.transform)


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


def get_published_files(wildcards):
    return ancient(ctx.published_files(ctx.compared_models(config)[wildcards.model]))


def get_model_summaries(wildcards):
    return ctx.layer_outputs(config, wildcards.model, "none", ".json")


def get_model_word_tables(wildcards):
    return ctx.layer_outputs(config, wildcards.model, "none", ".parquet")


def get_benchmark_files(wildcards):
    return ancient(ctx.benchmark_files(config))


def get_static_vectors(wildcards):
    if wildcards.embedding.startswith("compare/"):
        name = wildcards.embedding.removeprefix("compare/")
        return ctx.input_record(config, ctx.COMPARE_SOURCE + name)
    return ctx.static_vectors_file(config, wildcards.embedding)


def get_static_vectors_file(wildcards):
    return ctx.static_vectors_file(config, wildcards.embedding)


def get_static_scores(wildcards):
    return ctx.static_score_paths(config)


def get_model_shards(wildcards):
    return ctx.model_shards(config, wildcards.model)


def get_pair_shards(wildcards):
    return ctx.pair_shards(config, wildcards.model_a, wildcards.model_b)


def get_pair_index_files(wildcards):
    return ctx.index_files(config, wildcards.model_a)


def get_pair_model_settings(wildcards):
    return {
        model: ctx.vector_settings(config, model)
        for model in (wildcards.model_a, wildcards.model_b)
    }


def get_sweep_summaries(wildcards):
    return ctx.sweep_summaries(config, wildcards.sweep)


def get_sweep_steps(wildcards):
    return ctx.sweeps(config)[wildcards.sweep]


def get_family_summaries(wildcards):
    return ctx.family_summaries(config, wildcards.family)


def get_family_metas(wildcards):
    return ctx.family_metas(config, wildcards.family)


def get_ablation_base(wildcards):
    return ctx.ablated_models(config)[wildcards.model]


def get_ablation_block(wildcards):
    return config["models"][wildcards.model]["ablation"]["block"]
