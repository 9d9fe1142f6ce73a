"""The contextuality command line runs every step outside Snakemake, and reports errors in words."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import pandas as pd
import pytest
import torch

from contextuality.backends.elmo.release import RELEASES
from contextuality.backends.elmo.synthetic import write_random_files
from contextuality.cli import main
from contextuality.figures.specs import DEGENERATION_FIGURES
from contextuality.files.provenance import read_json, write_json
from contextuality.files.tables import read_tsv, write_tsv
from contextuality.measures.registry import CENSUSES, measure

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_all_steps_from_the_command_line(tmp_path, tiny_bert_dir, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join(f"The cat sat on mat number {k}. The dog ran." for k in range(6)) + "\n"
    )
    sentences = tmp_path / "sentences.parquet"
    index = tmp_path / "index"
    shards = tmp_path / "emb"
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    assert main(["index", str(sentences), "-o", str(index), "--min-contexts", "3"]) == 0
    assert (
        main(
            [
                "extract",
                str(tiny_bert_dir),
                "--name",
                "tiny",
                "--sentences",
                str(sentences),
                "--index",
                str(index),
                "--layers",
                "0,2",
                "-o",
                str(shards),
            ]
        )
        == 0
    )
    assert sorted(path.name for path in shards.glob("*.h5")) == ["layer_0.h5", "layer_2.h5"]
    with h5py.File(shards / "layer_2.h5") as shard:
        assert shard.attrs["model"] == "tiny" and shard.attrs["layer"] == 2
    summaries = []
    for layer in (0, 2):
        prefix = tmp_path / "measures" / f"layer_{layer}"
        arguments = ["measure", str(shards / f"layer_{layer}.h5"), "--index", str(index)]
        arguments += ["--sentences", str(sentences)]
        assert main([*arguments, "-o", str(prefix)]) == 0
        summaries.append(str(prefix) + ".json")
    summary = json.loads((tmp_path / "measures" / "layer_2.json").read_text())
    assert summary["layer"] == 2 and summary["measures"]["selfsim"]["n"] > 0
    centered = tmp_path / "measures" / "layer_2.center"
    arguments = ["measure", str(shards / "layer_2.h5"), "--index", str(index)]
    arguments += ["--sentences", str(sentences), "--transform", "center", "--degeneration"]
    assert main([*arguments, "--fit-fraction", "0.3", "-o", str(centered)]) == 0
    under_center = json.loads(Path(f"{centered}.json").read_text())
    split = pd.read_parquet(f"{centered}.split.parquet")
    assert under_center["transform_fit"]["n_fit_sentences"] == int(split["fit"].sum()) > 0
    assert (
        under_center["transform"] == "center" and under_center["transform_fit"]["name"] == "center"
    )
    assert (
        abs(under_center["measures"]["anisotropy"]["raw"])
        < summary["measures"]["anisotropy"]["raw"]
    )
    for part in ("words", "bins", "cone", "positions"):
        assert len(pd.read_parquet(f"{centered}.degeneration.{part}.parquet")) > 0
    assert "anisotropy[position>0]" in under_center["measures"]
    geometry = tmp_path / "geometry" / "tiny"
    layers = [str(shards / "layer_0.h5"), str(shards / "layer_2.h5")]
    arguments = ["geometry", *layers, "--index", str(index), "--min-points", "20"]
    assert main([*arguments, "--range-max", "8", "-o", str(geometry)]) == 0
    cka = pd.read_parquet(f"{geometry}.alignment.parquet")
    assert set(cka["model_a"]) == {"tiny"}
    assert set(cka["model_b"]) == {"tiny", "word_identity", "word_position"}
    assert len(cka) == 2 * 4 + 2 + 2  # all and position>0 within; all with each baseline
    dimensions = json.loads(Path(f"{geometry}.dimension.json").read_text())["layers"]
    assert [layer["layer"] for layer in dimensions] == [0, 2]
    curves = pd.read_parquet(f"{geometry}.dimension_scales.parquet")
    assert set(curves.loc[curves["estimator"] == "gride", "scale"]) == {1, 2, 4}
    assert main([*arguments, "--versus", *layers, "-o", str(geometry) + ".self"]) == 0
    versus = pd.read_parquet(f"{geometry}.self.alignment.parquet")
    assert (
        abs(versus.set_index(["occurrences", "layer_a", "layer_b"])["cka"]["all", 2, 2] - 1) < 1e-6
    )
    rogue = str(geometry) + ".drop_rogue"
    capsys.readouterr()
    assert main([*arguments, "--transform", "drop_rogue", "-o", rogue]) == 1
    assert "geometry --transform drop_rogue needs --sentences" in capsys.readouterr().err
    corrected = [*arguments, "--transform", "drop_rogue", "--sentences", str(sentences)]
    assert main([*corrected, "--range-max", "8", "-o", rogue]) == 0
    without = pd.read_parquet(f"{rogue}.alignment.parquet")
    assert set(without["transform"]) == {"drop_rogue"}
    assert without["n_rows"].max() < cka["n_rows"].max()  # the fitting sentences left out
    fit = json.loads(Path(f"{rogue}.dimension.json").read_text())["layers"][1]["transform_fit"]
    assert fit["name"] == "drop_rogue" and len(fit["parameters"]["dimensions"]) == 3
    table, census = tmp_path / "measures.tsv", tmp_path / "censuses"
    assert main(["summarize", *summaries, "-o", str(table), "--census", str(census)]) == 0
    rows = pd.read_csv(table, sep="\t")
    assert len(rows) == 2 * len(summary["measures"])
    assert set(rows["layer"]) == {0, 2}
    assert sorted(path.stem for path in census.glob("*.tsv")) == sorted(CENSUSES)
    found = read_tsv(census / "massive_activations.tsv")
    assert list(found.columns) == list(measure("massive_activations").census.columns)
    assert len(found) == sum(
        len(json.loads(Path(path).read_text())["measures"]["massive_activations"]["census"])
        for path in summaries
    )
    vectors = tmp_path / "layer_2.txt"
    static = ["static", str(shards / "layer_2.h5"), "--index", str(index), "-o", str(vectors)]
    assert main(static) == 0
    assert int(vectors.read_text().split()[0]) > 0  # word2vec header: number of words
    if SHARED_DATA.is_dir():
        scores = tmp_path / "scores.tsv"
        command = ["score", str(vectors), "--data", str(SHARED_DATA), "--benchmarks", "simlex999"]
        assert main([*command, "-o", str(scores)]) == 0
        assert pd.read_csv(scores, sep="\t")["benchmark"].tolist() == ["simlex999"]
    figure = tmp_path / "fig2.png"
    assert main(["figure", str(table), "--name", "fig2_selfsim", "-o", str(figure)]) == 0
    assert figure.stat().st_size > 0
    _wrong_inputs_exit_with_one_line(tmp_path, shards, index, sentences, summaries, capsys)
    # The workflow's other figures: the transforms side by side, and the degeneration.
    both = tmp_path / "both.tsv"
    assert main(["summarize", *summaries, f"{centered}.json", "-o", str(both)]) == 0
    compared = tmp_path / "transforms.png"
    assert main(["figure", str(both), "--name", "transforms", "-o", str(compared)]) == 0
    assert compared.stat().st_size > 0
    degeneration = tmp_path / "degeneration"
    arguments = ["degeneration-figures", str(centered), "--title", "tiny, transform center"]
    assert main([*arguments, "-o", str(degeneration)]) == 0
    assert sorted(path.name for path in degeneration.iterdir()) == sorted(
        f"{kind}.{extension}{sidecar}"
        for kind in DEGENERATION_FIGURES
        for extension in ("png", "pdf")
        for sidecar in ("", ".provenance.json")
    )


def _wrong_inputs_exit_with_one_line(tmp_path, shards, index, sentences, summaries, capsys):
    """Arguments out of range are refused before any file is read; files of another kind
    than a command takes, missing or binary, are one line naming them."""
    other = tmp_path / "other.tsv"
    write_tsv(pd.DataFrame({"word": ["cat"], "score": [0.5]}), other, {"step": "elsewhere"})
    capsys.readouterr()
    measure = ["measure", str(shards / "layer_2.h5"), "--index", str(index)]
    measure += ["--sentences", str(sentences), "-o", str(tmp_path / "refused")]
    lean = read_json(summaries[0]) | {"leave_out": ["massive_activations"]}
    write_json(tmp_path / "lean.json", lean)  # a summary measured without them
    census = ["summarize", str(tmp_path / "lean.json"), "-o", str(tmp_path / "refused.tsv")]
    census.append("--census")
    commands = {
        "with massive_activations in measures.leave_out: it has no census": [
            *census,
            str(tmp_path / "censuses"),
        ],
        "measures.seed must be at least 0": [*measure, "--seed", "-1"],
        "fit_fraction must be in (0, 1)": [*measure, "--fit-fraction", "1.5"],
        "baseline_sample_size must be at least 2": [*measure, "--baseline-sample-size", "0"],
        f"{shards / 'meta.json'}: not a layer summary": ["summarize", str(shards / "meta.json")],
        f"{other}: not a measures table": [
            "figure",
            str(other),
            "--name",
            "fig1_anisotropy",
        ],
        f"{tmp_path / 'no.tsv'}: no such file": [
            "figure",
            str(tmp_path / "no.tsv"),
            "--name",
            "fig1_anisotropy",
        ],
        f"{shards / 'layer_0.h5'}: no layer_0.provenance.json beside it": [
            "figure",
            str(shards / "layer_0.h5"),
            "--name",
            "fig1_anisotropy",
        ],
        f"{tmp_path / 'no.h5'}: not a readable HDF5 shard": [
            "geometry",
            str(tmp_path / "no.h5"),
            "--index",
            str(index),
        ],
    }
    commands["figure --output refused.svgz: a figure is written as"] = [
        "figure",
        summaries[0],
        "--name",
        "fig1_anisotropy",
        "-o",
        "refused.svgz",
    ]
    layers = [str(shards / "layer_0.h5"), str(shards / "layer_2.h5")]
    geometry = ["geometry", *layers, "--index", str(index)]
    commands["geometry.alignment.k must be at least 1"] = [*geometry, "--neighbours", "0"]
    table = read_tsv(tmp_path / "measures.tsv")  # a measures table without the census rows
    lean_table = tmp_path / "lean.tsv"
    write_tsv(table[table["measure"] != "massive_activations"], lean_table, {"step": "lean"})
    commands["has no row of massive_activations under transform none"] = [
        "figure",
        str(lean_table),
        "--name",
        "massive_activations",
    ]
    if not torch.cuda.is_available():
        refused = "cuda asked for, but torch sees no GPU here; use auto"
        commands[f"geometry.alignment.device: {refused}"] = [*geometry, "--device", "cuda"]
    for message, command in commands.items():
        if command[0] != "measure" and "-o" not in command:
            suffix = ".png" if command[0] == "figure" else ""
            command = [*command, "-o", str(tmp_path / f"refused{suffix}")]
        assert main(command) == 1, command
        (line,) = capsys.readouterr().err.splitlines()
        assert message in line, line
    assert not list(tmp_path.glob("refused*"))
    figure = tmp_path / "from_summaries.png"  # layer summaries are what a figure takes too
    assert main(["figure", *summaries, "--name", "fig2_selfsim", "-o", str(figure)]) == 0
    # the options in the order --help prints them: -o before the table, which it gives back
    later = tmp_path / "table_last.png"
    arguments = [
        "figure",
        "--name",
        "fig2_selfsim",
        "-o",
        str(later),
        str(tmp_path / "measures.tsv"),
    ]
    assert main(arguments) == 0 and later.stat().st_size > 0


def test_bad_input_exits_with_a_message(tmp_path, capsys):
    missing = tmp_path / "missing.txt"
    assert main(["sentences", "--text", str(missing), "-o", str(tmp_path / "s.parquet")]) == 1
    error = capsys.readouterr().err
    assert "missing.txt" in error and "not found" in error
    assert not (tmp_path / "s.parquet").exists()


def test_missing_truncated_or_foreign_inputs_exit_with_one_line(tmp_path, capsys):
    """Every reader of a step's inputs names the file and its fault, never a traceback:
    a sentence table that is missing, cut short or not Parquet; an index.json that is
    missing or cut short."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"The cat sat on mat {k}." for k in range(6)) + "\n")
    sentences = tmp_path / "sentences.parquet"
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    index = tmp_path / "index"
    assert main(["index", str(sentences), "-o", str(index), "--min-contexts", "3"]) == 0
    capsys.readouterr()
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(sentences.read_bytes()[:200])
    faults = {
        tmp_path / "missing.parquet": "no such file",
        truncated: "not a readable Parquet table",
        corpus: "not a readable Parquet table",
    }
    for path, fault in faults.items():
        assert main(["index", str(path), "-o", str(tmp_path / "other")]) == 1
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"contextuality: error: {path}: {fault}")
    summary = index / "index.json"
    for damage in ("truncate", "delete"):
        if damage == "truncate":
            summary.write_text(summary.read_text()[:50])
        else:
            summary.unlink()
        arguments = ["static", str(tmp_path / "layer_0.h5"), "--index", str(index)]
        assert main([*arguments, "-o", str(tmp_path / "v.txt")]) == 1
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"contextuality: error: {summary}: ")
        assert ("no such file" if damage == "delete" else "not readable JSON") in line


