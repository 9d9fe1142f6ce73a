"""Records found in the modules of a package, so that adding one is adding a module.

A catalogue (the measures of a layer, the alignment measures) is the records that the
modules of one package declare under one name, in the order of the modules' names and,
inside a module, in the order it lists them: nothing lists the modules or orders the
records by hand.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any


def discover(package: str, attribute: str) -> tuple[Any, ...]:
    """Every record of the modules of `package` (a dotted name): each module's `attribute`
    (a tuple), modules in the order of their names. A module without it is refused
    (ImportError), as a module dropped there means to add records; so are two records of
    one name (ValueError), each record's ``name``."""
    found: list[Any] = []
    origin: dict[str, str] = {}
    path = importlib.import_module(package).__path__
    for info in sorted(pkgutil.iter_modules(path), key=lambda info: info.name):
        module = importlib.import_module(f"{package}.{info.name}")
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
