"""What a change reruns: after a finished run, each kind of edit a user makes plans exactly
the jobs whose outputs depend on it, and an edit that changes no byte (a reinstall, a
copy, a ``touch``) plans none.

The study reads its corpus and both models from an installed package (``package:``
paths, as the embedded default reads the Lee corpus and MiniLM), so that a reinstall is
the package's files copied to a new place on ``PYTHONPATH``."""

from __future__ import annotations

import copy
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import h5py
import pytest
import safetensors.torch
from workflow_runs import REPO, planned_jobs, snakemake, write_config

pytestmark = pytest.mark.workflow

PACKAGE = "studyfiles"
SENTENCES = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the cat watched.",
    "The quick brown fox jumps over the lazy dog!",
    "The bank raised interest rates.",
]


def _install(site: Path, tiny_bert_dir: Path, tiny_gpt2_dir: Path) -> Path:
    """A package holding a two-file corpus and both tiny models, under `site`."""
    package = site / PACKAGE
    (package / "corpus").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for part in range(2):
        lines = [f"{sentence} Case {part}{k}." for k in range(3) for sentence in SENTENCES]
        (package / "corpus" / f"part{part}.txt").write_text("\n".join(lines) + "\n")
    shutil.copytree(tiny_bert_dir, package / "bert")
    shutil.copytree(tiny_gpt2_dir, package / "gpt2")
    return package


def _environment(site: Path) -> dict[str, str]:
    """This process's environment with `site` first on PYTHONPATH: where the package is
    installed, for Snakemake and its jobs."""
    return os.environ | {
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    }


CONFIG = {
    "corpus": {
        "name": "tiny",
        "source": "text",
        "text": {"path": f"package:{PACKAGE}/corpus", "split_sentences": False},
    },
    "index": {"min_contexts": 5},
    "models": {
        "bert": {"source": f"package:{PACKAGE}/bert"},
        "gpt2": {"source": f"package:{PACKAGE}/gpt2", "layers": [0, 1, 2]},
    },
    "measures": {
        "transforms": ["none"],
        "leave_out": ["optional"],
        "baseline_sample_size": 50,
        "seed": 1,
    },
    "degeneration": {"transforms": []},
    "geometry": {"activate": True, "sample_size": 200},
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_bert_dir, tiny_gpt2_dir) -> tuple[Path, Path]:
    """A finished run of `CONFIG` (its directory) and the site its package lies in."""
    site = tmp_path_factory.mktemp("site")
    _install(site, tiny_bert_dir, tiny_gpt2_dir)
    study = tmp_path_factory.mktemp("study")
    write_config(study, CONFIG)
    result = snakemake(study, environment=_environment(site))
    assert result.returncode == 0, result.stderr[-3000:]
    return study, site


@pytest.fixture
def study(finished, tmp_path) -> tuple[Path, Path]:
    """A copy of the finished run and of its package, time stamps kept, for a test to edit."""
    study, site = finished
    copy = shutil.copytree(study, tmp_path / "study", symlinks=True)
    return copy, shutil.copytree(site, tmp_path / "site")


def _dependents(directory: Path, environment: dict[str, str], *rules: str) -> dict[str, int]:
    """The jobs of `rules` and every job downstream of them, as a forced rerun plans them,
    with the one fingerprint record that an edit of outside files writes."""
    forced = planned_jobs(directory, "--forcerun", *rules, environment=environment)
    return forced | {"input_fingerprint": 1}


def test_one_weight_reruns_that_model_and_what_follows_it(study):
    directory, site = study
    environment = _environment(site)
    expected = _dependents(directory, environment, "extract_gpt2")
    assert "extract_bert" not in expected
    weights = site / PACKAGE / "gpt2" / "model.safetensors"
    tensors = safetensors.torch.load_file(weights)
    tensors["wte.weight"][0, 0] += 1.0
    safetensors.torch.save_file(tensors, weights, metadata={"format": "pt"})
    assert planned_jobs(directory, environment=environment) == expected


def test_one_corpus_file_reruns_everything_from_the_sentence_table(study):
    directory, site = study
    environment = _environment(site)
    expected = _dependents(directory, environment, "sentences")
    assert expected["extract_bert"] == expected["extract_gpt2"] == 1
    with (site / PACKAGE / "corpus" / "part1.txt").open("a") as corpus:
        corpus.write("One more sentence.\n")
    assert planned_jobs(directory, environment=environment) == expected