def test_every_model_setting_is_an_option_with_help():
    """'extract' and 'stream' take every setting of a config's model section, so the
    workflow's runs (a GGUF file, a pinned revision, before_final_norm, ...) can be
    reproduced outside Snakemake; every option of every command says what it does."""
    import argparse

    from contextuality.backends.settings import ModelSettings
    from contextuality.cli.commands import build_parser
    from contextuality.cli.model_options import MODEL_OPTION_HELP, model_section

    assert set(MODEL_OPTION_HELP) == set(ModelSettings.__dataclass_fields__) - {"name", "source"}
    given = {
        "revision": "v1",
        "gguf_file": "model.Q4.gguf",
        "loader": "elmo",
        "units": "subword",
        "layers": (0, 3),
        "last_layer": "before_final_norm",
        "pooling": "last",
        "add_bos": True,
        "max_length": 64,
        "long_sentences": "window",
        "window_overlap": 8,
        "token_budget": 512,
        "storage_dtype": "float32",
        "cuda_dtype": "bfloat16",
        "device": "cuda:1",
        "trust_remote_code": True,
        "lstm_states": "carried",
        "weights_dtype": "bfloat16",
        "device_map": "auto",
        "segment_words": 100,
        "random_weights_seed": 3,
        "parity_sentences": 8,
    }
    argv = ["extract", "m", "--sentences", "s", "--index", "i", "-o", "o"]
    for setting, value in given.items():
        option = "--" + setting.replace("_", "-")
        if value is True:
            argv.append(option)
        else:
            argv += [option, ",".join(map(str, value)) if isinstance(value, tuple) else str(value)]
    parser = build_parser()
    section = model_section(parser.parse_args(argv))
    assert section == {"source": "m", **given}
    spec = ModelSettings.from_config("m", section)
    assert spec == ModelSettings(name="m", source="m", **given)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        for action in command._actions:
            assert action.help, (name, action.option_strings or action.dest)


