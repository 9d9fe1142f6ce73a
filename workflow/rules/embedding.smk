# A model's token embedding matrices themselves (Gao et al. 2019), apart from layer 0 (the
# embedding output for the corpus's occurrences): the input matrix, and the output one
# where the model has its own, measured against its tokens' counts in the corpus (and in
# the STS 2012-2016 sentences with embedding_matrices.sts_counts).
rule embedding_matrix:
    input:
        unpack(get_model_files),
        **ctx.embedding_matrix_frequency_corpora(config),
        sentences="results/corpus/sentences.parquet",
    output:
        measures="results/embedding_matrices/{model}/measures.parquet",
        norms="results/embedding_matrices/{model}/norms.parquet",
        spectra="results/embedding_matrices/{model}/spectra.parquet",
    log:
        "logs/embedding_matrices/{model}.log",
    benchmark:
        "benchmarks/embedding_matrices/{model}.tsv"
    wildcard_constraints:
        model=ctx.pattern(ctx.embedding_matrix_models(config)),
    conda:
        "../envs/contextuality.yaml"
    threads: 2
    resources:
        mem_mb=16000,
    params:
        settings=get_embedding_matrix_settings,
    script:
        "../scripts/embedding_matrix.py"


# Every model's matrices in three tables and one figure.
rule embedding_matrices:
    input:
        measures=ctx.embedding_matrix_files(config, "measures"),
        norms=ctx.embedding_matrix_files(config, "norms"),
        spectra=ctx.embedding_matrix_files(config, "spectra"),
    output:
        measures=report(
            "results/tables/embedding_matrices.tsv",
            caption="../report/embedding_matrices_table.rst",
            **ctx.report_section("embedding_matrices_table"),
        ),
        measures_provenance="results/tables/embedding_matrices.provenance.json",
        norms=report(
            "results/tables/embedding_matrix_norms.tsv",
            caption="../report/embedding_matrix_norms_table.rst",
            **ctx.report_section("embedding_matrix_norms_table"),
        ),
        norms_provenance="results/tables/embedding_matrix_norms.provenance.json",
        spectra=report(
            "results/tables/embedding_matrix_spectra.tsv",
            caption="../report/embedding_matrix_spectra_table.rst",
            **ctx.report_section("embedding_matrix_spectra_table"),
        ),
        spectra_provenance="results/tables/embedding_matrix_spectra.provenance.json",
        png=report(
            "results/figures/embedding_matrices.png",
            caption="../report/embedding_matrices_figure.rst",
            **ctx.report_section("embedding_matrices_figure"),
        ),
        pdf="results/figures/embedding_matrices.pdf",
    log:
        "logs/tables/embedding_matrices.log",
    conda:
        "../envs/contextuality.yaml"
    script:
        "../scripts/embedding_matrices.py"
