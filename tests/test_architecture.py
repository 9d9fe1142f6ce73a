"""The package's shape: small modules and functions, no import circle, no reaching into
another module's private names, import-linter contracts that name every module they must,
and the config schema's choices equal to the package's own lists."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from contextuality.errors import InputDataError, ModelLoadError

from conftest import shipped, shipped_config

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "contextuality"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
# A module's docstring's first sentence, its line of the module map, at most this long.
MAX_MAP_LINE = 200


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


def _submodules(package: str) -> set[str]:
    """The modules and packages directly inside `package`, by their last name."""
    prefix = f"{package}."
    return {name.removeprefix(prefix).split(".")[0] for name in MODULES if name.startswith(prefix)}


def _layer_names(contract: dict) -> set[str]:
    """Every module a layers contract names, its independent (|) and non-independent (:)
    siblings split."""
    return {
        name.strip()
        for layer in contract["layers"]
        for group in layer.split("|")
        for name in group.split(":")
    }


@pytest.mark.parametrize(
    ("contract", "container"),
    [
        ("The stages, in the order of the workflow", "contextuality"),
        ("The measures, from a layer's analysis down to the settings", "contextuality.measures"),
    ],
)
def test_the_layers_contracts_place_every_module(contract, container):
    """Every package and loose module of the container is in a layer (import-linter's
    `exhaustive` checks it too), so a new one must be placed among the stages."""
    found = _contracts()[contract]
    assert found["type"] == "layers" and found["containers"] == [container]
    assert found["exhaustive"] is True
    expected = _submodules(container)
    assert _layer_names(found) == expected, sorted(_layer_names(found) ^ expected)


def test_the_stages_put_the_library_below_the_steps_and_the_steps_below_the_commands():
    layers = _contracts()["The stages, in the order of the workflow"]["layers"]
    assert [layer.replace(" ", "") for layer in layers[:2]] == ["cli|workflow", "steps"]


def test_no_step_imports_another():
    modules = set(_contracts()["The steps do not import each other"]["modules"])
    expected = {f"contextuality.steps.{step}" for step in _submodules("contextuality.steps")}
    assert modules == expected, sorted(modules ^ expected)


def test_the_equations_contract_forbids_every_other_stage():
    """The equations, the shares of variance, the row passes and the CKA's cross-products
    take numpy, scipy, the errors and the row passes alone: every other package and loose
    module is forbidden them (the measures' own order is the measures' layers contract)."""
    forbidden = set(
        _contracts()["The equations take numpy, scipy and the errors alone"]["forbidden_modules"]
    )
    expected = {
        f"contextuality.{module}"
        for module in TOP_LEVEL
        if module not in ("measures", "geometry", "errors", "rows")
    }
    assert expected <= forbidden, sorted(expected - forbidden)
    assert {"pandas", "torch", "h5py", "matplotlib", "sklearn"} <= forbidden


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
    from contextuality.benchmarks import BENCHMARKS, OOV_POLICIES, PROTOCOLS
    from contextuality.corpus.words import WORD_TOKENIZERS
    from contextuality.measures.static import METHODS
    from contextuality.reference import MODELS

    model = ("models", "additionalProperties", "properties")
    expected = {
        ("index", "properties", "tokenizer"): WORD_TOKENIZERS,
        (*model, "loader"): backends.LOADERS,
        ("static", "properties", "methods"): METHODS,
        ("static", "properties", "benchmarks"): tuple(BENCHMARKS),
        ("static", "properties", "protocols"): PROTOCOLS,
        ("static", "properties", "oov"): OOV_POLICIES,
        ("reference", "properties", "models", "additionalProperties"): MODELS,
    }
    for path, choices in expected.items():
        assert _enum(*path) == list(choices), path


# What a measure job does not load: each costs every job up to a second of start-up.
HEAVY_FOR_A_MEASURE_JOB = ("scipy.stats", "matplotlib", "sklearn", "torch", "transformers")


def test_a_measure_job_loads_no_plotting_model_or_statistics_library_and_no_other_step():
    """What workflow/scripts/measure_layer.py imports, and its step, leave the heavy
    libraries unloaded, and every other step's module: `contextuality.steps` imports a
    step's module when a name of it is asked for (each job paid ~2 s for all eleven)."""
    import subprocess
    import sys

    script = (ROOT / "workflow" / "scripts" / "measure_layer.py").read_text()
    imports = [line.strip() for line in script.splitlines()]
    imports = [line for line in imports if line.startswith(("from ", "import "))]
    program = "\n".join(
        [
            *imports,
            "steps.measure_layer, steps.MeasureOutputs",
            "import sys",
            "print(' '.join(sorted(sys.modules)))",
        ]
    )
    loaded = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [name for name in loaded if name.startswith(HEAVY_FOR_A_MEASURE_JOB)]
    step_modules = [name for name in loaded if name.startswith("contextuality.steps.")]
    assert step_modules == ["contextuality.steps.measures"]


