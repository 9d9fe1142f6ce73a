"""The package's shape: small modules and functions, no import circle, no reaching into
another module's private names, import-linter contracts that name every module they must,
and the config schema's choices equal to the package's own lists."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "contextuality"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(path: Path, name: str) -> list[tuple[str, str | None, int]]:
    """(module imported, name taken from it or None, line) of every import in `path`,
    relative imports resolved against module `name`."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{module}" if module else base
            found += [(module, alias.name, node.lineno) for alias in node.names]
    return found


def test_modules_and_functions_stay_small():
    too_long = []
    for name, path in MODULES.items():
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}.{node.name}: {length} lines")
    assert not too_long, "\n".join(too_long)


def test_no_module_takes_another_module_s_private_names():
    reached = []
    for name, path in MODULES.items():
        for module, taken, line in _imports(path, name):
            private = bool(taken) and taken.startswith("_") and not taken.startswith("__")
            if module.startswith("contextuality") and module != name and private:
                reached.append(f"{name}:{line} imports {module}.{taken}")
        aliases = {
            alias.asname or alias.name
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
            if (getattr(node, "module", None) or alias.name).startswith("contextuality")
        }
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                reached.append(f"{name}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not reached, "\n".join(reached)


def test_no_import_circle():
    """Direct imports between the package's modules form no cycle (Tarjan's strongly
    connected components of the import graph have one module each)."""
    graph = {
        name: {
            module
            for module, taken, _ in _imports(path, name)
            for module in ([module, f"{module}.{taken}"] if taken else [module])
            if module in MODULES and module != name
        }
        for name, path in MODULES.items()
    }
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert not circles, circles


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["name"]: contract for contract in config["contracts"]}


TOP_LEVEL = sorted({name.split(".")[1] for name in MODULES if name.count(".") >= 1})


@pytest.mark.parametrize(
    ("contract", "may_import"),
    [
        ("The rows take numpy, scipy and the errors alone", {"rows", "errors"}),
        (
            "The measures take numpy, scipy, the errors and the rows alone",
            {"measures", "components", "similarity", "errors", "rows"},
        ),
    ],
)
def test_the_leaf_contracts_forbid_every_other_module(contract, may_import):
    forbidden = set(_contracts()[contract]["forbidden_modules"])
    expected = {f"contextuality.{module}" for module in TOP_LEVEL if module not in may_import}
    assert expected <= forbidden, sorted(expected - forbidden)
    assert {"pandas", "torch", "h5py"} <= forbidden


def test_the_library_contract_covers_every_library_module():
    sources = set(
        _contracts()["The library knows nothing of the steps, the workflow or the command line"][
            "source_modules"
        ]
    )
    expected = {
        f"contextuality.{module}"
        for module in TOP_LEVEL
        if module not in ("steps", "workflow", "cli", "__init__")
    }
    assert expected == sources, sorted(expected ^ sources)


def _schema() -> dict:
    return yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())


def _enum(*path: str) -> list:
    node = _schema()["properties"]
    for key in path:
        node = node[key]
    node = node.get("items", node)
    return list(node["enum"])


def test_the_schema_s_choices_are_the_package_s_own():
    from contextuality import backends
    from contextuality.backends import base
    from contextuality.benchmarks import BENCHMARKS, OOV_POLICIES, PROTOCOLS
    from contextuality.corpus import CORPUS_SOURCES, STS_YEARS
    from contextuality.index import COUNT_RULES
    from contextuality.reference import MODELS
    from contextuality.static import METHODS
    from contextuality.transforms import TRANSFORMS
    from contextuality.words import WORD_TOKENIZERS

    model = ("models", "additionalProperties", "properties")
    expected = {
        ("corpus", "properties", "source"): CORPUS_SOURCES,
        ("corpus", "properties", "sts", "properties", "years"): STS_YEARS,
        ("index", "properties", "tokenizer"): WORD_TOKENIZERS,
        ("index", "properties", "count_by"): COUNT_RULES,
        (*model, "loader"): backends.LOADERS,
        (*model, "units"): base.UNITS,
        (*model, "last_layer"): base.LAST_LAYERS,
        (*model, "pooling"): base.POOLINGS,
        (*model, "long_sentences"): base.LONG_SENTENCE_MODES,
        (*model, "storage_dtype"): base.STORAGE_DTYPES,
        (*model, "cuda_dtype"): base.CUDA_DTYPES,
        (*model, "lstm_states"): base.LSTM_STATES,
        (*model, "weights_dtype"): base.WEIGHTS_DTYPES,
        ("static", "properties", "methods"): METHODS,
        ("static", "properties", "benchmarks"): tuple(BENCHMARKS),
        ("static", "properties", "protocols"): PROTOCOLS,
        ("static", "properties", "oov"): OOV_POLICIES,
        ("reference", "properties", "models", "additionalProperties"): MODELS,
    }
    for section in ("measures", "degeneration", "static", "figures"):
        expected[(section, "properties", "transforms")] = TRANSFORMS
    for path, choices in expected.items():
        assert _enum(*path) == list(choices), path


# What a measure job does not load: each costs every job up to a second of start-up.
HEAVY_FOR_A_MEASURE_JOB = ("scipy.stats", "matplotlib", "sklearn", "torch", "transformers")


def test_a_measure_job_loads_no_plotting_model_or_statistics_library():
    """The imports of workflow/scripts/measure_layer.py leave the heavy libraries unloaded."""
    import subprocess
    import sys

    script = (ROOT / "workflow" / "scripts" / "measure_layer.py").read_text()
    imports = "\n".join(
        line for line in script.splitlines() if line.startswith(("from ", "import "))
    )
    program = f"{imports}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [name for name in loaded if name.startswith(HEAVY_FOR_A_MEASURE_JOB)]