def test_layers_are_one_comma_list_that_leaves_the_model_where_it_is(capsys):
    """``--layers 9 MODEL`` reads 9 as the layers and MODEL as the model, whichever comes
    first; a list that is not of layer numbers is refused in one line naming the option."""
    from contextuality.cli.commands import build_parser

    parser = build_parser()
    rest = ["--sentences", "s", "--index", "i", "-o", "o"]
    for argv in (
        ["extract", "--layers", "9,0,3", "package:m/dir", *rest],
        ["extract", "package:m/dir", "--layers", "9,0,3", *rest],
    ):
        args = parser.parse_args(argv)
        assert (args.model, args.layers) == ("package:m/dir", (9, 0, 3))
    for bad, said in (("0,x", "not a comma list of layer numbers"), ("-1", "start at 0")):
        with pytest.raises(SystemExit):
            parser.parse_args(["extract", "m", f"--layers={bad}", *rest])
        error = capsys.readouterr().err.splitlines()[-1]
        assert "--layers" in error and said in error, error


def test_errors_name_the_options_a_command_line_user_can_change(tmp_path, tiny_bert_dir, capsys):
    """A refused model setting is named as the option that sets it, not as its config key:
    layers beyond the model's hidden states say to fix ``--layers``, in one line; messages of
    other keys, or of a key inside a setting, are named as precisely."""
    from contextuality.cli.option_terms import in_option_terms

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"The cat sat on mat {k}." for k in range(6)) + "\n")
    sentences, index = tmp_path / "sentences.parquet", tmp_path / "index"
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    assert main(["index", str(sentences), "-o", str(index), "--min-contexts", "3"]) == 0
    capsys.readouterr()
    arguments = ["extract", str(tiny_bert_dir), "--layers", "0,99", "--sentences"]
    arguments += [str(sentences), "--index", str(index), "-o", str(tmp_path / "out")]
    assert main(arguments) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "layers [99] outside 0..2" in line and line.endswith("fix --layers"), line
    assert "models." not in line and not (tmp_path / "out").exists()
    assert in_option_terms(
        "models.gpt-2.ablation.block: 12, after the last layer; set models.gpt-2.storage_dtype: "
        "float32; models.gpt-2.source: not found; reference.models.gpt-2: no model"
    ) == (
        "--ablation block: 12, after the last layer; set --storage-dtype: float32; "
        "MODEL: not found; reference.models.gpt-2: no model"
    )
    assert in_option_terms("models.m.streaming.word_sample_size") == (
        "models.m.streaming.word_sample_size"  # not an option of 'extract': left as it is
    )


