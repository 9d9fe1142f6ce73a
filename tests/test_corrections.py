"""The catalogue of corrections: records found in the modules of
`contextuality.transforms.corrections`, from which the transforms' names, the config
check and the docs' list of corrections follow, so that adding a correction is one module
and one test."""

from __future__ import annotations

import dataclasses
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
