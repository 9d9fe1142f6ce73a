"""Publishing a study (``contextuality publish``): the code a run computes with is named in
every output's provenance (`source_version`), and a study's tables and figures are copied
with their provenance only where one committed state of the code made them all, the
destination untouched by a refusal."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from contextuality.cli import main
from contextuality.errors import InputDataError
from contextuality.figures.paper import plt, save_figure
from contextuality.files import provenance
from contextuality.files.provenance import read_json, sha256_file, source_version
from contextuality.files.tables import read_tsv, write_tsv
from contextuality.verification.publish import (
    FIGURES_LEFT_BEHIND,
    JOB_TIMES,
    RECORD,
    made_by,
    publish_study,
)

COMMIT = "0" * 39 + "1"


def _write_study(study: Path, monkeypatch, versions: dict[str, str]) -> None:
    """A study of two tables and a figure, each made by the code `versions` names
    (table or figure name → source_version)."""
    for name in ("measures", "words/minilm.none"):
        monkeypatch.setattr(provenance, "_running_source_version", lambda n=name: versions[n])
        frame = pd.DataFrame({"layer": [0, 1], "value": [0.25, 0.5]})
        write_tsv(frame, study / f"results/tables/{name}.tsv", provenance.provenance_record())
    monkeypatch.setattr(provenance, "_running_source_version", lambda: versions["figure"])
    figure, panel = plt.subplots()
    panel.plot([0, 1], [0.25, 0.5])
    save_figure(figure, [study / "results/figures/fig1.png"], "")


def test_a_study_of_one_commit_is_published_with_its_provenance(tmp_path, monkeypatch):
    study, destination = tmp_path / "study", tmp_path / "docs/results/run"
    _write_study(
        study, monkeypatch, dict.fromkeys(("measures", "words/minilm.none", "figure"), COMMIT)
    )
    (destination / "stale").mkdir(parents=True)
    assert main(["publish", str(study), str(destination)]) == 0
    record = read_json(destination / RECORD)
    assert record["made_by"] == [COMMIT]
    assert set(record["files"]) == {
        "tables/measures.tsv",
        "tables/words/minilm.none.tsv",
        "figures/fig1.png",
        "job_times.tsv",
    }
    for name, digest in record["files"].items():
        assert sha256_file(destination / name) == digest
    assert (destination / "tables/measures.provenance.json").is_file()
    assert (destination / "figures/fig1.png.provenance.json").is_file()
    assert not (destination / "stale").exists()
    assert [path.name for path in destination.parent.iterdir()] == ["run"]


@pytest.mark.parametrize(
    ("figure_version", "message"),
    [
        (
            f"{COMMIT}+uncommitted",
            rf"^results/figures/fig1.png: made from uncommitted code \({COMMIT}\+uncommitted\)",
        ),
        ("", r"^results/figures/fig1.png: made by an installed package"),
    ],
)
def test_a_study_not_made_by_committed_code_is_refused_and_the_destination_kept(
    tmp_path, monkeypatch, figure_version, message
):
    study, destination = tmp_path / "study", tmp_path / "published"
    versions = {"measures": COMMIT, "words/minilm.none": COMMIT, "figure": figure_version}
    _write_study(study, monkeypatch, versions)
    (destination / "tables").mkdir(parents=True)
    (destination / "tables/kept.tsv").write_text("kept\n")
    with pytest.raises(InputDataError, match=message):
        publish_study(study, destination)
    assert [path.name for path in destination.rglob("*")] == ["tables", "kept.tsv"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["published", "study"]


def test_files_of_two_commits_are_published_with_both_named(tmp_path, monkeypatch):
    study, destination = tmp_path / "study", tmp_path / "published"
    later = "2" * 40
    _write_study(
        study, monkeypatch, {"measures": COMMIT, "words/minilm.none": COMMIT, "figure": later}
    )
    assert publish_study(study, destination)["made_by"] == [COMMIT, later]


def test_a_damaged_study_or_a_record_without_code_is_refused(tmp_path, monkeypatch):
    study = tmp_path / "study"
    _write_study(
        study, monkeypatch, dict.fromkeys(("measures", "words/minilm.none", "figure"), COMMIT)
    )
    table = study / "results/tables/measures.tsv"
    table.write_text(table.read_text().replace("0.5", "0.6"))
    with pytest.raises(InputDataError, match=r"1 damaged.*'contextuality verify"):
        publish_study(study, tmp_path / "published")
    assert not (tmp_path / "published").exists()
    with pytest.raises(InputDataError, match=r"^a.tsv: its provenance names no code"):
        made_by({Path("a.tsv"): {"package_version": "0.1.0", "sources": [{"step": "x"}]}})


def _git(repository: Path, *arguments: str) -> str:
    command = ["git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@t"]
    return subprocess.run(
        [*command, *arguments], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_source_version_is_the_commit_and_says_where_the_code_differs(tmp_path):
    assert source_version(tmp_path) == ""
    (tmp_path / "src").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "src/code.py").write_text("x = 1\n")
    (tmp_path / "docs/page.md").write_text("# page\n")
    _git(tmp_path, "init", "--quiet")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "--quiet", "-m", "first")
    commit = _git(tmp_path, "rev-parse", "HEAD")
    assert source_version(tmp_path) == commit
    (tmp_path / "docs/page.md").write_text("# another page\n")
    assert source_version(tmp_path) == commit
    (tmp_path / "src/new.py").write_text("y = 2\n")
    assert source_version(tmp_path) == f"{commit}+uncommitted"


def test_a_publication_gives_the_run_s_job_times_by_step(tmp_path, monkeypatch):
    """Each job's benchmark file (Snakemake's, the last line its last run) counted in its
    step: three measure jobs of 2, 4 and 9 s, one extraction of 30 s."""
    study, destination = tmp_path / "study", tmp_path / "published"
    _write_study(
        study, monkeypatch, dict.fromkeys(("measures", "words/minilm.none", "figure"), COMMIT)
    )
    header = "s\th:m:s\tmax_rss\tmax_vms\n"
    runs = {
        "measures/minilm/none/layer_0.tsv": ["2.0\t0:00:02\t100.5\t900"],
        "measures/minilm/none/layer_1.tsv": ["7.0\t0:00:07\t50\t900", "4.0\t0:00:04\t60\t900"],
        "measures/minilm/center/layer_0.tsv": ["9.0\t0:00:09\t80\t900"],
        "extract/minilm.tsv": ["30.0\t0:00:30\t1200\t4000"],
    }
    for name, lines in runs.items():
        path = study / "benchmarks" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + "\n".join(lines) + "\n")
    publish_study(study, destination)
    times = read_tsv(destination / JOB_TIMES).set_index("step")
    assert times.loc[
        "measures", ["jobs", "seconds_min", "seconds_median", "seconds_max"]
    ].tolist() == [
        3,
        2.0,
        4.0,
        9.0,
    ]
    assert times.loc["measures", "seconds_total"] == 15.0
    assert times.loc["measures", "max_rss_mb"] == 100.5
    assert times.loc["extract", "jobs"] == 1 and times.loc["extract", "seconds_total"] == 30.0
    assert (
        sha256_file(destination / JOB_TIMES) == read_json(destination / RECORD)["files"][JOB_TIMES]
    )


def test_figures_not_chosen_stay_behind_with_their_digest(tmp_path, monkeypatch):
    """``--figure`` copies the figures its patterns match; the rest are not copied, and
    the record keeps each one's SHA-256; a pattern matching nothing is refused."""
    study, destination = tmp_path / "study", tmp_path / "published"
    _write_study(
        study, monkeypatch, dict.fromkeys(("measures", "words/minilm.none", "figure"), COMMIT)
    )
    figure, panel = plt.subplots()
    panel.plot([0, 1], [0.5, 0.25])
    save_figure(figure, [study / "results/figures/sweeps/run-0.png"], "")
    assert main(["publish", "--figure", "sweeps/*", str(study), str(destination)]) == 0
    record = read_json(destination / RECORD)
    assert "figures/sweeps/run-0.png" in record["files"]
    assert (destination / "figures/sweeps/run-0.png.provenance.json").is_file()
    assert record[FIGURES_LEFT_BEHIND] == {
        "figures/fig1.png": sha256_file(study / "results/figures/fig1.png")
    }
    assert not (destination / "figures/fig1.png").exists()
    assert not (destination / "figures/fig1.png.provenance.json").exists()
    with pytest.raises(InputDataError, match=r"^--figure fig9\.png: no figure under"):
        publish_study(study, tmp_path / "other", ["fig1.png", "fig9.png"])
    assert not (tmp_path / "other").exists()
    assert FIGURES_LEFT_BEHIND not in publish_study(study, tmp_path / "every")
    assert main(["publish", "--no-figures", str(study), str(tmp_path / "tables")]) == 0
    record = read_json(tmp_path / "tables" / RECORD)
    assert set(record[FIGURES_LEFT_BEHIND]) == {"figures/fig1.png", "figures/sweeps/run-0.png"}
    assert not (tmp_path / "tables/figures").exists()
