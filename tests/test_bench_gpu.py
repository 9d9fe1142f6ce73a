"""The GPU acceptance run's own parts (bench/gpu/, bench/random_models.py): models built the
same everywhere, the table comparison and its tolerances, and the wheel list's check.
The run itself is exercised by its CPU mode (`bash bench/gpu/run.sh --cpu`, in CI)."""

from __future__ import annotations

import ast
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contextuality.corpus.words import split_words

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path[:0] = [str(BENCH / "gpu"), str(BENCH)]

import compare  # noqa: E402
import prepare  # noqa: E402
import random_models  # noqa: E402

SENTENCES = [
    "The bank raised its rates again.",
    "She sat on the river bank, and the bank was wet.",
    "Rates fell; the bank's rates rose.",
]
TINY_BERT = {**random_models.BERT_TINY, "hidden_size": 16, "intermediate_size": 32}


def test_wordpiece_vocabulary_is_specials_characters_then_frequent_words():
    vocabulary = random_models.wordpiece_vocabulary(SENTENCES, 1000)
    assert vocabulary[:5] == random_models.SPECIAL_WORDPIECE
    characters = sorted(set("".join(SENTENCES).replace(" ", "")))
    assert vocabulary[5 : 5 + len(characters)] == characters
    assert "##a" in vocabulary and len(vocabulary) == len(set(vocabulary))
    words = vocabulary[5 + 2 * len(characters) :]
    counts = Counter(word for sentence in SENTENCES for word in split_words(sentence))
    assert words[:3] == ["bank", "the", "rates"]  # 3, 3 (a tie: alphabetical), 2
    order = [(-counts[word], word) for word in words]
    assert order == sorted(order) and set(words) == set(counts) - set(characters)
    assert len(random_models.wordpiece_vocabulary(SENTENCES, 60)) == 60


def test_byte_level_tokenizer_reads_every_byte_with_offsets():
    tokenizer = random_models.byte_level_tokenizer()
    text = "Café, naïve 1,650!"
    encoded = tokenizer(text, return_offsets_mapping=True)
    assert len(encoded.input_ids) == len(text.encode())
    assert tokenizer.decode(encoded.input_ids) == text
    assert {start for start, _ in encoded.offset_mapping} == set(range(len(text)))


def test_models_are_the_same_on_every_build_and_differ_by_seed(tmp_path):
    first = random_models.save_bert(tmp_path / "a", SENTENCES, TINY_BERT)
    again = random_models.save_bert(tmp_path / "b", SENTENCES, TINY_BERT)
    other = random_models.save_bert(tmp_path / "c", SENTENCES, TINY_BERT, seed=1)
    assert random_models.fingerprint(first) == random_models.fingerprint(again)
    assert random_models.fingerprint(first) != random_models.fingerprint(other)
    from safetensors.numpy import load_file

    tensors = load_file(first / "model.safetensors")
    norm = np.concatenate([tensors[name] for name in tensors if "LayerNorm.weight" in name])
    assert abs(norm.mean() - 1) < 0.05 and abs(norm.std() - random_models.NORM_WEIGHT_STD) < 0.05
    weights = tensors["embeddings.word_embeddings.weight"]
    assert abs(weights.std() - random_models.INIT_STD) < 0.002


def _measures(values: list[float], n: int = 10) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": "m",
            "transform": "none",
            "layer": range(len(values)),
            "measure": ["selfsim", "intrinsic_dimension[twonn]", "effective_rank"][: len(values)],
            "raw": values,
            "n": n,
        }
    )


def test_comparison_applies_each_familys_tolerance():
    expected = _measures([0.5, 10.0, 100.0])
    within = _measures([0.509, 10.45, 101.9])  # 0.01 abs; 5 % and 2 % relative
    assert not compare.compare_table("measures.tsv", within, expected, "cuda").failures
    beyond = _measures([0.511, 10.0, 100.0])
    failures = compare.compare_table("measures.tsv", beyond, expected, "cuda").failures
    assert len(failures) == 1 and "m/none/0/selfsim raw" in failures[0]
    assert compare.compare_table("measures.tsv", within, expected, "cpu").failures


