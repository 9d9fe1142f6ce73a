"""Layer geometry and position effects of a shipped config, as a results file.

Runs the workflow with one config (every model measured raw and centered, the position
profile of both) in its own directory (`bench/work/geometry-<config>`), once with the
centering fitted on every held-out word and once without each sentence's first word
(``measures.transform_fit.fit_without_first_words``), and writes to
``bench/results/geometry-<config>.md``, per model and layer: the intrinsic dimension, the
first words' mean norm against the others', the anisotropy baseline with and without the
first words, raw and centered both ways, and CKA with the neighbouring layer and between
models; beside it, the run's tables its norms and alignment come from, which the docs
quote (``geometry-<config>-positions.tsv``, ``geometry-<config>-alignment.tsv``,
``geometry-<config>-best_layers.tsv``). ``--alignment-only`` runs the workflow only as far
as the alignment tables (the extraction and the geometry jobs, none of the measure jobs)
and writes those tables and the alignment figure (drawn from them) alone;
``--no-alignment`` runs it as far as the measures and position tables (every geometry job
but the alignment between models) and writes the report without its CKA columns, the
intrinsic dimension and position figures drawn from those tables; ``--between-models`` runs
only the extraction and the alignment between every pair of models, then aligns each
model's layers with the word baselines (no other layer geometry: not the alignment within a
model) and writes ``geometry-<config>-between.tsv``, ``geometry-<config>-best_layers.tsv``
and the alignment and best-layers figures drawn from them, with the jobs' times
(``geometry-<config>-between.md``); ``--within-models`` runs only the extraction, then
aligns each model's layers with each other and with the word baselines
(`steps.layer_alignment`: `layer_geometry`'s alignment table, without the intrinsic
dimension) and writes ``geometry-<config>-within.tsv``, its figure and times
(``geometry-<config>-within.md``); with ``--untrained SEED`` each model has its untrained
twin beside it (``<model>-untrained``: its architecture with ``random_weights_seed``).

    python bench/geometry.py config/families.yaml
"""

from __future__ import annotations

import argparse
import copy
import shutil
import time
from pathlib import Path

import pandas as pd
import yaml

from contextuality import steps
from contextuality.figures.alignment import plot_alignment
from contextuality.figures.best_layers import plot_best_layers
from contextuality.figures.geometry import plot_positions
from contextuality.figures.paper import plot_figure
from contextuality.figures.specs import DIMENSION_FIGURE
from contextuality.geometry.alignment import GEOMETRY_SAMPLE_SIZE
from contextuality.geometry.settings import GeometrySettings
from contextuality.workflow.config import geometry_models, geometry_settings
from contextuality.workflow.geometry_paths import best_layer_files

from arguments import (
    config_file,
    nonnegative_int,
    output_directory,
    positive_int,
    read_config,
)
from workdir import (
    extract_models,
    filled_config,
    job_times,
    kept_table,
    run_workflow,
    stored_layers,
    write_report,
)

REPO = Path(__file__).resolve().parents[1]
# The targets of a run without the alignment between models.
WITHOUT_ALIGNMENT = [
    "results/tables/measures.tsv",
    "results/tables/positions.tsv",
    "results/figures/fig1_anisotropy.png",
]


def _configured(config: dict, without_first_words: bool) -> dict:
    """`config` measured raw and centered, with the position profile of both."""
    config = copy.deepcopy(config)
    config.setdefault("measures", {})["transforms"] = ["none", "center"]
    config["measures"].setdefault("transform_fit", {})["fit_without_first_words"] = (
        without_first_words
    )
    config.setdefault("degeneration", {})["transforms"] = ["none", "center"]
    return config


def _value(table: pd.DataFrame, transform: str, measure: str, column: str = "raw") -> pd.Series:
    """A measure's raw (or other `column`'s) value by (model, layer) under `transform`."""
    rows = table[(table["transform"] == transform) & (table["measure"] == measure)]
    return rows.set_index(["model", "layer"])[column]


