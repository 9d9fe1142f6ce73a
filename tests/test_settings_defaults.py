"""Every setting's default is written once, in the schema: the package reads it there
(`configuration.schema.default`), never repeats it. The test walks the schema's settings
(every section's, the models' among them) and reads every module of the package for a
default written again: ``.get("<setting>", <its default>)``, a function's keyword default
or a settings record's field equal to the schema's default of a setting of that name.
None is left out (a parameter's "not given"), and so are sections' mappings."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextuality.configuration.schema import ANY_MODEL, schema

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "contextuality"

# Parameters that share a setting's name but are not that setting.
NOT_SETTINGS = {
    ("backends/elmo/synthetic.py", "write_random_files", "measures.seed"),  # random weights'
    ("backends/elmo/synthetic.py", "write_random_files", "training.runs.<model>.seed"),
}


def _settings(node: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Each setting of the schema with a default: its dotted path and the default."""
    if path and "default" in node and not isinstance(node["default"], dict):
        yield ".".join(path), node["default"]
    for key, child in (node.get("properties") or {}).items():
        yield from _settings(child, (*path, key))
    if isinstance(node.get("additionalProperties"), dict):
        yield from _settings(node["additionalProperties"], (*path, ANY_MODEL))
    for form in node.get("oneOf") or ():
        yield from _settings(form, path)


def _defaults_by_name() -> dict[str, list[tuple[str, Any]]]:
    by_name: dict[str, list[tuple[str, Any]]] = {}
    for path, value in _settings(schema()):
        by_name.setdefault(path.rsplit(".", 1)[-1], []).append((path, value))
    return by_name


def _equal(written: Any, default: Any) -> bool:
    """The same value, a bool only equal to a bool (False is not 0), a tuple to a list."""
    if written is None or default is None:
        return False
    if isinstance(written, bool) or isinstance(default, bool):
        return type(written) is type(default) and written == default
    if isinstance(written, int | float) and isinstance(default, int | float):
        return written == default
    if isinstance(written, list | tuple) and isinstance(default, list | tuple):
        return list(written) == list(default)
    return type(written) is type(default) and written == default


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return Ellipsis  # not a literal: read from somewhere, not written here


def _written_defaults(tree: ast.AST) -> Iterator[tuple[str, str, ast.AST]]:
    """(where, name, written default) of every default in a module: ``.get`` calls, the
    keyword defaults of its functions, the fields of its settings records."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and len(node.args) == 2:
                key = _literal(node.args[0])
                if isinstance(key, str):
                    yield ".get", key, node.args[1]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            with_default = positional[len(positional) - len(arguments.defaults) :]
            pairs = [*zip(with_default, arguments.defaults, strict=True)]
            pairs += [
                (argument, value)
                for argument, value in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
                if value is not None
            ]
            for argument, value in pairs:
                yield node.name, argument.arg, value
        elif isinstance(node, ast.ClassDef) and node.name.endswith("Settings"):
            for item in node.body:
                named = isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                if named and item.value is not None:
                    yield node.name, item.target.id, item.value


def _repeats() -> set[tuple[str, str, str]]:
    defaults = _defaults_by_name()
    found = set()
    for module in sorted(PACKAGE.rglob("*.py")):
        where_module = module.relative_to(PACKAGE).as_posix()
        for where, name, value in _written_defaults(ast.parse(module.read_text())):
            written = _literal(value)
            for path, default in defaults.get(name, ()):
                if _equal(written, default):
                    found.add((where_module, where, path))
    return found


def test_no_setting_s_default_is_written_outside_the_schema():
    assert sorted(_repeats() - NOT_SETTINGS) == []


def test_no_model_setting_is_excused_as_another_parameter():
    model = f"models.{ANY_MODEL}."
    assert not [repeat for repeat in NOT_SETTINGS if model in repeat[2]]


def test_the_walk_finds_every_kind_of_repeat(tmp_path):
    """The reader finds a ``.get`` default, a keyword default and a settings record's
    field, and leaves a default read from the schema alone."""
    source = """
def f(section, pooling="mean", *, seed=0, units=default("units")):
    return section.get("storage_dtype", "auto")

class ExampleSettings:
    add_bos: bool = False
"""
    defaults = _defaults_by_name()
    found = {
        (where, path)
        for where, name, value in _written_defaults(ast.parse(source))
        for path, default in defaults.get(name, ())
        if _equal(_literal(value), default)
    }
    assert {
        ("f", f"models.{ANY_MODEL}.pooling"),
        ("f", "measures.seed"),
        (".get", f"models.{ANY_MODEL}.storage_dtype"),
        ("ExampleSettings", f"models.{ANY_MODEL}.add_bos"),
    } <= found
    assert not [path for _, path in found if path.endswith(".units")]
