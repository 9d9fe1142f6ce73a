"""The steps of workflow/rules/figures.smk. The paper's figures, the comparison of
transforms, the degeneration figures, the geometry figures and those of an ablation, a
checkpoint sweep and a model family."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from contextuality.errors import ConfigError, InputDataError
from contextuality.files.provenance import read_json, sha256_file
from contextuality.files.tables import read_parquet, read_parquet_with_provenance, read_tsv
from contextuality.measures.summary import (
    check_measures_table,
    measures_table,
    read_layer_summaries,
)

PathLike = str | os.PathLike


def _source(table_path: PathLike) -> str:
    """How a figure names the table it was drawn from."""
    return f"{Path(table_path).name} sha256 {sha256_file(table_path)}"


def _sources(paths: Sequence[PathLike], kind: str) -> str:
    """How a figure names the files of `kind` it was drawn from: their number and one
    digest of their SHA-256s."""
    digest = hashlib.sha256("".join(sha256_file(path) for path in paths).encode()).hexdigest()
    return f"{len(paths)} {kind}, sha256 of their sha256s {digest}"


def _measures(source: PathLike | Sequence[PathLike]) -> tuple[pd.DataFrame, str]:
    """The measures to draw and how a figure names them: the measures table (a .tsv file),
    or the table of some layer summaries (.json files; `summary.measures_table`), so that the
    figures of one transform need not wait for every transform's measures."""
    if isinstance(source, str | os.PathLike):
        return check_measures_table(read_tsv(source), source), _source(source)
    table = measures_table(read_layer_summaries(source))
    return table, _sources(source, "layer summaries")


def figure(
    source: PathLike | Sequence[PathLike],
    name: str,
    outputs: Sequence[PathLike],
    transform: str,
    relative_layers: bool,
) -> None:
    """Figure `name` (a key of `contextuality.figures.specs.FIGURES`) in every format of
    `outputs`, from the measures table or layer summaries (`source`, as `_measures`)."""
    _draw(source, {name: list(outputs)}, transform, relative_layers)


def figures(
    source: PathLike | Sequence[PathLike],
    outputs: Sequence[PathLike],
    transform: str,
    relative_layers: bool,
) -> None:
    """Every figure named by an output's file name (a key of
    `contextuality.figures.specs.FIGURES`, one file per format) from the measures table or
    layer summaries (as `figure`): one job draws them all, as they share their input and
    their imports."""
    _draw(source, _by_stem(outputs), transform, relative_layers)


def _by_stem(outputs: Sequence[PathLike]) -> dict[str, list[PathLike]]:
    """Output files by their name without the extension (a figure's name): its formats."""
    by_name: dict[str, list[PathLike]] = {}
    for path in outputs:
        by_name.setdefault(Path(path).stem, []).append(path)
    return by_name


def _draw(
    source: PathLike | Sequence[PathLike],
    by_name: dict[str, list[PathLike]],
    transform: str,
    relative_layers: bool,
) -> None:
    """Each figure of `by_name` (name → its files) from the measures, read once."""
    from contextuality.figures.paper import plot_figure
    from contextuality.figures.specs import FIGURES

    table, described = _measures(source)
    for name, paths in by_name.items():
        measures = [series.measure for series in FIGURES[name].series]
        drawn = table[(table["transform"] == transform) & table["measure"].isin(measures)]
        if drawn.empty:
            raise ConfigError(
                f"figure {name}: {described} has no row of {', '.join(measures)} under "
                f"transform {transform} (left out by measures.leave_out, or not measured); "
                "nothing to draw"
            )
        plot_figure(
            table,
            FIGURES[name],
            paths,
            transform=transform,
            relative_layers=relative_layers,
            source=described,
        )


def transforms_figure(
    source: PathLike | Sequence[PathLike],
    outputs: Sequence[PathLike],
    relative_layers: bool,
) -> None:
    """Adjusted SelfSim and the cosine baseline by layer under each measured transform, from
    the measures table or layer summaries (`source`, as `_measures`)."""
    from contextuality.figures.paper import plot_transforms

    table, described = _measures(source)
    plot_transforms(table, list(outputs), relative_layers=relative_layers, source=described)


def degeneration_figures(
    words_paths: Sequence[PathLike],
    bins_paths: Sequence[PathLike],
    cone_paths: Sequence[PathLike],
    outputs: Sequence[PathLike],
    title: str,
) -> None:
    """The degeneration figures of one model and transform (`DEGENERATION_FIGURES`, each
    as .png then .pdf, found in `outputs` by the name before the extension) from its
    layers' per-word, frequency-bin and cone tables; k of the neighbour distances from
    the frequency-bin tables' provenance (their ``degeneration`` settings)."""
    from contextuality.figures.degeneration import plot_cone, plot_knn_by_bin, plot_norm_by_rank

    def by_layer(paths: Sequence[PathLike]) -> dict[int, pd.DataFrame]:
        frames = [read_parquet(path) for path in paths]
        return {int(frame["layer"].iloc[0]): frame for frame in frames if len(frame)}

    tables, provenances = zip(
        *(read_parquet_with_provenance(path) for path in bins_paths), strict=True
    )
    bins = pd.concat(tables, ignore_index=True)
    neighbours = {record["degeneration"]["neighbours"] for record in provenances}
    if len(neighbours) != 1:
        raise InputDataError(
            f"the frequency-bin tables of {title} measure k = {sorted(neighbours)} nearest "
            "neighbours, not one k; re-run their measure jobs"
        )
    files = {Path(path).name: path for path in outputs}

    def outputs_of(kind: str) -> list[PathLike]:
        return [path for name, path in files.items() if name.split(".")[-2] == kind]

    plot_norm_by_rank(by_layer(words_paths), outputs_of("norm_by_rank"), title=title)
    plot_knn_by_bin(bins, outputs_of("knn_by_bin"), neighbours.pop(), title=title)
    plot_cone(by_layer(cone_paths), outputs_of("cone"), title=title)