def _norms(positions: pd.DataFrame) -> pd.DataFrame:
    """Per (model, layer) under ``none``: the first words' mean norm, and the median of
    the other buckets' mean norms (the special tokens' rows, a position of their own, left
    out)."""
    rows = positions[(positions["transform"] == "none") & (positions["kind"] == "word position")]
    first = rows[rows["first_position"] == 0].set_index(["model", "layer"])["mean_norm"]
    later = rows[rows["first_position"] > 0].groupby(["model", "layer"])["mean_norm"].median()
    return pd.DataFrame({"first word norm": first, "later words norm": later})


def _neighbour_cka(cka: pd.DataFrame) -> pd.DataFrame:
    """Per (model, layer): CKA with the model's previous measured layer, and the highest
    CKA with any layer of another model, on every occurrence and past the first words."""
    columns = {}
    for occurrences, label in (("all", ""), ("position>0", " [position>0]")):
        rows = cka[cka["occurrences"] == occurrences]
        within = rows[rows["model_a"] == rows["model_b"]]
        found = {}
        for model, pairs in within.groupby("model_a"):
            layers = sorted(pairs["layer_a"].unique())
            grid = pairs.set_index(["layer_a", "layer_b"])["cka"]
            for previous, layer in zip(layers, layers[1:], strict=False):
                found[(model, layer)] = grid[(previous, layer)]
        between = rows[rows["model_a"] != rows["model_b"]]
        best = pd.concat(
            [
                between.groupby([side, f"layer_{side[-1]}"])["cka"]
                .max()
                .rename_axis(["model", "layer"])
                for side in ("model_a", "model_b")
            ]
        )
        columns[f"CKA with previous layer{label}"] = pd.Series(found, dtype=float)
        columns[f"best CKA with other model{label}"] = best.groupby(level=[0, 1]).max()
    return pd.DataFrame(columns)


def _kept(directory: Path, out: Path, name: str, table: str) -> pd.DataFrame:
    """The run's ``results/tables/<table>.tsv``, copied to ``<out>/geometry-<name>-<table>.tsv``."""
    kept = out / f"geometry-{name}-{table}.tsv"
    shutil.copyfile(directory / f"results/tables/{table}.tsv", kept)
    return pd.read_csv(kept, sep="\t")


def _between_models(config: dict, directory: Path, out: Path, name: str, cores: int) -> None:
    """Run the alignment between every pair of models alone, and write its tables, figures
    and job times (module docstring, ``--between-models``)."""
    filled = filled_config(config)
    best_files = best_layer_files(filled)
    alignment_files = [path.replace(".best_layers.parquet", ".parquet") for path in best_files]
    # One pair at a time on every core: jobs of one thread side by side leave a core idle
    # once fewer pairs than cores are left.
    threads = ["--set-threads", f"alignment_between_models={cores}"]
    run_workflow(directory, config, cores, [*threads, "--", *alignment_files, *best_files])
    tables = directory / "results" / "tables"
    steps.alignment_table(
        [directory / path for path in alignment_files],
        [directory / path for path in best_files],
        tables / "alignment_between.tsv",
        tables / "best_layers.tsv",
    )
    started = time.perf_counter()
    baselines = _word_baselines(filled, directory)
    baseline_seconds = time.perf_counter() - started
    alignment = pd.concat(
        [pd.read_csv(tables / "alignment_between.tsv", sep="\t"), baselines], ignore_index=True
    )
    alignment.to_csv(out / f"geometry-{name}-between.tsv", sep="\t", index=False)
    best = _kept(directory, out, name, "best_layers")
    plot_alignment(alignment, [out / f"geometry-{name}-between-alignment.png"])
    plot_best_layers(best, alignment, [out / f"geometry-{name}-between-best_layers.png"])
    settings = filled["geometry"]["alignment"]
    write_report(
        out / f"geometry-{name}-between.md",
        [
            f"# The alignment between models: `{name}`",
            f"Written by `bench/geometry.py --between-models` ({time.strftime('%Y-%m-%d')}): "
            f"every alignment measure between every layer of each pair of models on the same "
            f"{filled['geometry']['sample_size']:,} sampled "
            f"occurrences, with its interval from {settings['bootstrap']} bootstrap draws over "
            f"sentences and {settings['permutations']} permutations (k = {settings['k']}), "
            "and each model's layers against the word baselines (rows of `model_b` "
            f"{' and '.join(settings['baselines'])}, on every occurrence); "
            f"tables `geometry-{name}-between.tsv` and `geometry-{name}-best_layers.tsv`, "
            f"figures `geometry-{name}-between-{{alignment,best_layers}}.png`.",
            f"## Job times\n\nWall seconds on {cores} cores (jobs of a previous run reused "
            "keep their first time).\n\n"
            + job_times(directory)
            + f"\n| word baselines (every model, this run) | {baseline_seconds:.0f} |",
        ],
    )


