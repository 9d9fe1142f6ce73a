"""The geometry steps under a correction (`steps.geometry.GeometryTransform`): intrinsic
dimension and alignment of the layers with the rogue dimensions removed or every dimension
standardized, fitted as the measure step fits them and measured on the other sentences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ortho_group
from test_geometry import N_ROWS, WIDTH, kernel_cka, outputs, typed, write_model

from contextuality import steps
from contextuality.corpus.index import IndexFiles, index_checksum
from contextuality.files.provenance import provenance_record, read_json, write_json
from contextuality.files.tables import read_provenance, write_parquet
from contextuality.geometry.alignment import sample_rows
from contextuality.geometry.dimension import CURVE_COLUMNS
from contextuality.steps.geometry import GeometryTransform
from contextuality.transforms.fitting import TransformSettings, fit_transform
from contextuality.transforms.layers import TransformFit, load_layer

N_SENTENCES = N_ROWS // 10
FIT_SETTINGS = {"rogue_dimensions": 2, "seed": 0}


@pytest.fixture
def corrected(tmp_path):
    """Model ``a`` (two layers, the first far off the origin and widely spread along two
    dimensions: rogue dimensions) and ``b`` (a rotated, scaled copy of a's layer 1 and an
    unrelated layer) on one index of 40 ten-word sentences, with a split holding out 8."""
    rng = np.random.default_rng(11)
    occurrences = pd.DataFrame(
        {
            "occurrence_id": np.arange(N_ROWS),
            "sentence_id": np.repeat(np.arange(N_SENTENCES), 10),
            "position": np.tile(np.arange(10), N_SENTENCES),
            "word_id": np.zeros(N_ROWS, dtype=np.int64),
            "word": "w",
        }
    )
    checksum = index_checksum(occurrences)
    first = rng.normal(size=(N_ROWS, WIDTH))
    first[:, :2] = 8.0 * first[:, :2] + [40.0, -25.0]  # rogue: far off the origin, wide
    second = np.tanh(first @ rng.normal(size=(WIDTH, WIDTH)) / 10)
    model_a = write_model(tmp_path, "a", {0: first, 1: second}, checksum)
    rotation = ortho_group.rvs(WIDTH, random_state=4)
    model_b = write_model(
        tmp_path, "b", {0: 2.0 * second @ rotation, 1: rng.normal(size=(N_ROWS, WIDTH))}, checksum
    )
    summary = tmp_path / "index.json"
    write_json(
        summary, {"index_checksum": checksum, "corpus_checksum": "c", "n_occurrences": N_ROWS}
    )
    index = IndexFiles(tmp_path / "occurrences.parquet", tmp_path / "vocab.parquet", summary)
    write_parquet(occurrences, index.occurrences, {})
    fit = np.zeros(N_SENTENCES, dtype=bool)
    fit[rng.choice(N_SENTENCES, 8, replace=False)] = True
    split = tmp_path / "split.parquet"
    record = provenance_record(fit_fraction=0.2, seed=0, n_fit_sentences=8, corpus_checksum="c")
    write_parquet(pd.DataFrame({"sentence_id": range(N_SENTENCES), "fit": fit}), split, record)
    settings = {
        "sample_size": 300,
        "seed": 0,
        "confidence": 0.95,
        "intrinsic_dimension": {"min_points": 50, "plateau_tolerance": 0.25},
    }
    layers = {"a": {0: first, 1: second}, "b": {0: 2.0 * second @ rotation}}
    in_fit = fit[occurrences["sentence_id"].to_numpy()]
    return model_a, model_b, index, settings, TransformFit(split, FIT_SETTINGS), layers, in_fit


def _measured_rows(in_fit: np.ndarray) -> np.ndarray:
    """The sampled rows (300 of 400, seed 0) outside the fitting sentences."""
    rows = sample_rows(N_ROWS, 300, 0)
    return rows[~in_fit[rows]]


def _corrected(name: str, layer: np.ndarray, in_fit: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`layer` as stored (float16), corrected by `name` fitted on the fitting sentences'
    rows, at `rows`: the definition the step must follow."""
    stored = layer.astype(np.float16)
    fitted = fit_transform(name, stored[in_fit], TransformSettings(**FIT_SETTINGS))
    return fitted.apply(stored[rows]).astype(np.float64)


@pytest.mark.parametrize("name", ["drop_rogue", "standardize"])
def test_a_corrected_geometry_is_the_stored_layers_corrected_on_the_held_out_rows(
    corrected, tmp_path, name
):
    model_a, _, index, settings, fit, layers, in_fit = corrected
    written = outputs(tmp_path, name)
    table = steps.layer_geometry(
        model_a, index, typed(settings), *written, transform=GeometryTransform(name, fit)
    )
    rows = _measured_rows(in_fit)
    read = [_corrected(name, layers["a"][layer], in_fit, rows) for layer in (0, 1)]
    every = table[(table["occurrences"] == "all") & (table["model_b"] == "a")]
    grid = every.pivot(index="layer_a", columns="layer_b", values="cka").to_numpy()
    np.testing.assert_allclose(grid, [[kernel_cka(x, y) for y in read] for x in read], atol=1e-4)
    assert set(every["n_rows"]) == {len(rows)} and set(table["transform"]) == {name}
    # The fit recorded is the measure step's fit of the same layer, to the split's checksum.
    summaries = read_json(written[0])["layers"]
    measured = load_layer(
        model_a.shards[0], index.read_summary(), index.read_occurrences(), name, fit
    )
    assert summaries[0]["transform_fit"] == measured.transform_fit
    assert {summary["transform"] for summary in summaries} == {name}
    assert summaries[0]["measures"]["intrinsic_dimension[twonn]"]["n"] == len(rows)
    curves = pd.read_parquet(written[1])
    assert list(curves.columns) == list(CURVE_COLUMNS)
    assert set(curves["transform"]) == {name}
    provenance = read_provenance(written[2])
    assert provenance["transform"] == name
    assert set(provenance["models"][0]["transform_fits"]) == {"0", "1"}


