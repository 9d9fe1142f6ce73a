"""The documentation site as mkdocs builds it: the tables drawn from the package's records
(docs/macros.py) hold every record, so that no page lists an instrument by hand."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contextuality.catalogue import glossary, module_map
from contextuality.geometry import alignment_catalogue
from contextuality.measures import registry
from contextuality.transforms import fitting

# The site is built with the docs extra (`pip install -e '.[docs]'`, in `dev`).
markdown = pytest.importorskip("markdown")
pytest.importorskip("mkdocs_macros")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built strictly from docs/, as CI builds it."""
    target = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(target)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    return target


def _text(markup: str) -> str:
    """Markup's text: tags and whitespace dropped, entities decoded."""
    return re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", "", markup)))


def _holds(site: Path, page: str, table: str) -> bool:
    """Whether the built `page` holds the markdown `table`, rendered as mkdocs renders it."""
    built = _text((site / page / "index.html").read_text())
    return _text(markdown.markdown(table, extensions=["tables"])) in built and "{{" not in built


def test_the_measures_page_lists_every_record_of_the_registry(site):
    table = registry.docs_table()
    assert all(f"`{row}`" in table for row in registry.row_names())
    assert _holds(site, "measures", table)


def test_the_instruments_page_lists_every_alignment_measure(site):
    table = alignment_catalogue.docs_table()
    assert all(f"`{record.name}`" in table for record in alignment_catalogue.ALIGNMENT_MEASURES)
    assert _holds(site, "instruments", table)


def test_the_architecture_page_maps_every_module(site):
    table = module_map.docs_table()
    assert all(f"`{entry.path}`" in table for entry in module_map.module_map())
    assert _holds(site, "architecture", table)


def test_the_architecture_page_holds_the_glossary(site):
    table = glossary.docs_table()
    assert all(f"*{name.name}*" in table for name in glossary.names())
    assert _holds(site, "architecture", table)


def test_the_degeneration_page_lists_every_correction(site):
    table = fitting.docs_table()
    assert all(f"`{record.name}`" in table for record in fitting.CORRECTIONS)
    assert _holds(site, "degeneration", table)
