"""The catalogues of instruments: records found in their packages' modules and placed by
their declared order, so that adding a measure, an optional measure or an alignment
measure or a correction is one module and one test. The worked examples of
docs/architecture.md, dropped into a copy of the package, reach every output the docs say
they reach."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import types
import uuid
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest
from test_workflow import _config, _write_corpus
from workflow_runs import snakemake, write_config

from contextuality.catalogue.discovery import discover
from contextuality.geometry import alignment_catalogue
from contextuality.geometry.alignment import ALIGNMENT_COLUMNS, MEASURE_COLUMNS

from conftest import shipped

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


def test_discovery_places_modules_by_their_order_then_those_without_one_by_name(
    tmp_path, monkeypatch
):
    monkeypatch.syspath_prepend(str(tmp_path))
    package = _package(
        tmp_path,
        {
            "zeta": "ORDER = 1\n" + RECORD.format("R(name='z1'), R(name='z2')"),
            "beta": RECORD.format("R(name='b1'),"),
            "alpha": "ORDER = 2\n" + RECORD.format("R(name='a1'),"),
            "gamma": RECORD.format("R(name='g1'),"),
        },
    )
    found = [record.name for record in discover(package, "RECORDS")]
    assert found == ["z1", "z2", "a1", "b1", "g1"]


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
    assert names and len(set(names)) == len(names)
    measured = ALIGNMENT_COLUMNS[6 : 6 + 8 * len(names)]
    kinds = ["{}", "{}_low", "{}_high", "bias_{}", "null_{}", "threshold_{}", "p_{}"]
    assert measured == [kind.format(name) for name in names for kind in [*kinds, "calibrated_{}"]]
    with pytest.raises(ValueError, match="cross-products or from neighbours"):
        alignment_catalogue.AlignmentMeasure(name="x", label="x", caption="X.")


@pytest.mark.parametrize(
    "caption", ["Its |a| above the median.", "Without a full stop"], ids=["bar", "no stop"]
)
def test_every_kind_of_record_refuses_a_caption_a_docs_table_or_the_report_would_break(caption):
    from contextuality.measures.record import Measure
    from contextuality.transforms.record import Correction

    kinds = [
        lambda: Measure(name="x", rows=("x",), caption=caption, compute=lambda layer: {}),
        lambda: alignment_catalogue.AlignmentMeasure(
            name="x", label="x", caption=caption, of_neighbours=lambda left, right, weights: 0.0
        ),
        lambda: Correction(name="x", label="x", caption=caption, fit=lambda *arguments: None),
    ]
    for make in kinds:
        with pytest.raises(ValueError, match="a caption is a sentence, without '|'"):
            make()


class WorkedExample(NamedTuple):
    """One worked example of docs/architecture.md: a module and its test, each a path
    and its code as the docs show it."""

    module: Path
    module_code: str
    test: Path
    test_code: str


def _worked_examples() -> list[WorkedExample]:
    """The worked examples of docs/architecture.md, in the order the docs show them: in
    each, two blocks of code, each under the path it is written to."""
    text = (DOCS / "architecture.md").read_text()
    examples = []
    for section in text.split("### Worked example: ")[1:]:
        pieces = []
        for block in re.finditer(r"```python\n(.*?)```", section.split("\n## ")[0], re.S):
            paths = re.findall(
                r"`((?:src/contextuality|tests)/[\w/]+\.py)`", section[: block.start()]
            )
            pieces += [Path(paths[-1]), block.group(1)]
        assert len(pieces) == 4, "a module and its test"
        examples.append(WorkedExample(*pieces))
    return examples


# The records a worked example's module declares.
KINDS = ("Measure", "AlignmentMeasure", "Correction")


def _record(code: str) -> types.SimpleNamespace:
    """The kind and the literal fields (name, rows, caption, optional) of the one record a
    worked example's module declares, read without importing it (it imports the copy)."""
    call = next(
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in KINDS
    )
    fields = {
        keyword.arg: ast.literal_eval(keyword.value)
        for keyword in call.keywords
        if isinstance(keyword.value, (ast.Constant, ast.Tuple))
    }
    return types.SimpleNamespace(**{"kind": call.func.id, "optional": False, **fields})