def test_centring_leaves_linear_cka_as_it_is_and_dropping_rogue_dimensions_does_not(
    corrected, tmp_path
):
    """Layer 0's two rogue dimensions carry nearly all of its expected cosine and most of
    its variance: drop_rogue finds them (its fit records them) and CKA without them is CKA
    of the other columns, another value, while under ``center`` it is the raw layers' own
    (CKA centres)."""
    model_a, _, index, settings, fit, layers, in_fit = corrected
    tables = {
        name: steps.layer_geometry(
            model_a, index, typed(settings), *outputs(tmp_path, name), GeometryTransform(name, fit)
        )
        for name in ("center", "drop_rogue")
    }
    rows = _measured_rows(in_fit)
    raw = [layers["a"][layer].astype(np.float16).astype(np.float64)[rows] for layer in (0, 1)]
    value = {
        name: table.set_index(["model_b", "occurrences", "layer_a", "layer_b"]).loc[
            ("a", "all", 0, 1), "cka"
        ]
        for name, table in tables.items()
    }
    assert value["center"] == pytest.approx(kernel_cka(*raw), abs=1e-4)
    fits = read_json(outputs(tmp_path, "drop_rogue")[0])["layers"]
    assert fits[0]["transform_fit"]["parameters"]["dimensions"] == [0, 1]
    assert fits[0]["transform_fit"]["parameters"]["expected_cosine_share"] > 0.99
    kept = [
        np.delete(raw[layer], fits[layer]["transform_fit"]["parameters"]["dimensions"], axis=1)
        for layer in (0, 1)
    ]
    assert value["drop_rogue"] == pytest.approx(kernel_cka(*kept), abs=1e-4)
    assert abs(value["drop_rogue"] - value["center"]) > 0.01


def test_alignment_between_models_under_a_correction_fits_each_model_its_own(corrected, tmp_path):
    model_a, model_b, index, settings, fit, _, in_fit = corrected
    transform = GeometryTransform("center", fit)
    path = tmp_path / "ab.center.parquet"
    best_path = tmp_path / "ab.center.best.parquet"
    table = steps.alignment_between_models(
        model_a, model_b, index, typed(settings), path, best_path, transform
    ).table
    copy = table.set_index(["occurrences", "layer_a", "layer_b"]).loc[("all", 1, 0)]
    assert copy["cka"] == pytest.approx(1.0, abs=1e-3)  # a rotated, scaled copy, centred
    assert copy["procrustes"] == pytest.approx(0.0, abs=0.05)
    assert copy["n_rows"] == len(_measured_rows(in_fit))
    fits = [model["transform_fits"]["0"] for model in read_provenance(path)["models"]]
    assert fits[0]["n_fit"] == fits[1]["n_fit"] and fits[0]["name"] == "center"
    raw_path = tmp_path / "ab.none.parquet"
    raw_best = tmp_path / "ab.none.best.parquet"
    steps.alignment_between_models(model_a, model_b, index, typed(settings), raw_path, raw_best)
    gathered = steps.alignment_table(
        [path, raw_path],
        [best_path, raw_best],
        tmp_path / "alignment.tsv",
        tmp_path / "best_layers.tsv",
    )
    assert list(dict.fromkeys(gathered["transform"])) == ["none", "center"]
    best = pd.read_csv(tmp_path / "best_layers.tsv", sep="\t")
    assert list(dict.fromkeys(best["transform"])) == ["none", "center"]
    of_b = best[(best["model"] == "b") & (best["layer"] == 0) & (best["measure"] == "cka")]
    assert set(of_b["transform"]) == {"none", "center"} and set(of_b["best_layer"]) == {1}


def test_the_measures_and_curves_tables_keep_each_transform_s_rows(corrected, tmp_path):
    model_a, _, index, settings, fit, _, _ = corrected
    files = {}
    for name in ("none", "drop_rogue"):
        files[name] = outputs(tmp_path, name)
        transform = GeometryTransform(name, None if name == "none" else fit)
        steps.layer_geometry(model_a, index, typed(settings), *files[name], transform=transform)
    measures = steps.measures_table(
        [], tmp_path / "measures.tsv", [files["drop_rogue"][0], files["none"][0]]
    )
    counts = measures.groupby("transform")["measure"].nunique().to_dict()
    assert counts == {"drop_rogue": 2, "none": 2}
    curves = steps.dimension_scales_table(
        [files["drop_rogue"][1], files["none"][1]], tmp_path / "scales.tsv"
    )
    assert list(dict.fromkeys(curves["transform"])) == ["none", "drop_rogue"]


def test_a_correction_without_its_split_is_refused():
    with pytest.raises(ValueError, match="needs the fit split"):
        GeometryTransform("standardize")
