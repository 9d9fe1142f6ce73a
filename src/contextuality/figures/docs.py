"""The figures the docs show, each drawn again from its committed tables by the package's
own figure code, so that a test compares every one with its file and none goes stale.

    python -m contextuality.figures.docs [NAME ...]   # draw them again
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from contextuality.catalogue.quoted_sources import ROOT
from contextuality.files.provenance import sha256_file

IMAGES = ROOT / "docs" / "images"


@dataclass(frozen=True)
class DocsFigure:
    """A figure under docs/images: the committed tables it is drawn from (paths from the
    repository's root) and how (`draw`: the tables read, in that order, what they are for
    the figure's provenance, and the file to write)."""

    tables: tuple[str, ...]
    draw: Callable[[list[pd.DataFrame], str, Path], None]


def _downstream(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """STS by layer (`figures.downstream`) with the geometry of the measures tables."""
    from contextuality.figures.downstream import plot_downstream
    from contextuality.measures.downstream import measures_by_layer

    scores, *measures = tables
    geometry = pd.concat(measures, ignore_index=True)
    by_layer = {model: measures_by_layer(geometry, model) for model in scores["model"].unique()}
    plot_downstream(scores, by_layer, [output], source)


def _ablation_effects(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """Perplexity and attention under the ablation (`figures.ablation_effects`)."""
    from contextuality.figures.ablation_effects import plot_ablation_effects

    perplexity, attention = tables
    plot_ablation_effects(perplexity, attention, [output], source)


def _embedding_matrices(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """The input embedding matrices' spectra and norms (`figures.embedding`)."""
    from contextuality.figures.embedding import plot_embedding_matrices

    spectra, norms = tables
    plot_embedding_matrices(spectra, norms, [output], source)


def _figure_2(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """The paper's Figure 2, adjusted SelfSim by layer (`figures.paper.plot_figure`)."""
    from contextuality.figures.paper import plot_figure
    from contextuality.figures.specs import FIGURES as PAPER_FIGURES

    (measures,) = tables
    plot_figure(measures, PAPER_FIGURES["fig2_selfsim"], [output], source=source)


def _families_figure_1(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """The paper's Figure 1, anisotropy by relative layer, for the three families alone
    (`figures.paper.plot_figure`; the instruments run's ablated copies left out)."""
    from contextuality.figures.paper import plot_figure
    from contextuality.figures.specs import FIGURES as PAPER_FIGURES

    (measures,) = tables
    plot_figure(_families(measures), PAPER_FIGURES["fig1_anisotropy"], [output], source=source)


def untransformed(table: pd.DataFrame) -> pd.DataFrame:
    """An alignment table's rows without a correction (all of a table without the column)."""
    return table[table["transform"] == "none"] if "transform" in table else table


# The three offline families (docs/families.md): their figures leave the instruments run's
# ablated copies out.
THREE_FAMILIES = ("minilm", "smollm2", "gemma3")


def _families(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of `table` between the three families (and their word baselines) only."""
    from contextuality.geometry.baselines import BASELINES

    kept = [*THREE_FAMILIES, *BASELINES]
    columns = [
        column for column in ("model", "other_model", "model_a", "model_b") if column in table
    ]
    return table[table[columns].isin(kept).all(axis=1)]


def _families_alignment(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """Every alignment measure between the families' layers (`figures.alignment`)."""
    from contextuality.figures.alignment import plot_alignment

    plot_alignment(_families(untransformed(tables[0])), [output], source)


def _families_cka(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """Linear CKA within and between the families (`figures.geometry.plot_cka`)."""
    from contextuality.figures.geometry import plot_cka
    from contextuality.geometry.baselines import without_baselines

    plot_cka(without_baselines(_families(untransformed(tables[0]))), [output], source)


def _families_best_layers(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """Each layer's best match in the other families, with each layer's alignment with
    the word baselines (`figures.best_layers`)."""
    from contextuality.figures.best_layers import plot_best_layers

    best, between = (_families(untransformed(table)) for table in tables)
    plot_best_layers(best, between, [output], source)


def _families_positions(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """Norm and anisotropy by sentence position of the three trained families
    (`figures.geometry.plot_positions`; the run holds SmolLM2's untrained twin too)."""
    from contextuality.figures.geometry import plot_positions

    positions = tables[0]
    plot_positions(positions[positions["model"] != "smollm2-untrained"], [output], source)


def _ablation_zeroed(tables: list[pd.DataFrame], source: str, output: Path) -> None:
    """SmolLM2 with its massive activations zeroed at block 12 against itself
    (`figures.ablation.plot_ablation`)."""
    from contextuality.figures.ablation import plot_ablation

    measures, alignment = tables
    plot_ablation(
        measures, untransformed(alignment), "smollm2", "smollm2-zeroed", 12, [output], source
    )


def _early_steps(kind: str, name: str) -> Callable[[list[pd.DataFrame], str, Path], None]:
    """Tiny `kind` (titled `name`) at every early step (`figures.early_steps`)."""

    def draw(tables: list[pd.DataFrame], source: str, output: Path) -> None:
        from contextuality.figures.early_steps import plot_early_steps

        table, events = tables
        plot_early_steps(table, events, kind, name, "Lee", [output], source)

    return draw


# The published run of config/early_steps.yaml (docs/results/early_steps/).
EARLY_STEPS = (
    "docs/results/early_steps/tables/training_probes.tsv",
    "docs/results/early_steps/tables/training_probe_events.tsv",
)
# The published run of config/instruments.yaml (docs/results/instruments/).
INSTRUMENTS = "docs/results/instruments/tables"
FIGURES = {
    "ablation-effects.png": DocsFigure(
        (
            f"{INSTRUMENTS}/ablation_effects_perplexity.tsv",
            f"{INSTRUMENTS}/ablation_effects_attention.tsv",
        ),
        _ablation_effects,
    ),
    "default-fig2-selfsim.png": DocsFigure(
        ("docs/results/default/tables/measures.tsv",), _figure_2
    ),
    "early-steps-gpt2.png": DocsFigure(EARLY_STEPS, _early_steps("gpt2", "tiny GPT-2")),
    "early-steps-bert.png": DocsFigure(EARLY_STEPS, _early_steps("bert", "tiny BERT")),
    "embedding-matrices.png": DocsFigure(
        (
            f"{INSTRUMENTS}/embedding_matrix_spectra.tsv",
            f"{INSTRUMENTS}/embedding_matrix_norms.tsv",
        ),
        _embedding_matrices,
    ),
    "families-fig1-anisotropy.png": DocsFigure(
        (f"{INSTRUMENTS}/measures.tsv",), _families_figure_1
    ),
    "families-alignment.png": DocsFigure((f"{INSTRUMENTS}/alignment.tsv",), _families_alignment),
    "families-cka.png": DocsFigure((f"{INSTRUMENTS}/alignment.tsv",), _families_cka),
    "families-best_layers.png": DocsFigure(
        (f"{INSTRUMENTS}/best_layers.tsv", f"{INSTRUMENTS}/alignment.tsv"),
        _families_best_layers,
    ),
    "families-positions.png": DocsFigure(
        ("docs/results/families/tables/positions.tsv",), _families_positions
    ),
    "instruments-ablation-smollm2-zeroed.png": DocsFigure(
        (f"{INSTRUMENTS}/measures.tsv", f"{INSTRUMENTS}/alignment.tsv"),
        _ablation_zeroed,
    ),
    "downstream.png": DocsFigure(
        (f"{INSTRUMENTS}/downstream.tsv", f"{INSTRUMENTS}/measures.tsv"),
        _downstream,
    ),
}


def redraw(name: str, output: Path) -> Path:
    """Figure `name` of `FIGURES` drawn from its tables into `output`."""
    figure = FIGURES[name]
    tables = [pd.read_csv(ROOT / table, sep="\t", comment="#") for table in figure.tables]
    source = ", ".join(f"{table} sha256 {sha256_file(ROOT / table)}" for table in figure.tables)
    figure.draw(tables, source, output)
    return output


if __name__ == "__main__":
    for name in sys.argv[1:] or list(FIGURES):
        print(redraw(name, IMAGES / name).relative_to(ROOT))
