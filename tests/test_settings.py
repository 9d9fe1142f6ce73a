"""Every setting is declared once, in the schema: the settings classes take their defaults
from it and write none of their own, the command line and the workflow's fallbacks have
them, the workflow checks a config with them filled in, and every settings class refuses
what the schema refuses, naming the setting."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from contextuality.benchmarks import ScoringSettings
from contextuality.cli.commands import build_parser
from contextuality.corpus.index import IndexSettings
from contextuality.corpus.settings import CorpusSettings, StsSource, TextSource
from contextuality.errors import ConfigError
from contextuality.geometry.alignment import AlignmentSettings
from contextuality.geometry.dimension import DimensionSettings
from contextuality.geometry.search import SearchSettings
from contextuality.measures.degeneration import DegenerationSettings
from contextuality.measures.settings import MeasureSettings
from contextuality.streaming.state import StreamingSettings
from contextuality.transforms.fitting import TransformSettings
from contextuality.workflow import config as workflow_config

SCHEMA = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml").read_text()
)


def _section(*path: str) -> dict:
    """The properties of the schema's section at `path` (a model's for ``models``)."""
    node = SCHEMA
    for key in path:
        node = node["properties"][key] if key != "<model>" else node["additionalProperties"]
    return node["properties"]


# settings class → (its schema section, fields taken from elsewhere, section keys that
# choose jobs or tables rather than the class's work)
CLASSES = {
    MeasureSettings: (("measures",), (), {"transforms", "transform_fit", "top_words"}),
    TransformSettings: (("measures", "transform_fit"), ("seed",), set()),
    IndexSettings: (("index",), (), set()),
    DegenerationSettings: (
        ("degeneration",),
        ("seed",),
        {"transforms", "special_token_sentences"},
    ),
    DimensionSettings: (("geometry", "intrinsic_dimension"), ("search",), set()),
    SearchSettings: (("geometry", "search"), (), set()),
}


@pytest.mark.parametrize("settings_class", CLASSES, ids=lambda cls: cls.__name__)
def test_settings_classes_have_the_schema_s_fields(settings_class):
    path, elsewhere, choosing = CLASSES[settings_class]
    properties = _section(*path)
    fields = {field.name: field for field in dataclasses.fields(settings_class)}
    assert set(fields) - set(elsewhere) == set(properties) - choosing


# Every settings class of the package, and the module that holds it.
EVERY_SETTINGS_CLASS = (
    *CLASSES,
    StreamingSettings,
    AlignmentSettings,
    ScoringSettings,
    CorpusSettings,
    TextSource,
    StsSource,
)


@pytest.mark.parametrize("settings_class", EVERY_SETTINGS_CLASS, ids=lambda cls: cls.__name__)
def test_settings_classes_write_no_default_of_their_own(settings_class):
    """Each field's default is read from the schema (`schema.default`), never written out:
    a default changed in the schema changes the class, the command line and the workflow."""
    source = textwrap.dedent(inspect.getsource(settings_class))
    body = ast.parse(source).body[0].body
    classes = {cls.__name__ for cls in EVERY_SETTINGS_CLASS}
    for statement in body:
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            called = {
                node.func.id
                for node in ast.walk(statement.value)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            }
            made = {  # field(default_factory=<another settings class>): its own defaults
                keyword.value.id
                for node in ast.walk(statement.value)
                if isinstance(node, ast.Call)
                for keyword in node.keywords
                if keyword.arg == "default_factory" and isinstance(keyword.value, ast.Name)
            }
            assert "default" in called or made <= classes and made, (
                settings_class.__name__,
                ast.unparse(statement),
            )


def test_a_default_changed_in_the_schema_changes_the_settings(monkeypatch):
    from contextuality.configuration import schema

    changed = schema.schema()
    changed["properties"]["measures"]["properties"]["seed"]["default"] = 7
    monkeypatch.setattr(schema, "_schema", lambda: changed)
    assert schema.default("measures", "seed") == 7
    assert schema.setting({"measures": {}}, "measures", "seed") == 7
    assert schema.setting({"measures": {"seed": 3}}, "measures", "seed") == 3
    assert schema.with_defaults({})["measures"]["seed"] == 7


def _outside(spec: dict) -> list[object]:
    """Values the schema refuses by its bounds or choices (and one of a wrong type)."""
    values = []
    if "minimum" in spec:
        values.append(
            spec["minimum"] - (1 if spec["type"] in ("integer", ["integer", "null"]) else 0.5)
        )
    if "maximum" in spec:
        values.append(spec["maximum"] + 0.5)
    values += [spec[key] for key in ("exclusiveMinimum", "exclusiveMaximum") if key in spec]
    if "enum" in spec:
        values.append(f"none of {spec['enum']}")
    if values:
        values.append("3")
    return values


BOUNDED = [
    (settings_class, name, value)
    for settings_class, (path, elsewhere, _) in CLASSES.items()
    for name, spec in _section(*path).items()
    if name in {field.name for field in dataclasses.fields(settings_class)}
    for value in _outside(spec)
]


@pytest.mark.parametrize(
    ("settings_class", "name", "value"),
    BOUNDED,
    ids=[f"{cls.__name__}.{name}={value!r}" for cls, name, value in BOUNDED],
)
def test_settings_classes_refuse_what_the_schema_refuses(settings_class, name, value):
    with pytest.raises(ConfigError, match=name):
        settings_class(**{name: value})


def test_every_bounded_setting_is_checked():
    """Each class has a bounded setting to refuse (the list above is not empty by accident)."""
    assert {settings_class for settings_class, _, _ in BOUNDED} == set(CLASSES)


def test_the_corpus_settings_are_config_corpus_s_and_refuse_what_it_refuses():
    for settings_class, path in (
        (CorpusSettings, ("corpus",)),
        (TextSource, ("corpus", "text")),
        (StsSource, ("corpus", "sts")),
    ):
        fields = {field.name for field in dataclasses.fields(settings_class)}
        assert fields == set(_section(*path)), settings_class.__name__
    config = {"source": "sts", "sts": {"years": [2012], "scored_only": True}}
    settings = CorpusSettings.from_config(config)
    assert settings.sts.years == (2012,) and settings.text == TextSource()
    assert settings.as_config()["sts"] == {**_defaults_of("corpus", "sts"), **config["sts"]}
    with pytest.raises(ConfigError, match="corpus.sts.years"):
        StsSource(years=[2011])
    with pytest.raises(ConfigError, match="corpus.source must be one of"):
        CorpusSettings(source="web")
    with pytest.raises(ConfigError, match="corpus.max_sentences"):
        CorpusSettings(max_sentences=0)


def _defaults_of(*path: str) -> dict:
    return {name: spec["default"] for name, spec in _section(*path).items()}


def test_the_scoring_settings_are_config_static_s_and_refuse_what_it_refuses():
    static = _section("static")
    fields = {field.name for field in dataclasses.fields(ScoringSettings)}
    assert fields <= set(static)
    assert ScoringSettings(benchmarks=["men"]).benchmarks == ("men",)
    with pytest.raises(ConfigError, match="static.benchmarks: unknown simlex"):
        ScoringSettings(benchmarks=["simlex"])
    with pytest.raises(ConfigError, match="static.oov must be one of"):
        ScoringSettings(oov="zero")


def test_the_seed_may_not_be_negative():
    assert _section("measures")["seed"]["minimum"] == 0
    with pytest.raises(ConfigError, match="measures.seed"):
        MeasureSettings(seed=-1)


def test_only_the_optional_measures_may_be_left_out(tiny_bert_dir):
    """The records say which measures are optional, not a list in the schema: the config
    check (a dry run) and the measure step refuse any other name in one line that names
    the optional ones."""
    from contextuality.measures.registry import (
        EVERY_OPTIONAL,
        MEASURES,
        OPTIONAL,
        check_left_out,
        left_out,
    )

    assert "enum" not in _section("measures")["leave_out"]["items"]
    required = next(record.name for record in MEASURES if not record.optional)
    models = {"m": {"source": str(tiny_bert_dir)}}
    workflow_config.check_config({"models": models, "measures": {"leave_out": list(OPTIONAL)}})
    assert MeasureSettings(leave_out=OPTIONAL[:1]).leave_out == OPTIONAL[:1]
    check_left_out(OPTIONAL)
    # The name for them all is every optional measure, each once, those named first first.
    everything = [EVERY_OPTIONAL]
    workflow_config.check_config({"models": models, "measures": {"leave_out": everything}})
    assert left_out(MeasureSettings(leave_out=everything).leave_out) == OPTIONAL
    assert left_out([*OPTIONAL[-1:], *everything]) == (*OPTIONAL[-1:], *OPTIONAL[:-1])
    refusal = f"measures.leave_out: {re.escape(required)} cannot be left out; the optional "
    refusal += f"measures are {re.escape(', '.join(OPTIONAL))} \\({EVERY_OPTIONAL}: all of them\\)$"
    with pytest.raises(ConfigError, match=refusal):
        workflow_config.check_config(
            {"models": models, "measures": {"leave_out": [*OPTIONAL, required]}}
        )
    with pytest.raises(ConfigError, match=refusal):
        check_left_out(MeasureSettings(leave_out=[required]).leave_out)


def test_the_measure_step_refuses_a_measure_it_cannot_leave_out_before_reading(tmp_path):
    from contextuality import steps
    from contextuality.corpus.index import IndexFiles

    outputs = steps.MeasureOutputs(*(tmp_path / name for name in ("w", "s", "j")))
    with pytest.raises(ConfigError, match="anisotropy cannot be left out"):
        steps.measure_layer(  # none of these files exists
            tmp_path / "layer_0.h5",
            tmp_path / "sentences.parquet",
            IndexFiles.in_directory(tmp_path),
            MeasureSettings(leave_out=["anisotropy"]),
            outputs,
        )


def test_streaming_settings_have_the_schema_s_and_the_workflow_s_default():
    model = _section("models", "<model>")
    word_sample_size = model["streaming"]["oneOf"][1]["properties"]["word_sample_size"]
    assert word_sample_size["default"] == StreamingSettings().word_sample_size
    config = {"models": {"m": {"streaming": True}}}
    assert workflow_config.word_sample_size(config, "m") == StreamingSettings().word_sample_size
    with pytest.raises(ConfigError, match="word_sample_size"):
        StreamingSettings(word_sample_size=0)


def test_the_workflow_s_fallbacks_are_the_schema_s_defaults():
    """What the workflow reads of a config not yet filled in by the schema."""
    assert (
        workflow_config.degeneration_transforms({})
        == _section("degeneration")["transforms"]["default"]
    )
    assert workflow_config.figure_transforms({}) == _section("figures")["transforms"]["default"]
    special = workflow_config.special_token_settings({"measures": {"seed": 0}})
    assert special["sample_size"] == _section("degeneration")["special_token_sentences"]["default"]


def test_the_workflow_checks_and_plans_a_config_with_the_schema_s_defaults(tiny_bert_dir):
    """A config that leaves a section out is checked with its defaults (alignment.k 10
    against a sample of 10 rows) and planned with them filled in, before any check."""
    from contextuality import workflow

    models = {"m": {"source": str(tiny_bert_dir)}}
    with pytest.raises(ConfigError, match="geometry.alignment.k: 10 is not below"):
        workflow_config.check_config({"models": models, "geometry": {"sample_size": 10}})
    config = {"models": models}
    workflow.plan_config(config, [], workflow_config.SCHEMA_PATH)
    assert config["extraction"]["partitions"] == 1
    assert config["geometry"]["alignment"] == {
        "k": 10,
        "device": "auto",
        "permutations": 20,
        "bootstrap": 30,
        "baselines": ["word_identity", "word_position"],
    }


def _defaults(*argv: str) -> dict:
    return vars(build_parser().parse_args(list(argv)))


def test_the_command_line_has_the_schema_s_defaults():
    measures, fit = _section("measures"), _section("measures", "transform_fit")
    measure = _defaults("measure-layer", "s.h5", "--sentences", "s", "--index", "i", "-o", "o")
    assert measure["baseline_sample_size"] == measures["baseline_sample_size"]["default"]
    assert measure["seed"] == measures["seed"]["default"]
    assert measure["fit_fraction"] == fit["fit_fraction"]["default"]
    assert measure["threads"] == 1
    index = _defaults("occurrence-index", "s.parquet", "-o", "i")
    for name in ("min_contexts", "tokenizer", "count_by"):
        assert index[name] == _section("index")[name]["default"], name
    geometry = _defaults("layer-geometry", "l.h5", "--index", "i", "-o", "o")
    dimension = _section("geometry", "intrinsic_dimension")
    assert geometry["sample_size"] == _section("geometry")["sample_size"]["default"]
    for name in ("range_max", "min_points", "plateau_width", "plateau_tolerance"):
        assert geometry[name] == dimension[name]["default"], name
    stream = _defaults("stream", "m", "--sentences", "s", "--index", "i", "-o", "o")
    assert stream["word_sample_size"] == StreamingSettings().word_sample_size
    assert stream["threads"] >= 1


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("index", "occurrence-index"),
        ("measure", "measure-layer"),
        ("static", "static-vectors"),
        ("score", "score-static"),
        ("summarize", "measures-table"),
        ("geometry", "layer-geometry"),
    ],
)
def test_old_verbs_remain_aliases_of_the_rule_names(old, new):
    parser = build_parser()
    actions = parser._subparsers._group_actions[0].choices
    assert actions[old] is actions[new]


@pytest.mark.parametrize(
    ("section", "old", "new"),
    [
        ("measures", "correction", "transform_fit"),
        ("geometry", "between_models", "alignment_between_models"),
    ],
)
def test_a_renamed_key_names_its_new_name(section, old, new):
    schema = Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml"
    config = {"models": {"m": {"source": "x"}}, section: {old: {}}}
    with pytest.raises(ConfigError, match=rf"{section}\.{old}: renamed {section}\.{new}"):
        workflow_config.check_config(config, schema)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--seed", "-1"], "measures.seed must be at least 0"),
        (["--baseline-sample-size", "0"], "measures.baseline_sample_size must be at least 2"),
        (["--transform", "center", "--fit-fraction", "1.5"], "fit_fraction must be in (0, 1)"),
    ],
)
def test_measure_layer_checks_its_settings_before_reading_data(tmp_path, capsys, option, message):
    from contextuality.cli import main

    missing = str(tmp_path / "missing")
    argv = ["measure-layer", f"{missing}.h5", "--sentences", missing, "--index", missing]
    assert main([*argv, *option, "-o", str(tmp_path / "out")]) == 1
    assert message in capsys.readouterr().err


def test_a_key_given_twice_in_a_config_file_is_refused(tmp_path):
    """YAML lets the last of two equal keys win: a model written twice is refused instead,
    naming the file, the line and the key."""
    path = tmp_path / "config.yaml"
    path.write_text("models:\n  m:\n    source: a\n  m:\n    source: b\n")
    with pytest.raises(ConfigError, match=r"config.yaml, line 4: 'm' is given twice .*line 2"):
        workflow_config.refuse_duplicate_keys([path])
    path.write_text("models:\n  m:\n    source: a\n  n:\n    source: a\n")
    workflow_config.refuse_duplicate_keys([path])  # the same value under two keys is fine
