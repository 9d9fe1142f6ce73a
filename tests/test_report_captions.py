"""The report's captions that list instruments are filled in from their records
(`workflow.report.record_caption`): a new record is in them, no caption file naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextuality.geometry import alignment_catalogue
from contextuality.geometry.alignment_record import AlignmentMeasure
from contextuality.measures.summary import Census
from contextuality.workflow.report import record_caption

REPORT = Path(__file__).parents[1] / "workflow/report"

# The captions whose lists of alignment measures come from the records.
ALIGNMENT_CAPTIONS = ("alignment_table.rst", "best_layers_table.rst", "figures/alignment.rst")


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A study's working directory, where the filled-in captions are written."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def new_measure(monkeypatch):
    """An alignment measure added to the catalogue, as a new module would add it."""
    record = AlignmentMeasure(
        name="same_neighbour",
        label="same nearest neighbour",
        caption="The share of rows whose nearest neighbour is the same row in both layers.",
        of_neighbours=lambda left, right, weights: 0.0,
    )
    measures = (*alignment_catalogue.ALIGNMENT_MEASURES, record)
    monkeypatch.setattr(alignment_catalogue, "ALIGNMENT_MEASURES", measures)
    return record


@pytest.mark.parametrize("name", ALIGNMENT_CAPTIONS)
def test_an_alignment_measures_record_reaches_the_captions_that_list_them(study, new_measure, name):
    text = Path(record_caption(REPORT / name)).read_text()
    for record in alignment_catalogue.ALIGNMENT_MEASURES:
        if name != "figures/alignment.rst" or record.panel:  # the figure: its panels
            assert record.label in text, (name, record.name)
    if name != "best_layers_table.rst":  # the tables' and the figure's lists say what each is
        assert new_measure.caption in text
    assert "[[" not in text and "[%" not in text


def test_every_caption_renders_and_leaves_the_reports_fields_to_it(study):
    """Every caption of workflow/report fills in (none names a field the records lack);
    what Snakemake fills in at report time (``{{ snakemake... }}``) is left as it was."""
    census = Census(name="rogue", row="rogue", columns=(), key="dimension", caption="By rogue.")
    for template in sorted(REPORT.rglob("*.rst")):
        records = {"census": census} if template.name == "census_table.rst" else {}
        text = Path(record_caption(template, **records)).read_text()
        assert text.count("{{ snakemake.") == template.read_text().count("{{ snakemake."), template
        if records:  # a census table's caption is its record's
            assert text.strip() == census.caption


def test_a_caption_is_written_once_in_the_study_and_named_by_its_text(study, new_measure):
    path = Path(record_caption(REPORT / "alignment_table.rst"))
    assert path.is_relative_to(study) and path.is_absolute()
    assert Path(record_caption(REPORT / "alignment_table.rst")) == path
    before = path.stat().st_mtime_ns
    record_caption(REPORT / "alignment_table.rst")
    assert path.stat().st_mtime_ns == before


def test_a_measures_figure_is_in_the_section_its_spec_names_under_its_transform():
    """Every figure of the measures is in its spec's section of the report, under the
    transform it shows; a record's own figure beyond the paper's."""
    from contextuality.figures.specs import BEYOND_THE_PAPER, FIGURES, record_figure
    from contextuality.measures.record import Measure, MeasureFigure
    from contextuality.workflow.report import report_section

    for name, spec in FIGURES.items():
        assert report_section(name, "whiten") == {
            "category": spec.section,
            "subcategory": "transform whiten",
        }
    record = Measure(
        name="norm",
        rows=("norm",),
        caption="The mean norm of a layer's occurrences.",
        step="layer_dimension",
        figure=MeasureFigure("norms", "Norms by layer", "norm"),
    )
    assert record_figure(record).section == BEYOND_THE_PAPER  # not among the paper's


def test_a_corrections_record_reaches_the_caption_that_lists_them(study, monkeypatch):
    from contextuality.transforms import fitting
    from contextuality.transforms.record import Correction

    added = Correction(
        name="rescale",
        label="rescaled",
        caption="Every vector divided by the mean norm of the fitting rows.",
        fit=lambda vectors, settings, stored_as: None,
    )
    monkeypatch.setattr(fitting, "CORRECTIONS", (*fitting.CORRECTIONS, added))
    text = Path(record_caption(REPORT / "figures/geometry_transforms.rst")).read_text()
    for record in fitting.CORRECTIONS:
        assert f"``{record.name}`` ({record.label}): {record.caption}" in text
