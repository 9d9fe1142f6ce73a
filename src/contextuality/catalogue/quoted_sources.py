"""What a docs page quotes from: committed tables and the code's constants, by name.

Tables in the forms the workflow and the benches write them, read so that no page types a
number (`quotes` formats what these return)."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from contextuality.errors import InputDataError

ROOT = Path(__file__).resolve().parents[3]
# What separates a file from the part of it that is the table: ``report.json#models``
# (the list of records under a key), ``report.md#2`` (the report's second table).
PART = "#"
# A cell of a report's table that is a number as the report writes it: ``1,159``, ``0.97``.
NUMBER = re.compile(r"^[−-]?\d{1,3}(?:,\d{3})*(?:\.\d+)?$|^[−-]?\d+(?:\.\d+)?(?:e[−+-]?\d+)?$")


@functools.cache
def table(name: str) -> pd.DataFrame:
    """A committed table by name (a path from the repository's root): a TSV file; a JSON
    list of records, the file's own or, as ``report.json#models``, the one under a key of
    its object (a record's nested objects give columns such as
    ``full_extraction.tokens_per_s``), or a JSON object as one row (``runs.0`` the first
    of a list); a JSON Lines file, one record a line; or, as
    ``report.md#2``, a Markdown report's second table, its numeric cells read as numbers
    (thousands separators dropped)."""
    file, _, part = name.partition(PART)
    path = ROOT / file
    if not path.is_file():
        raise InputDataError(f"{name}: no such table to quote from")
    if path.suffix == ".md":
        return _markdown_table(path, name, part)
    if path.suffix == ".jsonl":
        lines = path.read_text().splitlines()
        return pd.json_normalize([json.loads(line) for line in lines if line.strip()])
    if path.suffix != ".json":
        return pd.read_csv(path, sep="\t")
    records = json.loads(path.read_text())
    if part:
        records = records.get(part) if isinstance(records, dict) else None
    if isinstance(records, dict):
        return pd.DataFrame([_flat(records)])
    if not (isinstance(records, list) and all(isinstance(row, dict) for row in records)):
        raise InputDataError(f"{name}: not a JSON list of records nor an object to quote from")
    return pd.json_normalize(records)


def _flat(found: Any, prefix: str = "") -> dict[str, Any]:
    """A JSON object as one row: nested keys and list positions dotted (``runs.0``)."""
    items = found.items() if isinstance(found, dict) else enumerate(found)
    row: dict[str, Any] = {}
    for key, item in items:
        column = f"{prefix}{key}"
        if isinstance(item, dict | list):
            row.update(_flat(item, f"{column}."))
        else:
            row[column] = item
    return row


def _markdown_table(path: Path, name: str, part: str) -> pd.DataFrame:
    """The `part`-th (from 1) pipe table of the Markdown file at `path`."""
    tables: list[list[str]] = [[]]
    for line in path.read_text().splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    found = [lines for lines in tables if len(lines) >= 2]
    if not part.isdigit() or not 1 <= int(part) <= len(found):
        raise InputDataError(f"{name}: {path.name} has tables 1 to {len(found)}; name one")
    header, _, *body = (_cells(line) for line in found[int(part) - 1])
    # A last column written with bars of its own (``0.01 + 0·|x|``) is one cell.
    body = [[*cells[: len(header) - 1], "|".join(cells[len(header) - 1 :])] for cells in body]
    return pd.DataFrame([[_read(cell) for cell in cells] for cells in body], columns=header)


def _cells(line: str) -> list[str]:
    """The cells of a pipe table's row, their backticks and bold marks dropped."""
    return [cell.strip().strip("`*").strip() for cell in line.strip().strip("|").split("|")]


def _read(cell: str) -> Any:
    """A report's cell: a number where it is written as one, else its text."""
    if NUMBER.match(cell):
        number = float(cell.replace(",", "").replace("−", "-"))
        return int(number) if number.is_integer() and "." not in cell else number
    return cell


# A constant as a page names it: ``module:NAME`` then any keys, ``compare:TOLERANCES[cosine][0]``.
CONSTANT = re.compile(r"^(?P<module>[\w./-]+):(?P<name>\w+)(?P<keys>(?:\[[^\]]+\])*)$")


def constant(name: str) -> Any:
    """The value of a constant of the code, by ``module:NAME[key]…``: `module` a module of
    the package (``contextuality.extraction.partitions``) or a script by its path from the
    repository's root (``bench/gpu/compare.py``, imported with its folder on the path); a
    key indexes a mapping, or a sequence where it is a number."""
    found = CONSTANT.match(name)
    if not found:
        raise InputDataError(f"{name}: not a constant's name (module:NAME[key]...)")
    value = getattr(_module(found["module"]), found["name"], None)
    if value is None:
        raise InputDataError(f"{name}: {found['module']} has no {found['name']}")
    for key in re.findall(r"\[([^\]]+)\]", found["keys"]):
        try:
            value = value[int(key)] if key.isdigit() else value[key]
        except (KeyError, IndexError, TypeError) as error:
            raise InputDataError(f"{name}: no [{key}] in it") from error
    return value


@functools.cache
def _module(module: str) -> Any:
    """A module of the package by its dotted name, or a repository script by its path."""
    if not module.endswith(".py"):
        return importlib.import_module(module)
    path = ROOT / module
    if not path.is_file():
        raise InputDataError(f"{module}: no such script")
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"quoted_{path.stem}", path)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = loaded  # a dataclass of the script looks its module up
        spec.loader.exec_module(loaded)
    finally:
        sys.path.remove(str(path.parent))
    return loaded
