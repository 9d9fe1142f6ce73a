"""How far a map of best-matching layers holds (config ``alignment_sensitivity``,
`geometry.sensitivity`): mutual k-NN at every k equal to a search made at that k, rows
without a vector left out, the null the seeded pairing's; the best matches, margins and
seeds' spread of constructed tables; and as a stage, on two tiny GPT-2s, the reference
setting's values the alignment table's, a pair added planning its own jobs only, and a bad
pair refused in one line while the workflow plans."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_workflow import _config, _write_corpus
from workflow_runs import planned_jobs, snakemake, write_config

from contextuality.configuration.random_streams import generator
from contextuality.files.tables import read_parquet_with_provenance, read_tsv
from contextuality.geometry.neighbours import cosine_neighbours, mutual_knn
from contextuality.geometry.sensitivity import (
    SensitivitySettings,
    best_matches,
    mutual_knn_grid,
    seed_spread,
)

STAGE_JOBS = ("alignment_sensitivity", "alignment_sensitivity_tables")


def _layers(seed: int, n: int = 60, d: int = 8) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {layer: rng.standard_normal((n, d)).astype(np.float32) for layer in (0, 3)}


def test_each_k_is_a_search_at_that_k_and_the_null_the_seeded_pairing_s():
    left, right = _layers(0), _layers(1)
    right[3] = left[0].copy()  # a layer of the other model that is one of this one's
    left[0][[5, 9]] = np.nan  # two occurrences without a vector
    table = mutual_knn_grid(left, right, [2, 5], seed=4)
    kept = np.setdiff1d(np.arange(60), [5, 9])
    assert set(table["n_rows"]) == {len(kept)}
    pairing = generator(4, "alignment_null").permutation(len(kept))
    for row in table.itertuples():
        one = cosine_neighbours(left[row.layer_a][kept], row.k)
        two = cosine_neighbours(right[row.layer_b][kept], row.k)
        assert row.mutual_knn == pytest.approx(mutual_knn(one, two))
        assert row.null_mutual_knn == pytest.approx(mutual_knn(one, two.paired(pairing)))
    same = table[(table["layer_a"] == 0) & (table["layer_b"] == 3)]
    assert (same["mutual_knn"] == 1).all() and (same["null_mutual_knn"] < 0.5).all()


def test_the_samples_drawn_start_at_the_reference_and_repeat_none():
    settings = SensitivitySettings((100, 500, 1000), (0, 1, 2), (5, 20), (500, 1, 10))
    assert settings.samples(800) == [(500, 1), (100, 1), (800, 1), (500, 0), (500, 2)]
    assert settings.ks() == (5, 10, 20)
    assert settings.is_reference(500, 1, 10, 800) and not settings.is_reference(500, 1, 5, 800)
    every_row = SensitivitySettings((100,), (0,), (5,), (None, 0, 5))
    assert every_row.samples(80) == [(80, 0)]


def _table() -> pd.DataFrame:
    """Two settings of one pair: layer 0's best match is layer 1 in both (margins 0.3 and
    0.1), layer 1's moves from layer 1 to layer 0; the first setting is the reference."""
    rows = []
    for seed, values in (
        (0, {(0, 0): 0.2, (0, 1): 0.5, (1, 0): 0.1, (1, 1): 0.4}),
        (1, {(0, 0): 0.3, (0, 1): 0.4, (1, 0): 0.6, (1, 1): 0.2}),
    ):
        for (layer_a, layer_b), value in values.items():
            rows.append(
                {
                    "model_a": "a",
                    "model_b": "b",
                    "reference": seed == 0,
                    "sample_size": 10,
                    "seed": seed,
                    "k": 3,
                    "n_rows": 10,
                    "layer_a": layer_a,
                    "layer_b": layer_b,
                    "mutual_knn": value,
                    "null_mutual_knn": 0.0,
                }
            )
    return pd.DataFrame(rows)


