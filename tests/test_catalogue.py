"""The catalogues of instruments: records found in their packages' modules, so that adding
a measure or an alignment measure is one module and one test. The worked examples of
docs/architecture.md, dropped into a copy of the package, reach every output the docs say
they reach."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pandas as pd
import pytest
from test_workflow import _config, _snakemake, _write_config, _write_corpus

from contextuality.catalogue.discovery import discover
from contextuality.geometry import alignment_catalogue
from contextuality.geometry.alignment import ALIGNMENT_COLUMNS

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def _package(root: Path, modules: dict[str, str]) -> str:
    """A package of `modules` (name → source) under `root`, importable; its name."""
    name = f"records_{uuid.uuid4().hex}"  # a name no earlier test imported
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    for module, source in modules.items():
        (root / name / f"{module}.py").write_text(textwrap.dedent(source))
    return name


RECORD = "from types import SimpleNamespace as R\nRECORDS = ({})\n"


def test_discovery_takes_modules_in_the_order_of_their_names(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    package = _package(
        tmp_path,
        {
            "zeta": RECORD.format("R(name='z1'),"),
            "alpha": RECORD.format("R(name='a1'), R(name='a2')"),
        },
    )
    assert [record.name for record in discover(package, "RECORDS")] == ["a1", "a2", "z1"]


def test_discovery_refuses_a_module_without_records_and_a_name_declared_twice(
    tmp_path, monkeypatch
):
    monkeypatch.syspath_prepend(str(tmp_path))
    silent = _package(tmp_path, {"first": RECORD.format("R(name='x'),"), "helper": "X = 1\n"})
    with pytest.raises(ImportError, match=r"\.helper declares no RECORDS"):
        discover(silent, "RECORDS")
    twice = _package(
        tmp_path, {"one": RECORD.format("R(name='x'),"), "two": RECORD.format("R(name='x'),")}
    )
    with pytest.raises(ValueError, match=r"x is declared by .*\.one and .*\.two"):
        discover(twice, "RECORDS")


def test_the_alignment_table_has_each_measure_its_interval_and_its_calibration():
    names = [record.name for record in alignment_catalogue.ALIGNMENT_MEASURES]
    assert names == ["cka", "cka_debiased", "procrustes", "mutual_knn", "cknna"]
    measured = ALIGNMENT_COLUMNS[6 : 6 + 8 * len(names)]
    kinds = ["{}", "{}_low", "{}_high", "bias_{}", "null_{}", "threshold_{}", "p_{}"]
    assert measured == [kind.format(name) for name in names for kind in [*kinds, "calibrated_{}"]]
    with pytest.raises(ValueError, match="cross-products or from neighbours"):
        alignment_catalogue.AlignmentMeasure("x", "x", "X.")


def _worked_examples() -> list[tuple[Path, str, str]]:
    """The worked examples of docs/architecture.md: (module path, module code, test code)."""
    text = (DOCS / "architecture.md").read_text()
    section = text[text.index("### Worked example: a measure") :]
    paths = re.findall(r"`(src/contextuality/[\w/]+\.py)`", section)
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(paths) == 2 and len(blocks) == 4, "two examples: a module and a test each"
    return [(Path(paths[k]), blocks[2 * k], blocks[2 * k + 1]) for k in range(2)]


# Run in the copy of the package: the docs' alignment test, and what the docs tables, the
# alignment figure and the figures of the measures hold.
_PROBE = """
import json, types
import numpy as np
from contextuality.figures import alignment, specs
from contextuality.geometry import alignment_catalogue
from contextuality.geometry.neighbours import cosine_neighbours, mutual_knn
from contextuality.geometry.alignment_instruments.neighbour_jaccard import neighbour_jaccard
from contextuality.measures import registry
from contextuality.configuration.schema import with_defaults
from contextuality.workflow import measures_in_run
import yaml

namespace = dict(np=np, cosine_neighbours=cosine_neighbours, mutual_knn=mutual_knn,
                 neighbour_jaccard=neighbour_jaccard)
exec(open("alignment_test.py").read(), namespace)
namespace["test_jaccard_is_one_with_itself_and_at_most_mutual_knn"]()
print(json.dumps({
    "measures_docs": registry.docs_table(),
    "alignment_docs": alignment_catalogue.docs_table(),
    "panels": [record.name for record in alignment.PANELS],
    "figures": sorted(specs.FIGURES),
    "in_run": [measure["rows"] for measure in measures_in_run(
        with_defaults(yaml.safe_load(open("config/config.yaml"))))],
}))
"""


def test_a_measure_and_an_alignment_measure_added_as_the_docs_show_reach_every_output(
    tmp_path, tiny_bert_dir
):
    """The two worked examples, each a module dropped into a copy of the package and
    nothing else edited: the workflow on a tiny model writes the measure's rows and figure
    and the alignment measure's columns, null and best-matching layers; the docs' tables
    and the alignment figure's panels hold them; their tests pass."""
    source = tmp_path / "src"
    shutil.copytree(
        REPO / "src" / "contextuality",
        source / "contextuality",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    examples = _worked_examples()
    for path, module_code, _ in examples:
        (source / path.relative_to("src")).write_text(module_code)
    study = tmp_path / "study"
    study.mkdir()
    _write_corpus(study / "corpus.txt")
    model = {"source": str(tiny_bert_dir)}
    config = _config(study / "corpus.txt", {"a": model, "b": model})
    config["measures"]["transforms"] = ["none"]
    config["geometry"] = {"activate": True, "alignment_between_models": True}
    _write_config(study, config)
    environment = {**os.environ, "PYTHONPATH": str(source)}
    run = _snakemake(study, environment=environment)
    assert run.returncode == 0, run.stderr[-3000:]

    measures = pd.read_csv(study / "results/tables/measures.tsv", sep="\t")
    norms = measures[measures["measure"] == "norm"]
    layers = measures.groupby("model")["layer"].nunique()
    assert norms.groupby("model")["layer"].nunique().to_dict() == layers.to_dict()
    assert (norms["raw"] > 0).all()
    assert (study / "results/figures/norm.png").stat().st_size > 0

    alignment = pd.read_csv(study / "results/tables/alignment.tsv", sep="\t")
    assert {"neighbour_jaccard", "null_neighbour_jaccard"} <= set(alignment.columns)
    itself = alignment[
        (alignment["model_a"] == alignment["model_b"])
        & (alignment["layer_a"] == alignment["layer_b"])
    ]
    assert len(itself) and (itself["neighbour_jaccard"].dropna() == 1.0).all()
    best = pd.read_csv(study / "results/tables/best_layers.tsv", sep="\t")
    assert "neighbour_jaccard" in set(best["measure"])

    (study / "alignment_test.py").write_text(examples[1][2])
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        env=environment,
        cwd=study,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    found = json.loads(probe.stdout)
    assert "| `norm` | Mean L2 norm of the occurrence vectors." in found["measures_docs"]
    assert "| `neighbour_jaccard` |" in found["alignment_docs"]
    assert "neighbour_jaccard" in found["panels"] and "norm" in found["figures"]
    listed = {row for rows in found["in_run"] for row in rows.split(", ")}
    assert listed == set(measures["measure"]), "the report lists the rows the table holds"
    report = _snakemake(study, "--report", "report.html", environment=environment)
    assert report.returncode == 0, report.stderr[-3000:]
    assert "Mean L2 norm of the occurrence vectors." in (study / "report.html").read_text()