# Run in the copy of the package: what the docs tables, the alignment figure, the
# figures of the measures, the config check, the fitted corrections and the API hold.
_PROBE = """
import json
import sys
import numpy as np
import yaml
from contextuality import api
from contextuality.configuration.schema import with_defaults
from contextuality.errors import ConfigError
from contextuality.figures import alignment, specs
from contextuality.geometry import alignment_catalogue
from contextuality.measures import registry
from contextuality.transforms import fitting
from contextuality.workflow import measures_in_run
from contextuality.workflow.config import check_config

config = yaml.safe_load(open("config/config.yaml"))
shipped = yaml.safe_load(open(sys.argv[1]))  # the embedded default, as the package ships it
refusals = {}
for name in registry.OPTIONAL + tuple(
    record.name for record in registry.MEASURES if not record.optional
)[:1]:
    try:
        check_config(config | {"measures": {"leave_out": [name]}})
    except ConfigError as error:
        refusals[name] = str(error)
try:
    check_config(config | {"measures": {"transforms": ["none", "unknown"]}})
except ConfigError as error:
    transform_refusal = str(error)
rng = np.random.default_rng(0)
layers = [rng.normal(size=(120, 8)) for _ in range(2)]
words, sentences = [f"w{i % 12}" for i in range(120)], np.repeat(np.arange(30), 4)
corrected = {
    name: sorted(set(api.measure_layer(layers[0] + 5, words, sentences, transform=name)["measure"]))
    for name in fitting.TRANSFORMS
}
fitted = {
    name: fitting.fit_transform(name, layers[0] + 5, fitting.TransformSettings()).describe()
    for name in fitting.TRANSFORMS[1:]
}
print(json.dumps({
    "measures_docs": registry.docs_table(),
    "alignment_docs": alignment_catalogue.docs_table(),
    "corrections_docs": fitting.docs_table(),
    "transforms": fitting.TRANSFORMS,
    "corrected": corrected,
    "fitted": fitted,
    "transform_refusal": transform_refusal,
    "panels": [record.name for record in alignment.PANELS],
    "figures": sorted(specs.FIGURES),
    "optional": registry.OPTIONAL,
    "default_left_out": registry.left_out(shipped["measures"]["leave_out"]),
    "refusals": refusals,
    "api_alignment": list(api.alignment(layers, sentences=np.repeat(np.arange(30), 4))
                          .table.columns),
    "in_run": [measure["rows"] for measure in measures_in_run(with_defaults(config))],
}))
"""


