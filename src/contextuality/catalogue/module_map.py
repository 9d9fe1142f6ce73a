"""The package's map: every package and module with its docstring's first sentence.

The docs' map of ``src/contextuality/`` (docs/architecture.md) is drawn from the source
files when mkdocs builds it, read without importing them, so that a module added, moved
or renamed is on the map with the sentence it opens with.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
# A sentence ends at a full stop followed by a space and a capital, a quote or a code span
# (so "Sun et al. 2024" and "Definition 3's MEV" do not end one).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"(])")
CODE_SPAN = re.compile(r"(``.*?``|`[^`]*`)")


@dataclass(frozen=True)
class MapEntry:
    """One line of the map: a package (``corpus/``) or a module (``corpus/words.py``),
    by its path inside the package, and its docstring's first sentence."""

    path: str
    summary: str


def first_sentence(docstring: str) -> str:
    """The first sentence of `docstring`'s first paragraph, on one line."""
    paragraph = " ".join(docstring.split("\n\n", 1)[0].split())
    return SENTENCE_END.split(paragraph, maxsplit=1)[0]


def _summary(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text()))
    if not docstring:
        raise ValueError(f"{path.relative_to(PACKAGE.parent)} has no docstring for the map")
    return first_sentence(docstring)


def module_map(package: Path = PACKAGE) -> tuple[MapEntry, ...]:
    """Every package and module under `package`, depth first, each package's line (its
    ``__init__``) before what it holds, names in alphabetical order. A module without a
    docstring is refused (ValueError naming it)."""
    entries = []
    for path in sorted(package.iterdir()):
        relative = path.relative_to(PACKAGE).as_posix()
        if path.is_dir() and (path / "__init__.py").is_file():
            entries.append(MapEntry(f"{relative}/", _summary(path / "__init__.py")))
            entries += module_map(path)
        elif path.suffix == ".py" and path.name != "__init__.py":
            entries.append(MapEntry(relative, _summary(path)))
    return tuple(entries)


def _table_cell(text: str) -> str:
    """`text` as a markdown table's cell: outside its code spans, ``<`` (a tag's start to
    markdown: ``<bos>``) and ``|`` (a cell's end) escaped."""
    pieces = CODE_SPAN.split(text)
    for index in range(0, len(pieces), 2):
        pieces[index] = pieces[index].replace("<", "&lt;").replace("|", "\\|")
    return "".join(pieces)


def docs_table() -> str:
    """The map as a markdown table (docs/architecture.md, through docs/macros.py)."""
    rows = [(entry.path, _table_cell(entry.summary)) for entry in module_map()]
    lines = ["| module | what it is |", "|---|---|"]
    lines += [f"| `{path}` | {summary} |" for path, summary in rows]
    return "\n".join(lines)