def test_a_step_keeps_its_name_beside_its_module_of_the_same_name():
    """`figures` and `extract` are each a step and the module it is in: importing the
    module (as a test or a benchmark does) leaves ``steps.figures`` the step."""
    import subprocess
    import sys

    program = (
        "import contextuality.steps.figures, contextuality.steps.extract\n"
        "from contextuality import steps\n"
        "print(steps.figures.__module__, steps.extract.__module__, 'nothing' in dir(steps))\n"
        "steps.nothing"
    )
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert ran.stdout.split() == [
        "contextuality.steps.figures",
        "contextuality.steps.extract",
        "False",
    ]
    assert "has no attribute 'nothing'" in ran.stderr


def test_the_steps_name_each_step_module_s_public_functions_and_classes():
    """`steps.STEP_NAMES`, which finds a step's module when a name is asked for, lists
    exactly the public functions and classes each step module defines, and a module for
    each step module: a step added to a module and not listed would be an AttributeError
    in the first job that runs it."""
    import importlib
    import inspect

    from contextuality.steps import STEP_NAMES

    assert set(STEP_NAMES) == set(_submodules("contextuality.steps"))
    for name, listed in STEP_NAMES.items():
        module = importlib.import_module(f"contextuality.steps.{name}")
        defined = {
            attribute
            for attribute, value in vars(module).items()
            if not attribute.startswith("_")
            and (inspect.isfunction(value) or inspect.isclass(value))
            and value.__module__ == module.__name__
        }
        assert set(listed) == defined, name


def test_every_module_opens_with_its_line_of_the_module_map():
    """docs/architecture.md's map of src/contextuality/ is drawn from the package
    (`catalogue.module_map`): every package and module is on it, each with its docstring's
    first sentence, short enough to read as one line of a map."""
    from contextuality.catalogue.module_map import module_map

    entries = module_map()
    mapped = {
        "contextuality." + entry.path.rstrip("/").removesuffix(".py").replace("/", ".")
        for entry in entries
    }
    assert mapped == set(MODULES) - {"contextuality"}, sorted(mapped ^ set(MODULES))
    too_long = [
        f"{entry.path}: {len(entry.summary)} characters: {entry.summary}"
        for entry in entries
        if len(entry.summary) > MAX_MAP_LINE
    ]
    assert not too_long, "\n".join(too_long)


def test_each_rule_s_steps_live_in_the_steps_module_named_as_its_rule_file():
    """A rule of workflow/rules/X.smk runs a script whose steps (``steps.f(...)``) are
    defined in steps/X.py: the rules and the code they run are found by the same name."""
    misplaced = []
    for rules in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        scripts = re.findall(r'"\.\./scripts/(\w+)\.py"', rules.read_text())
        module = PACKAGE / "steps" / f"{rules.stem}.py"
        if not scripts:
            continue
        defined = {
            node.name
            for node in ast.parse(module.read_text()).body
            if isinstance(node, ast.FunctionDef)
        }
        for script in scripts:
            text = (ROOT / "workflow" / "scripts" / f"{script}.py").read_text()
            called = set(re.findall(r"\bsteps\.([a-z_]\w*)\(", text))
            assert called, script
            misplaced += [
                f"{rules.name}: {script}.py calls steps.{name}" for name in called - defined
            ]
    assert not misplaced, misplaced