def _word_baselines(config: dict, directory: Path) -> pd.DataFrame:
    """Every stored model's layers aligned with the word baselines on the same sampled
    rows (`steps.baseline_alignment`), from the shards of the run in `directory`."""
    settings = GeometrySettings.from_config(geometry_settings(config))
    tables = [
        steps.baseline_alignment(*stored_layers(config, directory, model), settings)
        for model in geometry_models(config)
    ]
    return pd.concat(tables, ignore_index=True)


def _with_untrained(config: dict, seed: int) -> dict:
    """`config` with each model's untrained twin after it: ``<model>-untrained``, the same
    entry with ``random_weights_seed: seed``."""
    models = {}
    for name, model in config["models"].items():
        models[name] = model
        models[f"{name}-untrained"] = model | {"random_weights_seed": seed}
    return config | {"models": models}


def _kept_within(
    config: dict, directory: Path, model: str, settings: GeometrySettings
) -> tuple[pd.DataFrame, float]:
    """`model`'s alignment within itself (`steps.layer_alignment`) and its wall seconds,
    kept in `directory`'s ``within/`` as each model is done, so that a run stopped midway
    resumes with the next model (delete ``within/`` after changing the shards)."""
    return kept_table(
        directory / "within" / f"{model}.tsv",
        lambda: steps.layer_alignment(*stored_layers(config, directory, model), settings),
    )


def _within_models(config: dict, directory: Path, out: Path, name: str, cores: int) -> None:
    """Extract every model, align each model's layers with each other and with the word
    baselines, and write the table, its figure and the times (module docstring,
    ``--within-models``)."""
    filled = filled_config(config)
    models = geometry_models(filled)
    extract_models(directory, config, cores, models)
    settings = GeometrySettings.from_config(geometry_settings(filled))
    tables, seconds = [], {}
    for model in models:
        table, seconds[model] = _kept_within(filled, directory, model, settings)
        tables.append(table)
    alignment = pd.concat(tables, ignore_index=True)
    alignment.to_csv(out / f"geometry-{name}-within.tsv", sep="\t", index=False)
    plot_alignment(alignment, [out / f"geometry-{name}-within-alignment.png"])
    alignment_settings = filled["geometry"]["alignment"]
    untrained = [model for model in models if model.endswith("-untrained")]
    write_report(
        out / f"geometry-{name}-within.md",
        [
            f"# The alignment within each model: `{name}`",
            f"Written by `bench/geometry.py --within-models` ({time.strftime('%Y-%m-%d')}): "
            "every alignment measure between every two layers of each model, and between "
            "each layer and the word baselines (rows of `model_b` "
            f"{' and '.join(alignment_settings['baselines'])}), on the same "
            f"{filled['geometry']['sample_size']:,} sampled occurrences, with its interval "
            f"from {alignment_settings['bootstrap']} bootstrap draws over sentences and "
            f"{alignment_settings['permutations']} permutations "
            f"(k = {alignment_settings['k']})"
            + (
                f"; the untrained twins ({', '.join(f'`{m}`' for m in untrained)}) are each "
                "model's architecture with transformers' random initialisation "
                f"(`random_weights_seed: {filled['models'][untrained[0]]['random_weights_seed']}`)"
                if untrained
                else ""
            )
            + f". Table `geometry-{name}-within.tsv`, figure "
            f"`geometry-{name}-within-alignment.png`.",
            f"## Job times\n\nWall seconds on {cores} cores (jobs of a previous run reused "
            "keep their first time).\n\n"
            + job_times(directory)
            + "".join(
                f"\n| alignment within {model} (this run) | {value:.0f} |"
                for model, value in seconds.items()
            ),
        ],
    )


