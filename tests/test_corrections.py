"""The catalogue of corrections: records found in the modules of
`contextuality.transforms.corrections`, from which the transforms' names, the config
check and the docs' list of corrections follow, so that adding a correction is one module
and one test."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from contextuality.configuration.schema import properties
from contextuality.errors import ConfigError
from contextuality.transforms import corrections, fitting
from contextuality.workflow import check_config

REPO = Path(__file__).resolve().parents[1]
ROWS = np.random.default_rng(0).standard_normal((200, 6)) * np.geomspace(0.5, 4, 6) + 3


def test_the_transforms_are_none_then_the_corrections_in_their_modules_order():
    import importlib
    import pkgutil

    modules = [
        importlib.import_module(f"{corrections.__name__}.{info.name}")
        for info in pkgutil.iter_modules(corrections.__path__)
    ]
    by_order = sorted(modules, key=lambda module: module.ORDER)
    declared = [record.name for module in by_order for record in module.CORRECTIONS]
    assert ("none", *declared) == fitting.TRANSFORMS
    assert len(set(fitting.TRANSFORMS)) == len(fitting.TRANSFORMS)


@pytest.mark.parametrize("record", fitting.CORRECTIONS, ids=lambda record: record.name)
def test_each_correction_reads_settings_the_schema_declares_and_fits_an_affine_map(record):
    fields = {field.name for field in dataclasses.fields(fitting.TransformSettings)}
    assert set(record.settings) <= fields & set(properties("measures", "transform_fit"))
    assert record.label and record.caption.endswith(".")
    fitted = fitting.fit_transform(record.name, ROWS, fitting.TransformSettings())
    assert fitted.name == record.name and fitted.n_fit == len(ROWS)
    assert fitted.mean.shape == (ROWS.shape[1],) and fitted.matrix.shape[0] == ROWS.shape[1]
    assert np.allclose(fitted.apply(ROWS), (ROWS - fitted.mean) @ fitted.matrix, atol=1e-4)


def _config(*transforms: str) -> dict:
    return {"models": {"m": {"source": "m"}}, "measures": {"transforms": ["none", *transforms]}}


def test_the_config_check_takes_every_transform_and_refuses_another_naming_them():
    check_config(_config(*fitting.TRANSFORMS[1:]))
    config = _config("pca")
    config["figures"] = {"transforms": ["whitening"]}
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    lines = str(caught.value).splitlines()[1:]
    said = f"is not a transform; the transforms: {', '.join(fitting.TRANSFORMS)}"
    assert f"measures.transforms: 'pca' {said}" in [line.strip() for line in lines]
    assert f"figures.transforms: 'whitening' {said}" in [line.strip() for line in lines]


# A correction as a contributor adds it: a module of transforms/corrections/ and its test.
ADDED_CORRECTION = '''
"""``rescale``: every vector divided by the mean norm of the fitting rows."""

import numpy as np

from contextuality.transforms.record import Correction


def fit_rescale(vectors, settings, stored_as):
    """x ↦ x / mean ‖row‖ over `vectors` (n, d)."""
    mean_norm = float(np.linalg.norm(vectors.astype(np.float64), axis=1).mean())
    d = vectors.shape[1]
    return np.zeros(d), np.eye(d) / mean_norm, {"mean_norm": mean_norm}


CORRECTIONS = (
    Correction(
        name="rescale",
        label="rescaled",
        caption="Every vector divided by the mean norm of the fitting rows.",
        fit=fit_rescale,
    ),
)
'''
ADDED_TEST = """
import numpy as np

from contextuality.transforms.fitting import TransformSettings, fit_transform


def test_rescaled_fitting_rows_have_unit_mean_norm():
    rows = np.random.default_rng(1).standard_normal((50, 4)) + 2
    rescaled = fit_transform("rescale", rows, TransformSettings()).apply(rows)
    assert np.isclose(np.linalg.norm(rescaled, axis=1).mean(), 1, atol=1e-5)
"""
# Run in the copy of the package: what the transforms, the config check, the fit, the
# measures of a layer and the docs' table make of the added correction.
PROBE = """
import json
import numpy as np
from contextuality import api
from contextuality.errors import ConfigError
from contextuality.measures.settings import MeasureSettings
from contextuality.transforms import fitting
from contextuality.workflow import check_config

check_config({"models": {"m": {"source": "m"}}, "measures": {"transforms": ["none", "rescale"]}})
try:
    check_config({"models": {"m": {"source": "m"}}, "measures": {"transforms": ["none", "rescal"]}})
    refusal = ""
except ConfigError as error:
    refusal = str(error)
rng = np.random.default_rng(2)
vectors = rng.standard_normal((240, 8)) + 5
words = [f"w{i % 12}" for i in range(240)]
sentences = [i // 6 for i in range(240)]
settings = MeasureSettings(baseline_sample_size=40, bootstrap_resamples=20, isotropy_samples=3)
table = api.measure_layer(vectors, words, sentences, transform="rescale", settings=settings)
fitted = fitting.fit_transform("rescale", vectors, fitting.TransformSettings())
print(json.dumps({
    "transforms": fitting.TRANSFORMS,
    "refusal": refusal,
    "described": fitted.describe(),
    "measured": sorted(table["measure"]),
    "docs": fitting.docs_table(),
}))
"""


def test_a_correction_added_as_one_module_is_checked_fitted_applied_and_listed(tmp_path):
    """A module dropped into a copy of transforms/corrections/, and nothing else edited:
    it comes last among the transforms, the config check takes it and names it among the
    valid ones, it is fitted and applied, a layer is measured under it, the docs' table
    lists it, and its own test passes."""
    source = tmp_path / "src"
    shutil.copytree(
        REPO / "src" / "contextuality",
        source / "contextuality",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    module = source / "contextuality" / "transforms" / "corrections" / "rescale.py"
    module.write_text(textwrap.dedent(ADDED_CORRECTION))
    (tmp_path / "test_rescale.py").write_text(textwrap.dedent(ADDED_TEST))
    environment = {**os.environ, "PYTHONPATH": str(source)}

    def run(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, *arguments],
            capture_output=True,
            text=True,
            env=environment,
            cwd=tmp_path,
        )

    probe = run("-c", PROBE)
    assert probe.returncode == 0, probe.stderr[-3000:]
    found = json.loads(probe.stdout)
    assert found["transforms"] == [*fitting.TRANSFORMS, "rescale"]
    valid = ", ".join(found["transforms"])
    refused = f"measures.transforms: 'rescal' is not a transform; the transforms: {valid}"
    assert found["refusal"].splitlines()[1:] == [f"  {refused}"]
    assert found["described"]["name"] == "rescale"
    assert found["described"]["parameters"]["mean_norm"] > 0
    assert "selfsim" in found["measured"]
    assert "| `rescale` | rescaled | Every vector divided by the mean norm" in found["docs"]
    own_test = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_rescale.py")
    assert own_test.returncode == 0, own_test.stdout[-3000:]