def test_the_papers_protocol_from_the_command_line(tmp_path, tiny_bert_dir):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"The cat can't sit, on mat {k}." for k in range(6)) + "\n")
    sentences, words, subwords = tmp_path / "s.parquet", tmp_path / "words", tmp_path / "sub"
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    paper_words = ["--tokenizer", "spacy", "--exclude-punctuation", "--count-by", "occurrences"]
    assert main(["index", str(sentences), "-o", str(words), *paper_words]) == 0
    vocab = pd.read_parquet(words / "vocab.parquet").set_index("word")
    assert vocab.loc["n't", "indexed"] and not vocab.loc[",", "indexed"]
    assert (
        main(["index", str(sentences), "-o", str(subwords), "--subwords", str(tiny_bert_dir)]) == 0
    )
    shards = tmp_path / "emb"
    extract = ["extract", str(tiny_bert_dir), "--sentences", str(sentences), "--layers", "1"]
    assert main([*extract, "--index", str(words), "--units", "subword", "-o", str(shards)]) == 1
    assert main([*extract, "--index", str(subwords), "--units", "subword", "-o", str(shards)]) == 0
    occurrences = pd.read_parquet(subwords / "occurrences.parquet")
    with h5py.File(shards / "layer_1.h5") as shard:
        assert shard["vectors"].shape[0] == len(occurrences)
    vectors = tmp_path / "static.txt"
    static = ["static", str(shards / "layer_1.h5"), "--index", str(subwords), "-o", str(vectors)]
    assert main(static) == 0
    if SHARED_DATA.is_dir():
        scores = tmp_path / "scores.tsv"
        command = ["score", str(vectors), "--data", str(SHARED_DATA), "--benchmarks", "ws353"]
        command += ["--protocol", "paper", "--index", str(words), "-o", str(scores)]
        assert main(command) == 0
        assert pd.read_csv(scores, sep="\t")["protocol"].tolist() == ["paper"]