def _run_in_copy(
    tmp_path: Path, examples: list[WorkedExample], tiny_bert_dir, transforms: list[str]
) -> tuple:
    """A copy of the package with the worked examples' modules and tests added, nothing
    else edited, and a study on two tiny models under `transforms` run by the workflow
    with it: (the study, the environment that imports the copy)."""
    source = tmp_path / "src"
    shutil.copytree(
        REPO / "src" / "contextuality",
        source / "contextuality",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (tmp_path / "tests").mkdir()
    for example in examples:
        (source / example.module.relative_to("src")).write_text(example.module_code)
        (tmp_path / example.test).write_text(example.test_code)
    study = tmp_path / "study"
    study.mkdir()
    _write_corpus(study / "corpus.txt")
    model = {"source": str(tiny_bert_dir)}
    config = _config(study / "corpus.txt", {"a": model, "b": model})
    config["measures"]["transforms"] = transforms
    config["geometry"] = {"activate": True, "alignment_between_models": True}
    write_config(study, config)
    environment = {**os.environ, "PYTHONPATH": str(source)}
    run = snakemake(study, environment=environment)
    assert run.returncode == 0, run.stderr[-3000:]
    return study, environment


def test_the_worked_examples_added_as_the_docs_show_reach_every_output(tmp_path, tiny_bert_dir):
    """The worked examples (a measure, an optional measure, an alignment measure, a
    correction), each a module and its test dropped into a copy of the package with
    nothing else edited: their tests pass; the workflow on a tiny model writes the
    measures' rows and figure, under the correction too, and the alignment measure's
    columns after every other, its null and best-matching layers; the docs' tables, the
    alignment figure's panels, the config check, the fitted corrections, the API and the
    report hold them."""
    examples = _worked_examples()
    records = [_record(example.module_code) for example in examples]
    measures = [record for record in records if record.kind == "Measure"]
    optional = [record.name for record in measures if record.optional]
    (aligned,) = [record.name for record in records if record.kind == "AlignmentMeasure"]
    (correction,) = [record for record in records if record.kind == "Correction"]
    assert optional and len(optional) < len(measures), "an optional measure and another"
    study, environment = _run_in_copy(tmp_path, examples, tiny_bert_dir, ["none", correction.name])

    tests = [str(tmp_path / example.test) for example in examples]
    passed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
    )
    assert passed.returncode == 0, passed.stdout[-3000:]
    assert f"{len(examples)} passed" in passed.stdout

    table = pd.read_csv(study / "results/tables/measures.tsv", sep="\t")
    layers = table.groupby("model")["layer"].nunique().to_dict()
    for record in measures:
        for row in record.rows:
            for transform in ("none", correction.name):
                found = table[(table["measure"] == row) & (table["transform"] == transform)]
                assert found.groupby("model")["layer"].nunique().to_dict() == layers, row
                assert found["raw"].notna().all(), row
    assert (study / "results/figures/norm.png").stat().st_size > 0

    alignment = pd.read_csv(study / "results/tables/alignment.tsv", sep="\t")
    added = [pattern.format(aligned) for pattern in MEASURE_COLUMNS]
    last = ALIGNMENT_COLUMNS.index("k")
    assert list(alignment.columns) == [*ALIGNMENT_COLUMNS[:last], *added, *ALIGNMENT_COLUMNS[last:]]
    itself = alignment[
        (alignment["model_a"] == alignment["model_b"])
        & (alignment["layer_a"] == alignment["layer_b"])
    ]
    assert len(itself) and (itself[aligned].dropna() == 1.0).all()
    best = pd.read_csv(study / "results/tables/best_layers.tsv", sep="\t")
    assert aligned in set(best["measure"])

    embedded = tmp_path / "shipped-config.yaml"
    embedded.write_text(shipped(REPO / "config" / "config.yaml"))
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, str(embedded)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=study,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    found = json.loads(probe.stdout)
    for record in measures:
        assert f"| `{record.name}` | {record.caption} |" in found["measures_docs"]
    assert f"| `{aligned}` |" in found["alignment_docs"]
    described = f"| `{correction.name}` | {correction.label} | {correction.caption} |"
    assert described in found["corrections_docs"]
    assert found["transforms"][-1] == correction.name  # after every existing correction
    assert found["transform_refusal"].endswith(", ".join(found["transforms"]))
    assert found["fitted"][correction.name]["name"] == correction.name
    for record in measures:
        assert set(record.rows) <= set(found["corrected"][correction.name])
    assert aligned in found["panels"] and "norm" in found["figures"]
    assert set(optional) <= set(found["optional"])
    assert set(optional) <= set(found["default_left_out"]), "the embedded default's minute"
    (refused,) = found["refusals"]  # of the optional measures and one other, the other
    assert refused not in found["optional"]
    assert all(name in found["refusals"][refused] for name in optional)
    trailing = len(ALIGNMENT_COLUMNS) - last  # k, knn_recall, n_rows, … after the measures
    assert found["api_alignment"][-len(added) - trailing : -trailing] == added
    listed = {row for rows in found["in_run"] for row in rows.split(", ")}
    assert listed == set(table["measure"]), "the report lists the rows the table holds"
    report = snakemake(study, "--report", "report.html", environment=environment)
    assert report.returncode == 0, report.stderr[-3000:]
    assert measures[0].caption in (study / "report.html").read_text()