def _schema_key(path: str) -> bool:
    """Whether dotted config `path` (``<m>`` for any model) is a key of the schema."""
    node = _schema()
    for part in path.split("."):
        if part.startswith("<"):
            node = node.get("additionalProperties") or next(
                iter(node.get("patternProperties", {}).values()), None
            )
        else:
            node = node.get("properties", {}).get(part)
        if node is None:
            return False
    return True


def _workflow_outputs() -> set[str]:
    """Every file the workflow writes for the configs of config/, and for the default
    config with a sweep, a family and a partitioned extraction."""
    from contextuality.configuration.schema import with_defaults
    from contextuality.workflow import targets
    from contextuality.workflow.sweeps import expand_sweeps

    configs = [yaml.safe_load(shipped(path)) for path in sorted((ROOT / "config").glob("*.yaml"))]
    configs = [config for config in configs if "models" in config]  # corrections.yaml: an overlay
    extended = shipped_config()
    sweep = {"steps": [0, 10], "source": "ckpt/{step}"}
    extended["models"]["stepped"] = {"layers": [0, 1], "sweep": sweep}
    extended["figures"] = {"families": {"sizes": list(extended["models"])}}
    extended["extraction"] = {"partitions": 2}
    outputs = set()
    for config in [*configs, extended]:
        config = with_defaults(config)
        expand_sweeps(config)
        try:
            outputs |= {*targets.final_outputs(config), *targets.intermediate_outputs(config)}
        except (InputDataError, ModelLoadError):  # a config whose models are not here to read
            continue
    return outputs


def _written(pattern: str, outputs: set[str]) -> bool:
    """Whether a glossary's output `pattern` (``<x>``: any value; a trailing ``/``: a
    directory) is a path the workflow writes."""
    parts = re.split(r"<[^>]+>", pattern)
    expression = "[^/]+".join(re.escape(part) for part in parts)
    expression += ".+" if pattern.endswith("/") else ""
    return any(re.fullmatch(expression, output) for output in outputs)


def _is_rule(rule: str, rules: list[str]) -> bool:
    """Whether `rule` is one of the workflow's `rules`; ``extract_<m>``: one by its prefix."""
    if "<" in rule:
        return any(found.startswith(rule.split("<")[0]) for found in rules)
    return rule in rules


def test_the_glossary_s_names_are_the_code_s(tmp_path):
    """Each name of the glossary (data/names.yaml, docs/architecture.md's table of names):
    its config keys are the schema's, its rules the workflow's, its library names
    importable from the package, its outputs paths the workflow writes."""
    import importlib
    import subprocess
    import sys

    from contextuality.catalogue.glossary import names

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(shipped(ROOT / "config" / "config.yaml"))
    snakefile = str(ROOT / "workflow" / "Snakefile")
    listed = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", snakefile, "-d", str(tmp_path), "--list-rules"],
        capture_output=True,
        text=True,
        check=True,
    )
    rules = listed.stdout.split()  # the shipped default's: extract_<m> for each of its models
    outputs = _workflow_outputs()
    missing = []
    for name in names():
        missing += [key for key in name.config if not _schema_key(key)]
        missing += [rule for rule in name.rules if not _is_rule(rule, rules)]
        for dotted in name.library:
            module, attribute = f"contextuality.{dotted}", ""
            while module not in MODULES:
                module, _, last = module.rpartition(".")
                attribute = f"{last}.{attribute}".rstrip(".")
            found = importlib.import_module(module)
            for part in filter(None, attribute.split(".")):
                found = getattr(found, part, None)
            missing += [dotted] if found is None else []
        missing += [path for path in name.outputs if not _written(path, outputs)]
    assert not missing, missing
