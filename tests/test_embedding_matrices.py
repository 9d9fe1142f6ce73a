"""The token embedding matrices in the workflow (config ``embedding_matrices``,
`steps.embedding`): a tiny GPT-2's and BERT's matrices measured against their tokens'
counts in a sentence table, gathered into the tables and the figure, and the jobs a dry
run plans with the section on, off, or set to what the schema refuses."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_workflow import _config, _write_corpus
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel
from workflow_runs import planned_jobs, snakemake, write_config

from contextuality import backends, steps, workflow
from contextuality.configuration.schema import with_defaults
from contextuality.corpus.settings import CorpusSettings
from contextuality.errors import InputDataError, ModelLoadError
from contextuality.extraction.token_counts import token_counts
from contextuality.files.tables import read_parquet_with_provenance, read_tsv, read_tsv_provenance
from contextuality.measures.embedding_matrix import LAYER

SENTENCES = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the cat watched.",
    "Bushfires forced hundreds of residents to leave their homes.",
    "The bank raised interest rates; the river bank flooded.",
]
EMBEDDING_JOBS = ("embedding_matrix", "embedding_matrices")


# A second frequency corpus, as the STS sentences are beside the config's.
OTHER_SENTENCES = ["The river rose.", "Residents left the park; the dog stayed."]


def _sentence_table(directory: Path, name: str, texts: list[str]) -> Path:
    """A sentence table of `texts`, as the corpus step writes it (corpus `name`)."""
    corpus = directory / f"{name}.txt"
    corpus.write_text("\n".join(texts) + "\n")
    text = {"path": str(corpus), "split_sentences": False}
    settings = CorpusSettings.from_config({"name": name, "source": "text", "text": text})
    steps.sentences(settings, [corpus], directory / f"{name}.parquet")
    return directory / f"{name}.parquet"


@pytest.fixture(scope="module")
def sentences(tmp_path_factory) -> Path:
    """A sentence table of `SENTENCES` (corpus "tiny")."""
    return _sentence_table(tmp_path_factory.mktemp("corpus"), "tiny", SENTENCES)


def _files(directory: Path) -> steps.MatrixFiles:
    return steps.MatrixFiles(*(directory / f"{kind}.parquet" for kind in steps.MatrixFiles.KINDS))


@pytest.fixture(scope="module")
def measured(tmp_path_factory, sentences, tiny_gpt2_dir, tiny_bert_dir) -> dict:
    """Model name → (its model directory, its files, its tables) of the step on the tiny
    GPT-2 and BERT."""
    found = {}
    for name, directory in (("gpt2", tiny_gpt2_dir), ("bert", tiny_bert_dir)):
        files = _files(tmp_path_factory.mktemp(name))
        tables = steps.embedding_matrix(
            backends.model_settings(name, {"source": str(directory)}), [sentences], files
        )
        found[name] = (directory, files, tables)
    return found


def _brute_force_counts(model_dir: Path, n_rows: int, texts: list[str] = SENTENCES) -> np.ndarray:
    """Each token id's count over `texts`, each tokenized alone without special tokens."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    counted = Counter(
        token
        for sentence in texts
        for token in tokenizer(sentence, add_special_tokens=False)["input_ids"]
    )
    counts = np.zeros(n_rows, dtype=np.int64)
    for token, count in counted.items():
        counts[token] = count
    return counts


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_token_counts_are_the_tokenizer_s_ids_counted_one_by_one(
    name, tiny_gpt2_dir, tiny_bert_dir
):
    directory = {"gpt2": tiny_gpt2_dir, "bert": tiny_bert_dir}[name]
    loaded = backends.load_model(backends.model_settings(name, {"source": str(directory)}))
    n_rows = loaded.model.get_input_embeddings().weight.shape[0]
    counts = token_counts(loaded.encoder, SENTENCES, n_rows)
    assert counts.shape == (n_rows,)
    np.testing.assert_array_equal(counts, _brute_force_counts(directory, n_rows))
    with pytest.raises(ModelLoadError, match="beyond the 5 rows"):
        token_counts(loaded.encoder, SENTENCES, 5)


def test_each_model_s_rows_describe_its_matrices(measured):
    """One row per matrix, under layer "embedding matrix", over every row of the matrix; the
    tiny GPT-2's output embedding is its input's tensor (tied), the tiny BERT's files hold no
    head (tied unknown, no output row); the counts are the tokenizer's."""
    for name, (directory, files, tables) in measured.items():
        rows, provenance = read_parquet_with_provenance(files.measures)
        pd.testing.assert_frame_equal(rows, tables.measures)
        assert list(rows["layer"]) == [LAYER] and list(rows["matrix"]) == ["input"]
        assert list(rows["frequency_corpus"]) == ["tiny"]
        n_rows = {"gpt2": 300, "bert": 120}[name]
        assert rows["n_rows"].item() == n_rows and rows["dimensions"].item() == 32
        counts = _brute_force_counts(directory, n_rows)
        assert rows["n_seen"].item() == np.count_nonzero(counts)
        assert provenance["frequency_corpora"]["tiny"]["tokens"] == counts.sum()
        norms, _ = read_parquet_with_provenance(files.norms)
        assert norms["n_tokens"].sum() == n_rows
        assert norms["mean_count"] @ norms["n_tokens"] == pytest.approx(counts.sum())
        assert provenance["model"] == name and list(provenance["frequency_corpora"]) == ["tiny"]
        assert {"config_hash", "package_version", "model_revision"} <= set(provenance)
    assert list(measured["gpt2"][2].measures["tied"]) == [True]
    assert measured["bert"][2].measures["tied"].isna().all()


