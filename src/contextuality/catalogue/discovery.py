"""Records found in the modules of a package, so that adding one is adding a module.

A catalogue (the measures of a layer, the alignment measures) is the records that the
modules of one package declare under one name. A module places its records with
``ORDER``, a number: modules in increasing ``ORDER``, then those that declare none in the
order of their names, so that a new module's records (and their rows or columns) come
after every existing one; inside a module, in the order it lists them. Nothing lists the
modules by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType
from typing import Any, TypeVar

Record = TypeVar("Record")


def _place(module: ModuleType) -> tuple[bool, float, str]:
    """Where a module's records go: by its ``ORDER``, those without one last, by name."""
    order = getattr(module, "ORDER", None)
    return (order is None, 0.0 if order is None else float(order), module.__name__)


def discover(package: str, attribute: str) -> tuple[Any, ...]:
    """Every record of the modules of `package` (a dotted name): each module's `attribute`
    (a tuple), modules placed by their ``ORDER`` (`_place`). A module without `attribute`
    is refused (ImportError), as a module dropped there means to add records; so are two
    records of one name (ValueError), each record's ``name``."""
    path = importlib.import_module(package).__path__
    modules = [
        importlib.import_module(f"{package}.{info.name}") for info in pkgutil.iter_modules(path)
    ]
    found: list[Any] = []
    origin: dict[str, str] = {}
    for module in sorted(modules, key=_place):
        records = getattr(module, attribute, None)
        if records is None:
            raise ImportError(f"{module.__name__} declares no {attribute}: every module here must")
        for record in records:
            if record.name in origin:
                raise ValueError(
                    f"{record.name} is declared by {origin[record.name]} and {module.__name__}"
                )
            origin[record.name] = module.__name__
            found.append(record)
    return tuple(found)


def record_named(records: Iterable[Record], name: str) -> Record:
    """The record of `records` called `name` (KeyError if none is)."""
    for record in records:
        if record.name == name:
            return record
    raise KeyError(name)