def _copy_figures(directory: Path, out: Path, name: str, figures: tuple[str, ...]) -> None:
    """Each of the run's ``results/figures/<figure>.png`` as ``geometry-<name>-<figure>.png``."""
    for figure in figures:
        shutil.copyfile(
            directory / f"results/figures/{figure}.png", out / f"geometry-{name}-{figure}.png"
        )


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=config_file)
    parser.add_argument("--cores", type=positive_int, default=2)
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument(
        "--reuse", action="store_true", help="the measures tables a previous run saved"
    )
    parser.add_argument(
        "--no-compare-fits",
        dest="compare_fits",
        action="store_false",
        help="fit the centering on every held-out word only (one run, not two)",
    )
    parser.add_argument(
        "--no-alignment",
        dest="alignment",
        action="store_false",
        help="run as far as the measures and position tables, without the alignment table",
    )
    parser.add_argument(
        "--between-models",
        action="store_true",
        help="run the alignment between every pair of models alone and write its tables",
    )
    parser.add_argument(
        "--within-models",
        action="store_true",
        help="extract, then align each model's layers with each other and the word baselines",
    )
    parser.add_argument(
        "--untrained",
        type=nonnegative_int,
        metavar="SEED",
        help="with --within-models: each model's untrained twin (random_weights_seed SEED)",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        metavar="MODEL",
        help="with --within-models: only these of the config's models (and twins)",
    )
    parser.add_argument(
        "--alignment-only",
        action="store_true",
        help="run as far as the alignment tables only and write those tables alone",
    )
    args = parser.parse_args(argv)
    if (args.untrained is not None or args.models) and not args.within_models:
        parser.error("--untrained and --models go with --within-models")
    unknown = sorted(set(args.models or ()) - set(read_config(args.config).get("models") or {}))
    if unknown:
        parser.error(f"--models: not in the config: {', '.join(unknown)}")
    return args


