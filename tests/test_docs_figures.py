"""The docs' figures drawn again from their committed tables (`figures.docs`): each is the
file the docs show, within a small tolerance of its pixels, so that a change of the
figure code or of a table without the figure drawn again fails here."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.testing.compare import compare_images

from contextuality.figures import docs
from contextuality.files.provenance import sha256_file
from contextuality.verification.publish import FIGURES_LEFT_BEHIND

ROOT = Path(__file__).resolve().parents[1]
# Root-mean-square difference of the pixels (0–255) a redrawn figure may show.
TOLERANCE = 2.0


@pytest.mark.parametrize("name", list(docs.FIGURES))
def test_a_docs_figure_is_its_tables_drawn_again(tmp_path, name):
    drawn = docs.redraw(name, tmp_path / name)
    again = f"python -m contextuality.figures.docs {name}"
    found = compare_images(str(docs.IMAGES / name), str(drawn), TOLERANCE)
    assert found is None, f"docs/images/{name} is not its tables drawn again ({again}): {found}"


def test_every_figure_drawn_again_is_shown_by_a_page_and_its_tables_committed():
    pages = [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    shown = {
        match for page in pages for match in re.findall(r"images/([\w.-]+\.png)", page.read_text())
    }
    assert set(docs.FIGURES) <= shown
    for figure in docs.FIGURES.values():
        for table in figure.tables:
            assert (ROOT / table).is_file(), table


def test_every_docs_image_is_drawn_again_from_its_tables():
    """No figure under docs/images is left to go stale: each is one `figures.docs` draws."""
    images = {path.name for path in docs.IMAGES.glob("*.png")}
    assert images == set(docs.FIGURES), sorted(images ^ set(docs.FIGURES))


def test_a_figure_of_other_numbers_is_told_apart(tmp_path, monkeypatch):
    """The comparison can fail: the STS scores halved draw another figure."""
    original = pd.read_csv
    scores = docs.FIGURES["downstream.png"].tables[0]

    def halved(path, *arguments, **options):
        table = original(path, *arguments, **options)
        if str(path).endswith(scores):
            table[["spearman", "low", "high"]] /= 2
        return table

    monkeypatch.setattr(pd, "read_csv", halved)
    drawn = docs.redraw("downstream.png", tmp_path / "downstream.png")
    assert compare_images(str(docs.IMAGES / "downstream.png"), str(drawn), TOLERANCE) is not None


def test_a_published_run_keeps_only_the_figures_a_page_shows():
    """What travels with the repository stays small (a GPU check takes the whole working
    tree): a published run's other figures stay behind (``publish --figure``), recorded by
    their SHA-256."""
    pages = [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    shown = {
        match
        for page in pages
        for match in re.findall(r"\bresults/(\w+/figures/[\w./-]+\.png)", page.read_text())
    }
    published = {
        path.relative_to(ROOT / "docs/results").as_posix()
        for path in (ROOT / "docs/results").glob("*/figures/**/*.png")
    }
    assert published <= shown, sorted(published - shown)


@pytest.mark.parametrize(
    "publication",
    sorted((ROOT / "docs" / "results").glob("*/publication.json")),
    ids=lambda path: path.parent.name,
)
def test_a_published_run_is_what_its_record_says(publication):
    """Each file of a run published under docs/results/ (`contextuality publish`) has the
    SHA-256 its publication.json records, with its provenance beside it, and was made by
    commits of this repository's history."""
    record = json.loads(publication.read_text())
    folder = publication.parent
    for name, digest in record["files"].items():
        assert sha256_file(folder / name) == digest, name
        sidecar = folder / (
            f"{name}.provenance.json" if name.endswith(".png") else
            str(Path(name).with_suffix(".provenance.json"))
        )  # fmt: skip
        assert sidecar.is_file(), sidecar
    for name in record.get(FIGURES_LEFT_BEHIND, {}):
        assert name not in record["files"] and not (folder / name).exists(), name
    assert record["made_by"] and not any("+" in commit for commit in record["made_by"])
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    if shallow == "false":
        for commit in record["made_by"]:
            found = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT)
            assert found.returncode == 0, f"{publication}: made by {commit}, not in the history"