def test_best_matches_their_margins_and_the_seeds_spread_are_the_table_s():
    best = best_matches(_table()).set_index(["seed", "layer_a"])
    assert best["best_layer"].to_dict() == {(0, 0): 1, (0, 1): 1, (1, 0): 1, (1, 1): 0}
    np.testing.assert_allclose(best["margin"].to_numpy(), [0.3, 0.3, 0.1, 0.4])
    assert best["as_reference"].to_dict() == {
        (0, 0): True,
        (0, 1): True,
        (1, 0): True,
        (1, 1): False,
    }
    spread = seed_spread(_table()).set_index(["layer_a", "layer_b"])
    assert spread.loc[(1, 0), "std"] == pytest.approx(np.std([0.1, 0.6], ddof=1))
    assert set(spread["seeds"]) == {2}
    with pytest.raises(ValueError, match="2 settings as the reference"):
        best_matches(_table().assign(reference=True))


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_gpt2_dir):
    """A finished run of a tiny GPT-2 and its random-weights twin with the geometry and the
    stage on: (its directory, its config)."""
    directory = tmp_path_factory.mktemp("sensitivity")
    _write_corpus(directory / "corpus.txt")
    gpt2 = {"source": str(tiny_gpt2_dir), "layers": [0, 1, 2]}
    config = _config(directory / "corpus.txt", {"g": gpt2, "r": gpt2 | {"random_weights_seed": 3}})
    config["geometry"] = {
        "activate": True,
        "alignment": {"k": 4, "permutations": 2, "bootstrap": 2},
    }
    config["alignment_sensitivity"] = {
        "pairs": [["g", "r"]],
        "sample_sizes": [30],
        "seeds": [2],
        "k": [2, 6],
    }
    write_config(directory, config)
    result = snakemake(directory)
    assert result.returncode == 0, result.stderr[-3000:]
    return directory, config


def test_the_reference_setting_is_the_alignment_table_s(study):
    directory, _ = study
    rows, provenance = read_parquet_with_provenance(
        directory / "results/geometry/alignment_sensitivity/g~r.parquet"
    )
    assert set(rows["k"]) == {2, 4, 6} and set(rows["seed"]) == {1, 2}
    assert set(provenance["models"]) == {"g", "r"}
    reference = rows[rows["reference"]].set_index(["layer_a", "layer_b"])
    assert set(reference["k"]) == {4} and set(reference["seed"]) == {1}
    alignment = read_tsv(directory / "results/tables/alignment.tsv")
    alignment = alignment[
        (alignment["model_a"] == "g")
        & (alignment["model_b"] == "r")
        & (alignment["occurrences"] == "all")
    ].set_index(["layer_a", "layer_b"])
    pd.testing.assert_series_equal(
        reference["mutual_knn"], alignment.loc[reference.index, "mutual_knn"], check_dtype=False
    )
    matches = read_tsv(directory / "results/tables/alignment_sensitivity_matches.tsv")
    assert len(matches) == 3 * rows.groupby(["sample_size", "seed", "k"]).ngroups
    assert (directory / "results/figures/alignment_sensitivity.png").stat().st_size > 0


def test_a_pair_added_plans_its_own_jobs_and_a_bad_pair_is_one_line(study):
    directory, config = study
    added = config | {
        "alignment_sensitivity": config["alignment_sensitivity"]
        | {"pairs": [["g", "r"], ["r", "g"]]}
    }
    write_config(directory, added)
    planned = planned_jobs(directory)
    assert planned == {"alignment_sensitivity": 1, "alignment_sensitivity_tables": 1, "all": 1}
    for pair, said in (
        (["g", "x"], "alignment_sensitivity.pairs.0: no model named 'x' under models"),
        (["g", "g"], "alignment_sensitivity.pairs.0: g with itself"),
    ):
        write_config(directory, config | {"alignment_sensitivity": {"pairs": [pair]}})
        result = snakemake(directory, "--dry-run")
        assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
        assert said in result.stderr
    write_config(directory, config)
