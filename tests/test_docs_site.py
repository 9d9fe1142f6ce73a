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


# Each page's table drawn from the package, and how the table names each thing it lists.
DRAWN_TABLES = {
    "measures": (registry.docs_table, lambda: [f"`{row}`" for row in registry.row_names()]),
    "instruments": (
        alignment_catalogue.docs_table,
        lambda: [f"`{record.name}`" for record in alignment_catalogue.ALIGNMENT_MEASURES],
    ),
    "architecture (module map)": (
        module_map.docs_table,
        lambda: [f"`{entry.path}`" for entry in module_map.module_map()],
    ),
    "architecture (glossary)": (
        glossary.docs_table,
        lambda: [f"*{name.name}*" for name in glossary.names()],
    ),
    "outputs (censuses)": (
        registry.census_outputs,
        lambda: [f"results/tables/{name}.tsv" for name in registry.CENSUSES],
    ),
    "outputs (alignment columns)": (
        alignment_catalogue.docs_columns,
        lambda: [record.name for record in alignment_catalogue.ALIGNMENT_MEASURES],
    ),
    "degeneration": (
        fitting.docs_table,
        lambda: [f"`{record.name}`" for record in fitting.CORRECTIONS],
    ),
}


@pytest.mark.parametrize("page", DRAWN_TABLES)
def test_each_page_holds_its_table_of_every_record(site, page):
    docs_table, entries = DRAWN_TABLES[page]
    table = docs_table()
    assert all(entry in table for entry in entries())
    assert _holds(site, page.split()[0], table)