def test_each_frequency_corpus_has_its_rows_counted_in_its_own_sentences(
    tmp_path, sentences, measured, tiny_gpt2_dir
):
    """With a second sentence table (the STS sentences, with embedding_matrices.sts_counts)
    each matrix has a row per corpus, the first corpus's rows those of the step run on it
    alone and the second's counted in its own sentences; two tables of one corpus name are
    refused."""
    other = _sentence_table(tmp_path, "other", OTHER_SENTENCES)
    spec = backends.model_settings("gpt2", {"source": str(tiny_gpt2_dir)})
    tables = steps.embedding_matrix(spec, [sentences, other], _files(tmp_path / "both"))
    rows = tables.measures.set_index("frequency_corpus")
    assert list(rows.index) == ["tiny", "other"]
    alone = measured["gpt2"][2].measures.set_index("frequency_corpus")
    pd.testing.assert_series_equal(rows.loc["tiny"], alone.loc["tiny"])
    counts = _brute_force_counts(tiny_gpt2_dir, 300, OTHER_SENTENCES)
    assert rows.loc["other", "n_seen"] == np.count_nonzero(counts)
    other_norms = tables.norms[tables.norms["frequency_corpus"] == "other"]
    assert other_norms["mean_count"] @ other_norms["n_tokens"] == pytest.approx(counts.sum())
    with pytest.raises(InputDataError, match="share a name"):
        steps.embedding_matrix(spec, [sentences, sentences], _files(tmp_path / "twice"))


def test_an_untied_head_is_measured_as_an_output_matrix(tmp_path, sentences, tiny_gpt2_dir):
    """A GPT-2 saved with a language-modelling head of its own: an output row, not tied."""
    directory = shutil.copytree(tiny_gpt2_dir, tmp_path / "untied")
    config = GPT2Config.from_pretrained(directory, tie_word_embeddings=False)
    GPT2LMHeadModel(config).save_pretrained(directory)
    tables = steps.embedding_matrix(
        backends.model_settings("untied", {"source": str(directory)}),
        [sentences],
        _files(tmp_path / "files"),
    )
    assert list(tables.measures["matrix"]) == ["input", "output"]
    assert not tables.measures["tied"].any()
    assert set(tables.spectra["matrix"]) == {"input", "output"}


def test_the_tables_gather_every_model_under_the_embedding_matrix_layer(tmp_path, measured):
    outputs = steps.MatrixFiles(*(tmp_path / f"{kind}.tsv" for kind in steps.MatrixFiles.KINDS))
    figures = [tmp_path / "embedding_matrices.png", tmp_path / "embedding_matrices.pdf"]
    steps.embedding_matrices([files for _, files, _ in measured.values()], outputs, figures)
    table = read_tsv(outputs.measures)
    assert list(table["model"]) == ["gpt2", "bert"]
    assert set(table["layer"]) == {LAYER}
    assert set(read_tsv(outputs.norms)["model"]) == set(read_tsv(outputs.spectra)["model"])
    sources = read_tsv_provenance(outputs.measures)["sources"]
    assert [source["model"] for source in sources] == ["gpt2", "bert"]
    assert all(path.stat().st_size > 0 for path in figures)


def test_the_models_measured_leave_out_ablated_copies_and_elmo(tiny_gpt2_dir, tiny_elmo_dir):
    gpt2 = {"source": str(tiny_gpt2_dir), "layers": [0, 2]}
    models = {
        "gpt2": gpt2,
        "gpt2-zeroed": gpt2 | {"ablation": {"block": 1, "target": "massive", "value": "zero"}},
        "gpt2-random": gpt2 | {"random_weights_seed": 3},
        "elmo": {"source": str(tiny_elmo_dir), "loader": "elmo", "layers": [0]},
    }
    config = with_defaults({"corpus": {"source": "text"}, "models": models})
    assert workflow.embedding_matrix_models(config) == []
    config["embedding_matrices"]["activate"] = True
    assert workflow.embedding_matrix_models(config) == ["gpt2", "gpt2-random"]
    settings = workflow.embedding_matrix_settings(config, "gpt2")
    assert settings["source"] == str(tiny_gpt2_dir) and "layers" not in settings


def test_a_dry_run_plans_the_jobs_when_activated_and_refuses_what_is_not_a_boolean(
    tmp_path, tiny_gpt2_dir
):
    _write_corpus(tmp_path / "corpus.txt")
    config = _config(
        tmp_path / "corpus.txt", {"gpt2": {"source": str(tiny_gpt2_dir), "layers": [0]}}
    )
    write_config(tmp_path, config)
    assert not set(EMBEDDING_JOBS) & set(planned_jobs(tmp_path))
    write_config(tmp_path, config | {"embedding_matrices": {"activate": True}})
    planned = planned_jobs(tmp_path)
    assert {job: planned.get(job) for job in EMBEDDING_JOBS} == dict.fromkeys(EMBEDDING_JOBS, 1)
    assert "sts_sentences" not in planned
    write_config(tmp_path, config | {"embedding_matrices": {"activate": True, "sts_counts": True}})
    assert planned_jobs(tmp_path).get("sts_sentences") == 1
    write_config(tmp_path, config | {"embedding_matrices": {"activate": "maybe"}})
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    problems = [line.strip() for line in result.stderr.splitlines() if "embedding_matrices" in line]
    assert problems == ["embedding_matrices.activate: 'maybe' is not of type 'boolean'"]