def test_elmo_from_the_command_line(tmp_path, monkeypatch):
    """download-elmo puts a release where extract --loader elmo finds it by name."""
    monkeypatch.chdir(tmp_path)
    mirror = tmp_path / "mirror"
    write_random_files(mirror, stem=RELEASES["elmo-small"].stem)
    assert main(["download-elmo", "elmo-small", "--mirror", str(mirror)]) == 0
    provenance = json.loads(Path("resources/elmo/elmo-small/provenance.json").read_text())
    assert provenance["mirror"] == str(mirror) and len(provenance["sha256"]) == 2
    Path("corpus.txt").write_text(
        "".join(f"The cat sat on mat {k}. The dog ran.\n" for k in range(5))
    )
    assert main(["sentences", "--text", "corpus.txt", "-o", "sentences.parquet"]) == 0
    assert main(["index", "sentences.parquet", "-o", "index", "--min-contexts", "3"]) == 0
    arguments = ["extract", "elmo-small", "--loader", "elmo", "--sentences", "sentences.parquet"]
    assert main([*arguments, "--index", "index", "-o", "emb"]) == 0
    meta = json.loads(Path("emb/meta.json").read_text())
    assert meta["layers"] == [0, 1, 2] and meta["hidden_size"] == 16
    assert meta["model_revision"] in provenance["sha256"].values()
    with h5py.File("emb/layer_1.h5") as shard:
        assert shard.attrs["model"] == "elmo-small"
    assert main(["download-elmo", "elmo-small", "--mirror", str(tmp_path / "empty")]) == 1