def _with_layers(layers: list[int] | None) -> dict:
    """`CONFIG` with gpt2's layers `layers`."""
    models = CONFIG["models"] | {"gpt2": CONFIG["models"]["gpt2"] | {"layers": layers}}
    return CONFIG | {"models": models}


def _vectors(shard: Path) -> bytes:
    with h5py.File(shard) as handle:
        return handle["vectors"][:].tobytes()


def _extraction_or_measure(planned: dict[str, int]) -> list[str]:
    return [rule for rule in planned if rule.startswith(("extract_", "measure_layer"))]


def test_a_layer_list_shrunk_says_which_stored_layers_it_no_longer_names(study):
    directory, site = study
    environment = _environment(site)
    write_config(directory, _with_layers([0, 2]))
    result = snakemake(directory, "--dry-run", environment=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    warning = (
        "WARNING: models.gpt2.layers no longer names layers 1 stored in results/embeddings/gpt2/"
    )
    assert warning in result.stderr
    planned = planned_jobs(directory, environment=environment)
    assert planned and not _extraction_or_measure(planned)
    # the tables that list gpt2's layers, and what they feed, made again: nothing else
    gatherers = ("results/tables/measures.tsv", "results/tables/words/gpt2.none.tsv")
    assert planned == planned_jobs(directory, "--forcerun", *gatherers, environment=environment)


def test_a_layer_list_grown_extracts_and_measures_the_new_layers_alone(study):
    """A run of layers 0 and 2 (layer 1 never stored) grown to 0..2: one forward pass
    writes layer 1 alone, as a run of every layer writes it, and the stored shards are
    not touched."""
    directory, site = study
    environment = _environment(site)
    shards = directory / "results/embeddings/gpt2"
    full_run = _vectors(shards / "layer_1.h5")
    (shards / "layer_1.h5").unlink()
    for path in (directory / "results/measures/gpt2/none").glob("layer_1.*"):
        path.unlink()
    kept = {layer: (shards / f"layer_{layer}.h5").read_bytes() for layer in (0, 2)}
    write_config(directory, _with_layers([0, 1, 2]))
    planned = planned_jobs(directory, environment=environment)
    assert planned["extract_gpt2"] == 1 and "extract_bert" not in planned
    assert [planned[rule] for rule in _extraction_or_measure(planned)] == [1, 1]
    result = snakemake(directory, environment=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    assert {layer: (shards / f"layer_{layer}.h5").read_bytes() for layer in (0, 2)} == kept
    assert _vectors(shards / "layer_1.h5") == full_run
    assert planned_jobs(directory, environment=environment) == {}


# Each kind of edit a user makes, applied to a copy of the finished run: (config, site,
# study directory) → the config and the site the dry run is given.
Edit = Callable[[dict, Path, Path], tuple[dict, Path]]


def _config_edit(change: Callable[[dict], None]) -> Edit:
    def edit(config: dict, site: Path, directory: Path) -> tuple[dict, Path]:
        change(config)
        return config, site

    return edit


def _add_model(config: dict) -> None:
    config["models"]["bert_first"] = {"source": f"package:{PACKAGE}/bert", "pooling": "first"}


def _remove_gpt2(config: dict) -> None:
    del config["models"]["gpt2"]


def _unstore_layer(config: dict, site: Path, directory: Path) -> tuple[dict, Path]:
    """gpt2's layer 1 named but not stored: its list grown by it after a run without it."""
    for path in (directory / "results").rglob("layer_1.*"):
        if "gpt2" in path.parts:
            path.unlink()
    return config, site


def _add_corpus_file(config: dict, site: Path, directory: Path) -> tuple[dict, Path]:
    lines = [f"{sentence} More {k}." for k in range(3) for sentence in SENTENCES]
    (site / PACKAGE / "corpus" / "part2.txt").write_text("\n".join(lines) + "\n")
    return config, site


def _reinstall(config: dict, site: Path, directory: Path) -> tuple[dict, Path]:
    reinstalled = site.parent / "reinstalled"
    shutil.copytree(site, reinstalled, copy_function=shutil.copyfile)
    return config, reinstalled


def _touch(config: dict, site: Path, directory: Path) -> tuple[dict, Path]:
    for path in site.rglob("*"):
        path.touch()
    return config, site


def _set(*keys_and_value) -> Callable[[dict], None]:
    *keys, last, value = keys_and_value

    def change(config: dict) -> None:
        section = config
        for key in keys:
            section = section.setdefault(key, {})
        section[last] = value

    return change


EDITS: dict[str, Edit] = {
    "model-added": _config_edit(_add_model),
    "model-removed": _config_edit(_remove_gpt2),
    "layers-shrunk": _config_edit(_set("models", "gpt2", "layers", [0, 2])),
    "layers-reordered": _config_edit(_set("models", "gpt2", "layers", [2, 1, 0])),
    "layers-as-range": _config_edit(_set("models", "gpt2", "layers", "0-2")),
    "layers-grown": _unstore_layer,
    "model-setting": _config_edit(_set("models", "bert", "pooling", "first")),
    "measure-setting": _config_edit(_set("measures", "baseline_sample_size", 60)),
    "top-words": _config_edit(_set("measures", "top_words", 5)),
    "geometry-setting": _config_edit(_set("geometry", "sample_size", 150)),
    "dimension-setting": _config_edit(_set("geometry", "intrinsic_dimension", "range_max", 32)),
    "alignment-setting": _config_edit(_set("geometry", "alignment", "k", 5)),
    "figure-setting": _config_edit(_set("figures", "relative_layers", True)),
    "transform-added": _config_edit(_set("measures", "transforms", ["none", "center"])),
    "corpus-file-added": _add_corpus_file,
    "package-reinstalled": _reinstall,
    "package-touched": _touch,
}
CHANGE_TABLE = REPO / "docs" / "reruns.md"


def change_table() -> dict[str, dict[str, int]]:
    """docs/reruns.md's table: each edit → the jobs (rule → count) its dry run plans."""
    planned = {}
    for row in re.findall(r"^\| `([a-z-]+)` \|[^|]*\|([^|]*)\|$", CHANGE_TABLE.read_text(), re.M):
        edit, jobs = row
        counted = re.findall(r"`(\w+)` × (\d+)", jobs)
        planned[edit] = {rule: int(count) for rule, count in counted}
    return planned


def test_the_change_table_names_every_edit():
    assert list(change_table()) == list(EDITS)


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_plans_the_jobs_the_change_table_lists(study, edit):
    directory, site = study
    config, site = EDITS[edit](copy.deepcopy(CONFIG), site, directory)
    write_config(directory, config)
    planned = planned_jobs(directory, environment=_environment(site))
    assert planned == change_table()[edit], planned


def test_a_partitioned_and_a_streamed_model_s_layer_lists(tmp_path, tiny_bert_dir, tiny_gpt2_dir):
    """Extracted in two parts, a stored model (bert) and a streamed one (gpt2): their
    layer lists shrunk plan no extraction, merge or measure job; a layer named but not
    stored is extracted, merged and measured alone, every part's and every merged layer's
    stored files untouched."""
    site = tmp_path / "site"
    _install(site, tiny_bert_dir, tiny_gpt2_dir)
    environment = _environment(site)
    directory = tmp_path / "study"
    directory.mkdir()
    config = copy.deepcopy(CONFIG)
    config["extraction"] = {"partitions": 2}
    config["models"]["gpt2"]["streaming"] = True
    config["geometry"] = {"activate": False}
    write_config(directory, config)
    result = snakemake(directory, environment=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    layer_jobs = ("extract_", "stream_", "merge_", "measure_")

    shrunk = copy.deepcopy(config)
    for model in ("bert", "gpt2"):
        shrunk["models"][model]["layers"] = [0, 2]
    write_config(directory, shrunk)
    planned = planned_jobs(directory, environment=environment)
    assert planned and not [rule for rule in planned if rule.startswith(layer_jobs)]

    stored = sorted(
        path
        for path in (directory / "results").rglob("layer_*.h5")
        if not path.name.startswith("layer_1.")
    )
    kept = {path: path.read_bytes() for path in stored}
    for path in (directory / "results").rglob("layer_1.*"):
        path.unlink()
    write_config(directory, config)
    planned = planned_jobs(directory, environment=environment)
    assert {rule: planned.get(rule) for rule in ("extract_bert", "stream_gpt2")} == {
        "extract_bert": 2,
        "stream_gpt2": 2,
    }
    assert planned["merge_stream_gpt2"] == planned["merge_metas_gpt2"] == 1
    assert planned["measure_layer_without_degeneration"] == planned["measure_streamed_layer"] == 1
    result = snakemake(directory, environment=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    assert {path: path.read_bytes() for path in stored} == kept
    assert len(list((directory / "results").rglob("layer_1.*h5"))) == 2 + 2 + 1
