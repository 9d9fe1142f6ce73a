"""Where the report shows each figure and table. A section named for what it holds (its
category) and a part of it (its subcategory), so that no output lands under "Other" and
no instrument under the paper's figures."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from contextuality.figures.specs import FIGURES, FIGURES_OF_ROWS, panels_drawn_in
from contextuality.measures.registry import CENSUSES, measure_of_census

_POSITIONS = "Positions and first-token sinks"
_DIMENSION = ("Geometry", "intrinsic dimension")
_ALIGNMENT = ("Geometry", "alignment between layers and models")
_EMBEDDING_MATRICES = "Embedding matrices"
_DOWNSTREAM = "Layers against a downstream task"
_ABLATION_EFFECTS = "Ablations"
_EACH_TRANSFORM = "transform {transform}"
_CENSUS = "census of every layer"

# Output name (a table rule's, or a figure's but a measures' figure's) → (category,
# subcategory); "{transform}" is the transform a rule's outputs are for, and any other
# field a wildcard of its rule. A measures' figure (`figures.specs.FIGURES`) is in the
# section its spec names, under the transform it shows.
REPORT_SECTIONS = {
    "transforms_figure": ("Corrections of the space", "every transform side by side"),
    "measures_table": ("Tables", "every measure of every layer"),
    "corpus_table": ("Tables", "the corpus and each model's units"),
    "context_specific_words": ("Tables", "context-specific words by model and transform"),
    "degeneration_figures": ("Degeneration", "{model}, transform {transform}"),
    "degeneration_table": ("Degeneration", "every layer by frequency bin"),
    "positions": (_POSITIONS, "by layer"),
    "positions_table": (_POSITIONS, "every layer by position"),
    **dict.fromkeys(
        ("intrinsic_dimension", "intrinsic_dimension_scales", "dimension_scales_table"),
        _DIMENSION,
    ),
    **dict.fromkeys(
        ("cka", "alignment", "best_layers", "alignment_table", "best_layers_table"), _ALIGNMENT
    ),
    "geometry_transforms": ("Geometry", "under the corrections"),
    "sweep_figure": ("Checkpoint sweeps", "{sweep}"),
    "family_figure": ("Model families", "{family}"),
    "ablation_figure": ("Ablations", "{model}"),
    "reference": ("Reproduction of the published numbers", "{model}"),
    "word_benchmarks": ("Table 1: static embeddings", "every benchmark"),
    "embedding_matrices_figure": (_EMBEDDING_MATRICES, "spectrum and norm by frequency"),
    "embedding_matrices_table": (_EMBEDDING_MATRICES, "every matrix of every model"),
    "embedding_matrix_norms_table": (_EMBEDDING_MATRICES, "row norm by frequency bin"),
    "embedding_matrix_spectra_table": (_EMBEDDING_MATRICES, "singular spectrum"),
    **dict.fromkeys(
        (
            "alignment_sensitivity_table",
            "alignment_sensitivity_matches_table",
            "alignment_sensitivity_seeds_table",
            "alignment_sensitivity_figure",
        ),
        (_ALIGNMENT[0], "best matches across samples, seeds and k"),
    ),
    "downstream_figure": (_DOWNSTREAM, "STS score by layer and each measure against it"),
    "downstream_table": (_DOWNSTREAM, "STS score by layer"),
    "downstream_agreement_table": (_DOWNSTREAM, "each geometry measure's agreement"),
    "ablation_effects_figure": (_ABLATION_EFFECTS, "perplexity and attention"),
    "ablation_effects_perplexity_table": (_ABLATION_EFFECTS, "perplexity by condition"),
    "ablation_effects_attention_table": (_ABLATION_EFFECTS, "attention by block and head"),
    "training_losses_table": ("Checkpoint sweeps", "training: loss curves"),
    "training_losses_figure": ("Checkpoint sweeps", "training: loss curves"),
    "training_probes_table": ("Checkpoint sweeps", "training: early steps"),
}


def report_section(name: str, transform: str | None = None) -> dict[str, str]:
    """The ``category`` and ``subcategory`` of output `name` in the report (keyword
    arguments of Snakemake's ``report()``), for `transform` where its rule is one's: a
    measures' figure's its spec's (`figures.specs.FIGURES`), under the transform it
    shows; a census table's (``<census>_table``) `census_section`; any other output's
    `REPORT_SECTIONS`'."""
    if name in FIGURES:
        category, subcategory = FIGURES[name].section, _EACH_TRANSFORM
    elif name.removesuffix("_table") in CENSUSES:
        category, subcategory = census_section(name.removesuffix("_table")), _CENSUS
    else:
        category, subcategory = REPORT_SECTIONS[name]
    if transform is not None:
        subcategory = subcategory.replace("{transform}", transform)
    return {"category": category, "subcategory": subcategory}


def census_section(name: str) -> str:
    """The report's section of census `name` (`record.Measure.census`): that of the first
    figure of several rows drawing its measure's rows (`record.Measure.drawn_in`), else
    the tables'."""
    drawn_in = [
        drawn.figure
        for drawn in measure_of_census(name).drawn_in
        if drawn.figure in FIGURES_OF_ROWS
    ]
    return FIGURES_OF_ROWS[drawn_in[0]].section if drawn_in else "Tables"


# Where the captions filled in from the records are written: beside Snakemake's own
# records, in the working directory.
CAPTIONS_DIRECTORY = Path(".snakemake/captions")


def record_caption(template: str | os.PathLike, **records: object) -> str:
    """The caption of a report template (an .rst file) with the records' lists filled in:
    its ``[% ... %]`` and ``[[ ... ]]`` parts rendered (Jinja) with every measure
    (``measures``, `measures.registry.MEASURES`), every alignment measure
    (``alignment_measures``), every correction (``corrections``), the panels of a figure
    of a panel per row (``panels(figure)``, `figures.specs.panels_drawn_in`) and `records`
    (as a census, ``census``), its ``{{ ... }}`` left for the report (Snakemake renders them with
    the job's wildcards, params and config). A new record is in the caption as it
    describes itself, no caption file naming it.

    Returns the absolute path of the file written (`CAPTIONS_DIRECTORY`, named by the
    template and a digest of the text, written once), what a rule's ``report(caption=…)``
    takes."""
    import jinja2

    from contextuality.geometry.alignment_catalogue import ALIGNMENT_MEASURES
    from contextuality.measures.registry import MEASURES
    from contextuality.transforms.fitting import CORRECTIONS

    environment = jinja2.Environment(
        block_start_string="[%",
        block_end_string="%]",
        variable_start_string="[[",
        variable_end_string="]]",
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    text = environment.from_string(Path(template).read_text()).render(
        measures=MEASURES,
        alignment_measures=ALIGNMENT_MEASURES,
        corrections=CORRECTIONS,
        panels=panels_drawn_in,
        **records,
    )
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = (CAPTIONS_DIRECTORY / f"{Path(template).stem}.{digest}.rst").resolve()
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(text)
        temporary.replace(path)
    return str(path)