def main() -> None:
    args = parse_arguments()
    name = args.config.stem
    directory = REPO / "bench" / "work" / f"geometry-{name}"
    config = yaml.safe_load(args.config.read_text())
    if args.between_models:
        _between_models(_configured(config, False), directory, args.out, name, args.cores)
        return
    if args.within_models:
        if args.untrained is not None:
            config = _with_untrained(config, args.untrained)
        if args.models:
            config["models"] = {model: config["models"][model] for model in args.models}
        _within_models(_configured(config, False), directory, args.out, name, args.cores)
        return
    if args.alignment_only:
        targets = ["results/tables/alignment.tsv", "results/tables/best_layers.tsv"]
        run_workflow(directory, _configured(config, False), args.cores, ["--", *targets])
        alignment = _kept(directory, args.out, name, "alignment")
        _kept(directory, args.out, name, "best_layers")
        plot_alignment(alignment, [args.out / f"geometry-{name}-alignment.png"])
        return
    centered = {}
    settings = (True, False) if args.compare_fits else (False,)
    for without_first_words in settings:  # the default last: the other outputs are its
        saved = directory / f"measures.fit_without_first_words={without_first_words}.tsv"
        if not (args.reuse and saved.is_file()):
            targets = [] if args.alignment else ["--", *WITHOUT_ALIGNMENT]
            run_workflow(directory, _configured(config, without_first_words), args.cores, targets)
            shutil.copyfile(directory / "results/tables/measures.tsv", saved)
        centered[without_first_words] = pd.read_csv(saved, sep="\t")
    table = centered[False]
    columns = {
        "SelfSim adj.": _value(table, "none", "selfsim", "adjusted"),
        "IntraSim adj.": _value(table, "none", "intrasim", "adjusted"),
        "MEV adj.": _value(table, "none", "mev", "adjusted"),
        "TwoNN": _value(table, "none", "intrinsic_dimension[twonn]"),
        "GRIDE": _value(table, "none", "intrinsic_dimension[gride]"),
        "anisotropy": _value(table, "none", "anisotropy"),
        "anisotropy[position>0]": _value(table, "none", "anisotropy[position>0]"),
        "centered: anisotropy": _value(table, "center", "anisotropy"),
        "centered: [position>0]": _value(table, "center", "anisotropy[position>0]"),
    }
    if args.compare_fits:
        columns["centered without first words: anisotropy"] = _value(
            centered[True], "center", "anisotropy"
        )
        columns["centered without first words: [position>0]"] = _value(
            centered[True], "center", "anisotropy[position>0]"
        )
    positions = _kept(directory, args.out, name, "positions")
    parts = [pd.DataFrame(columns), _norms(positions)]
    figures = ("positions", "intrinsic_dimension", "fig1_anisotropy")
    tables = [f"`geometry-{name}-positions.tsv`"]
    if args.alignment:
        cka = _kept(directory, args.out, name, "alignment")
        _kept(directory, args.out, name, "best_layers")
        parts.append(_neighbour_cka(cka))
        figures += ("cka", "alignment")
        tables += [f"`geometry-{name}-alignment.tsv`", f"`geometry-{name}-best_layers.tsv`"]
        _copy_figures(directory, args.out, name, figures)
    else:
        _copy_figures(directory, args.out, name, ("fig1_anisotropy",))
        out = args.out / f"geometry-{name}"
        plot_figure(table, DIMENSION_FIGURE, [f"{out}-intrinsic_dimension.png"])
        plot_positions(positions, [f"{out}-positions.png"])
    profile = pd.concat(parts, axis=1).rename_axis(["model", "layer"]).reset_index()
    samples = config.get("geometry", {}).get("sample_size", GEOMETRY_SAMPLE_SIZE)
    sections = [
        f"# Layer geometry and position effects: `{args.config}`",
        f"Written by `bench/geometry.py` ({time.strftime('%Y-%m-%d')}). Intrinsic dimension: "
        "the value on the plateau of each estimator's curve over scale, none where the curve "
        "has no plateau (config `geometry.intrinsic_dimension`). "
        "Anisotropy: the exact mean cosine of occurrences in different sentences, of every "
        "occurrence and of those past each sentence's first word (`[position>0]`); centered: "
        "the mean of the held-out sentences' words removed (all of them, or without each "
        "sentence's first word, `measures.transform_fit.fit_without_first_words`). Norms: the "
        "first words' mean L2 norm, and the median of the other position buckets' means. "
        f"Geometry on {samples:,} sampled occurrences"
        + (", CKA linear" if args.alignment else ", the alignment between models not run")
        + f". Figures beside this file: `geometry-{name}-{{{','.join(figures)}}}.png`; the "
        f"run's tables: {', '.join(tables)}.",
    ]
    for model, rows in profile.groupby("model", sort=False):
        columns = rows.drop(columns="model")
        # The layer an integer: the rows reach tabulate as one float array.
        formats = [".0f"] + [".3f"] * (columns.shape[1] - 1)
        body = columns.to_markdown(index=False, floatfmt=formats)
        sections.append(f"## {model}\n\n{body}")
    sections.append(
        f"## Job times\n\nWall seconds on {args.cores} cores (jobs of a previous run "
        "reused keep their first time).\n\n" + job_times(directory)
    )
    write_report(args.out / f"geometry-{name}.md", sections)


if __name__ == "__main__":
    main()