def _raw(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a geometry table (alignment, dimension curves) of the stored vectors,
    transform ``none``: what every figure but the corrections' draws."""
    return table[table["transform"] == "none"]


def geometry_figures(
    dimension_paths: Sequence[PathLike],
    dimension_scales_path: PathLike,
    alignment_path: PathLike,
    best_layers_path: PathLike,
    positions_path: PathLike | None,
    outputs: Sequence[PathLike],
) -> None:
    """The intrinsic dimension by layer (from the geometry steps' layer summaries) and over
    scale (from its curves' table), the CKA heatmaps and the alignment figure (from the
    alignment table), the best-matching layers (from their table, where `outputs` name
    them) and the position profiles (from their table; none without it), each as .png then
    .pdf, found in `outputs` by name."""
    from contextuality.figures.alignment import plot_alignment
    from contextuality.figures.best_layers import plot_best_layers
    from contextuality.figures.dimension import plot_dimension_scales
    from contextuality.figures.geometry import plot_cka, plot_geometry_transforms, plot_positions
    from contextuality.figures.paper import plot_figure
    from contextuality.figures.specs import DIMENSION_FIGURE
    from contextuality.geometry.baselines import without_baselines

    by_name = _by_stem(outputs)
    dimensions = measures_table(read_layer_summaries(dimension_paths))
    dimension_source = _sources(dimension_paths, "dimension files")
    plot_figure(
        dimensions, DIMENSION_FIGURE, by_name["intrinsic_dimension"], source=dimension_source
    )
    plot_dimension_scales(
        _raw(read_tsv(dimension_scales_path)),
        by_name["intrinsic_dimension_scales"],
        source=_source(dimension_scales_path),
    )
    everything = read_tsv(alignment_path)
    alignment = without_baselines(everything)
    plot_cka(_raw(alignment), by_name["cka"], source=_source(alignment_path))
    plot_alignment(_raw(everything), by_name["alignment"], source=_source(alignment_path))
    if "best_layers" in by_name:
        plot_best_layers(
            _raw(read_tsv(best_layers_path)),
            _raw(everything),
            by_name["best_layers"],
            source=f"{_source(best_layers_path)}; {_source(alignment_path)}",
        )
    if "geometry_transforms" in by_name:
        plot_geometry_transforms(
            dimensions,
            alignment,
            by_name["geometry_transforms"],
            source=f"{dimension_source}; {_source(alignment_path)}",
        )
    if positions_path is not None:
        plot_positions(
            read_tsv(positions_path), by_name["positions"], source=_source(positions_path)
        )


def ablation_figure(
    measures_path: PathLike,
    alignment_paths: Sequence[PathLike],
    base: str,
    ablated: str,
    block: int,
    outputs: Sequence[PathLike],
) -> None:
    """The ablation figure of model `ablated` against `base` (`figures.ablation`), from
    the measures table and, where the geometry ran, the alignment table."""
    from contextuality.figures.ablation import plot_ablation

    alignment = _raw(read_tsv(alignment_paths[0])) if alignment_paths else None
    sources = [measures_path, *alignment_paths]
    plot_ablation(
        read_tsv(measures_path),
        alignment,
        base,
        ablated,
        block,
        list(outputs),
        source=_sources(sources, "tables"),
    )


def sweep_figure(
    summary_paths: Sequence[PathLike], steps: dict[str, int], outputs: Sequence[PathLike], name: str
) -> None:
    """The figure of checkpoint sweep `name` (`figures.sweeps.plot_series`) from its
    checkpoints' layer summaries (transform ``none``); `steps`: model → training step."""
    from contextuality.figures.sweeps import ModelSeries, plot_series

    table, described = _measures(summary_paths)
    series = ModelSeries(f"Checkpoint sweep: {name}", "training step", steps)
    plot_series(table, series, list(outputs), source=described)


def family_figure(
    summary_paths: Sequence[PathLike],
    meta_paths: Sequence[PathLike],
    outputs: Sequence[PathLike],
    name: str,
) -> None:
    """The figure of model family `name` against parameter count (`figures.sweeps`), from its
    models' layer summaries (transform ``none``) and their extractions' meta.json."""
    from contextuality.figures.sweeps import ModelSeries, plot_series

    sizes = {}
    for path in meta_paths:
        meta = read_json(path)
        sizes[meta["model"]] = meta.get("n_parameters")
    unknown = sorted(model for model, size in sizes.items() if not size)
    if unknown:
        raise InputDataError(
            f"family {name}: no parameter count in the meta.json of {', '.join(unknown)}; "
            "re-extract them"
        )
    table, described = _measures(summary_paths)
    series = ModelSeries(f"Model family: {name}", "parameters", sizes, by_depth=True)
    plot_series(table, series, list(outputs), source=described)