def test_comparison_refuses_missing_rows_other_counts_and_one_sided_nan():
    expected = _measures([0.5, 10.0])
    failures = compare.compare_table("measures.tsv", expected.iloc[:1], expected, "cuda").failures
    assert failures == [
        "measures.tsv: row ('m', 'none', 1, 'intrinsic_dimension[twonn]') expected only"
    ]
    counted = compare.compare_table("measures.tsv", _measures([0.5, 10.0], n=9), expected, "cuda")
    assert len(counted.failures) == 2 and "n: 9 ≠ 10" in counted.failures[0]
    missing_value = _measures([np.nan, 10.0])
    assert compare.compare_table("measures.tsv", missing_value, expected, "cuda").failures


def test_an_intrinsic_dimension_s_distinct_points_may_differ_by_a_fifth_of_a_percent():
    """On a GPU only, and only an intrinsic dimension's count of distinct points."""
    expected = _measures([0.5, 10.0], n=10_000)
    close = _measures([0.5, 10.0], n=10_015)
    failures = compare.compare_table("measures.tsv", close, expected, "cuda").failures
    assert failures == ["m/none/0/selfsim n: 10015 ≠ 10000"]
    assert len(compare.compare_table("measures.tsv", close, expected, "cpu").failures) == 2
    far = compare.compare_table("measures.tsv", _measures([0.5, 10.0], 10_025), expected, "cuda")
    assert len(far.failures) == 2


def test_a_run_of_other_models_voids_the_comparison(tmp_path):
    (tmp_path / compare.FINGERPRINTS).write_text(json.dumps({"models": {"bert": "a"}}))
    report = compare.compare_run(tmp_path, tmp_path, {"bert": "b"}, "cuda")
    assert not report.ok and "['bert']" in report.void and "void" in report.headline


def test_the_wheel_list_names_what_entered_or_left_the_closure(tmp_path, monkeypatch):
    pins = prepare.check_wheel_list()  # the committed list matches this environment
    assert "snakemake" in pins and "torch" not in pins and "gensim" not in pins
    stale = tmp_path / "requirements.txt"
    lines = [f"{name}=={version}" for name, version in pins.items() if name != "yte"]
    stale.write_text("\n".join([*lines, "left-pad==1.0"]) + "\n")
    monkeypatch.setattr(prepare, "REQUIREMENTS", stale)
    with pytest.raises(SystemExit) as stopped:
        prepare.check_wheel_list()
    message = str(stopped.value)
    assert "yte: needed on the node, not in requirements.txt" in message
    assert "left-pad: in requirements.txt, no longer needed" in message


def test_every_cuda_test_is_where_the_acceptance_run_looks():
    """The acceptance run collects tests/test_cuda.py alone (other test modules import what
    does not travel to a GPU node), so a test marked cuda elsewhere would never run."""
    import acceptance

    def marks_cuda(path: Path) -> bool:
        return any(
            isinstance(node, ast.Attribute)
            and node.attr == "cuda"
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark"
            for node in ast.walk(ast.parse(path.read_text()))
        )

    tests = Path(__file__).resolve().parent
    marked = {path.name for path in tests.glob("test_*.py") if marks_cuda(path)}
    assert marked == {Path(acceptance.CUDA_TESTS).name}


def test_a_node_gets_only_the_wheels_it_lacks(tmp_path, monkeypatch):
    """install_missing installs the pinned distributions absent from the node, from the
    travel folder's wheels, with this package's; a missing wheel is one line."""
    travel = tmp_path / "travel"
    travel.mkdir()
    for name in ("snakemake-9.27.1", "yte-1.9.4", "contextuality-0.1.0"):
        (travel / f"{name}-py3-none-any.whl").touch()
    present = {name for name in prepare.pinned() if name not in ("snakemake", "yte")}

    def version(name):
        if prepare.canonical(name) not in present:
            raise prepare.metadata.PackageNotFoundError(name)
        return "0"

    calls = []
    monkeypatch.setattr(prepare.metadata, "version", version)
    monkeypatch.setattr(prepare, "_pip", lambda *arguments: calls.append(arguments))
    installed = prepare.install_missing(tmp_path / "site", travel)
    assert sorted(installed) == ["contextuality", "snakemake", "yte"]
    wheels = sorted(Path(argument).name for argument in calls[0] if argument.endswith(".whl"))
    assert wheels == sorted(path.name for path in travel.iterdir())
    assert "--no-index" in calls[0] and str(tmp_path / "site") in calls[0]
    present.discard("dpath")
    with pytest.raises(SystemExit, match=r"no wheel for \['dpath'\]"):
        prepare.install_missing(tmp_path / "site", travel)