def test_arguments_no_command_could_run_with_are_refused_before_any_work(tmp_path, capsys):
    """A count of 0 or below, a device torch does not know, a file where a directory is
    written (or under which one would be) and a directory where a file is: argparse's one
    line naming the option, exit status 2, before anything is read or written."""
    a_file = tmp_path / "file.txt"
    a_file.write_text("kept\n")
    study = tmp_path / "study"
    study.mkdir()
    (study / "config").write_text("kept\n")
    out = str(tmp_path / "out")
    extract = ["extract", "m", "--sentences", "s", "--index", "i", "-o", out]
    stream = ["stream", "m", "--sentences", "s", "--index", "i", "-o", out]
    geometry = ["layer-geometry", "a.h5", "--index", "i", "-o", f"{out}/g"]
    measure = ["measure", "a.h5", "--sentences", "s", "--index", "i", "-o", f"{out}/m"]
    not_a_device = "is not a device torch knows; use auto (a GPU where there is one), cpu"
    is_a_file = f"{a_file} is a file, not a directory to write into"
    is_a_directory = f"{tmp_path} is a directory, not a file to write"
    refused = [
        ("--device", f"tpu {not_a_device}", [*extract, "--device", "tpu"]),
        ("--device", f"gpu {not_a_device}", [*stream, "--device", "gpu"]),
        ("--device", f"tpu {not_a_device}", [*geometry, "--device", "tpu"]),
        ("--threads", "0 is not a positive integer", [*extract, "--threads", "0"]),
        ("--partitions", "0 is not a positive integer", [*extract, "--partitions", "0"]),
        ("--part", "-1 is not an integer of 0 or more", [*extract, "--part", "-1"]),
        ("--max-length", "0 is not a positive integer", [*extract, "--max-length", "0"]),
        ("--token-budget", "'x' is not a positive integer", [*extract, "--token-budget", "x"]),
        ("--window-overlap", "-1 is not an integer of 0", [*extract, "--window-overlap", "-1"]),
        ("--segment-words", "0 is not a positive integer", [*stream, "--segment-words", "0"]),
        ("--word-sample-size", "0 is not a positive", [*stream, "--word-sample-size", "0"]),
        ("-o/--output", is_a_file, [*extract[:-1], str(a_file)]),
        ("-o/--output", f"{a_file}/emb: {a_file} is a file", [*extract[:-1], f"{a_file}/emb"]),
        ("--min-contexts", "0 is not a positive", ["index", "s", "-o", out, "--min-contexts", "0"]),
        ("-o/--output", is_a_file, ["index", "s", "-o", str(a_file)]),
        ("-o/--output", is_a_file, ["merge-stream", "p0", "--index", "i", "-o", str(a_file)]),
        ("--threads", "0 is not a positive integer", [*measure, "--threads", "0"]),
        ("-o/--output", is_a_directory, [*measure[:-1], str(tmp_path)]),
        ("--sample-size", "-1 is not an integer of 0", [*geometry, "--sample-size", "-1"]),
        ("-o/--output", is_a_directory, [*geometry[:-1], str(tmp_path)]),
        ("-o/--output", is_a_file, ["degeneration-figures", "p", "-o", str(a_file)]),
        ("-o/--output", is_a_directory, ["sentences", "--text", "c.txt", "-o", str(tmp_path)]),
        ("-o/--output", is_a_directory, ["static", "a.h5", "--index", "i", "-o", str(tmp_path)]),
        ("-o/--output", is_a_directory, ["score", "v.txt", "--data", "d", "-o", str(tmp_path)]),
        ("-o/--output", is_a_directory, ["summarize", "a.json", "-o", str(tmp_path)]),
        ("--census", is_a_file, ["summarize", "a.json", "-o", out, "--census", str(a_file)]),
        (
            "-o/--output",
            is_a_directory,
            ["figure", "t.tsv", "--name", "fig2_selfsim", "-o", str(tmp_path)],
        ),
        ("--init", is_a_file, ["workflow", "--init", str(a_file)]),
        ("--init", f"{study / 'config'} is a file, where the", ["workflow", "--init", str(study)]),
    ]
    for option, said, argv in refused:
        with pytest.raises(SystemExit) as exited:
            main(argv)
        line = capsys.readouterr().err.splitlines()[-1]
        assert exited.value.code == 2 and f"error: argument {option}: {said}" in line, line
    assert sorted(tmp_path.iterdir()) == [a_file, study]
    assert [path.name for path in study.iterdir()] == ["config"]
    assert a_file.read_text() == (study / "config").read_text() == "kept\n"


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this torch has MPS")
def test_a_device_this_torch_lacks_is_one_line_before_anything_is_written(
    tmp_path, tiny_bert_dir, capsys
):
    """``extract --device mps`` and ``layer-geometry --device mps`` on a torch without
    MPS: one line naming the option and what torch sees, exit 1, nothing written (the
    geometry's dimension files included, which it writes before any alignment)."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"The cat sat on mat {k}." for k in range(6)) + "\n")
    sentences, index = tmp_path / "sentences.parquet", tmp_path / "index"
    assert main(["sentences", "--text", str(corpus), "-o", str(sentences)]) == 0
    assert main(["index", str(sentences), "-o", str(index), "--min-contexts", "3"]) == 0
    shards = tmp_path / "emb"
    arguments = ["extract", str(tiny_bert_dir), "--layers", "0,2", "--sentences"]
    arguments += [str(sentences), "--index", str(index)]
    assert main([*arguments, "-o", str(shards)]) == 0
    capsys.readouterr()
    seen = "mps asked for, but torch sees no mps device here; use auto (a GPU where there is one)"
    assert main([*arguments, "--device", "mps", "-o", str(tmp_path / "refused")]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"contextuality: error: --device: {seen} or cpu", line
    layers = [str(shards / "layer_0.h5"), str(shards / "layer_2.h5")]
    geometry = ["layer-geometry", *layers, "--index", str(index), "--device", "mps"]
    assert main([*geometry, "-o", str(tmp_path / "refused")]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"contextuality: error: geometry.alignment.device: {seen} or cpu", line
    assert not list(tmp_path.glob("refused*"))
