"""Numbers quoted by lookup (`catalogue.quotes`, the docs' macros): a row picked by its
keys, formatted as asked, refused when missing or matched twice (the site's build then
fails), and no number typed by hand in a section that says its numbers are looked up."""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from contextuality.catalogue import quoted_sources, quotes
from contextuality.errors import InputDataError

ROOT = Path(__file__).resolve().parents[1]
# Numbers a page may type: constants of its text, not results.
CONSTANTS = {
    "0.05": "the significance level a sentence tests at",
    "12,544": "the scored pairs of STS 2012–2016, a fact of the data (corpus.sts.scored_only)",
    "1,000": "a massive activation's least ratio to its median, a definition (MASSIVE_RATIO)",
    "10,000": "the occurrences the geometry samples by default, a setting (geometry.sample_size)",
    "26,041": "the pairs of STS 2012–2016, a fact of the data",
    "8,500": "the pairs of STS 2015, a fact of the data",
    "3,000": "the pairs of STS 2015 with a gold score, a fact of the data",
    "9,183": "the pairs of STS 2016, a fact of the data",
    "1,186": "the pairs of STS 2016 with a gold score, a fact of the data",
    "38,393": "the distinct sentences of STS 2012–2016 as written, a fact of the data",
}
# What README.md may type, each with what holds it: it is read where mkdocs does not build.
README_NUMBERS = {
    "2.6": "the lowest torch pyproject.toml admits (tests/test_install.py)",
    "2.13": "the highest torch pyproject.toml admits (tests/test_install.py)",
    "2,595": "the default run's sentences (test_docs_numbers.py, the published default run)",
    "64,188": "the default run's occurrences (the same test)",
    "1,785": "the default run's indexed words (the same test)",
}
# A result as a page would type it: a decimal, or a count with thousands separators; not
# an arXiv identifier, a version (scikit-dimension 0.5.0) or a section of a paper (§4.1).
TYPED = re.compile(r"(?<![\w.,§])(?<!arXiv:)(?:\d{1,3}(?:,\d{3})+|\d*\.\d+)(?![\w]|\.\d)")


@pytest.fixture
def table(tmp_path) -> str:
    path = tmp_path / "scores.tsv"
    frame = pd.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b"],
            "layer": [0, 1, 2, 0, 0],
            "spearman": [0.5, -0.25, 0.75, 0.125, 0.375],
            "low": [0.25, -0.5, 0.5, 0.0, 0.25],
            "high": [0.75, 0.0, 1.0, 0.25, math.nan],
        }
    )
    frame.to_csv(path, sep="\t", index=False)
    return str(path)


def test_a_quote_is_its_row_s_value_formatted(table):
    assert quotes.value(table, "spearman", model="a", layer=1) == "−0.250"
    assert quotes.value(table, "spearman", ".1%", model="a", layer=2) == "75.0%"
    assert quotes.interval(table, "spearman", model="a", layer=0) == "0.500 (0.250–0.750)"
    assert quotes.bounds(table, model="a", layer="1") == "−0.500–0.000"
    assert quotes.extreme(table, "spearman", "max", model="a") == "0.750"
    assert quotes.extreme(table, "spearman", "min", "layer", model="a") == "1"
    assert quotes.extreme(table, "spearman", "max", model="a", layer=range(0, 2)) == "0.500"
    assert quotes.extreme(table, "spearman", "max", "layer", where="low < 0.3") == "0"
    assert quotes.span(table, "spearman", model="a") == "−0.250 to 0.750"
    assert quotes.spread(table, "spearman", model="a") == "0.333 (−0.250–0.750)"
    assert quotes.spread(table, "spearman", model="like:*", layer=0) == "0.333 (0.125–0.500)"
    with pytest.raises(InputDataError, match="no row"):
        quotes.value(table, "spearman", model="a*")  # a value, not a pattern
    assert quotes.span(table, "spearman", where="layer > 1") == "0.750"
    assert quotes.span(table, "high", ".2f", where="high > low", sep="–") == "0.00–1.00"
    assert quotes.runs(table, "model", "layer", where="layer > 0 or model == 'a'") == "0–2 → a"
    assert quotes.runs(table, "high", "layer", model="a") == "0 → 0.75, 1 → 0.0, 2 → 1.0"


def test_a_median_is_numpy_s_over_the_rows_picked(table):
    values = pd.read_csv(table, sep="\t")
    expected = np.median(values.loc[values["layer"] > 0, "spearman"])
    assert quotes.median(table, "spearman", where="layer > 0") == f"{expected:.3f}".replace(
        "-", "−"
    )
    assert quotes.median(table, "spearman", ".2f", model="b") == "0.25"


def test_means_and_their_largest_change_are_brute_force_s(table):
    """`means` averages within each layer, `largest_change` compares two models' averages
    layer by layer; both against the fixture's values worked by hand."""
    # model a's layers are one row each; a and b share layer 0 (two rows of b)
    assert quotes.means(table, "spearman", "layer", model="a") == "−0.250 to 0.750"
    assert quotes.means(table, "spearman", "layer", "max", model="b") == "0.250"
    assert quotes.means(table, "spearman", "model", "min", ".2f", layer=0) == "0.25"
    # layer 0 only: a's 0.5 against b's mean (0.125 + 0.375) / 2 = 0.25
    assert quotes.change(table, "spearman", "layer", "model", "b", model="a", layer=0) == "0.250"
    # a against itself at layers 0 and 2 (where b is absent) is refused; a's layers 0-1
    # against a shifted copy: the differences 0.25 and 0.5, smallest at layer 0
    shifted = pd.read_csv(table, sep="\t").iloc[:2].assign(model="c")
    shifted["spearman"] += [0.25, -0.5]
    both = pd.concat([pd.read_csv(table, sep="\t"), shifted])
    path = table.replace("scores", "shifted")
    both.to_csv(path, sep="\t", index=False)
    keys = {"model": "c", "layer": [0, 1]}
    assert quotes.change(path, "spearman", "layer", "model", "a", "max", ".2f", **keys) == "0.50"
    assert quotes.change(path, "spearman", "layer", "model", "a", "min", ".2f", **keys) == "0.25"
    assert quotes.change(path, "spearman", "layer", "model", "a", "argmin", **keys) == "0"
    # signed: c − a is +0.25 at layer 0 and −0.5 at layer 1
    assert quotes.change(path, "spearman", "layer", "model", "a", "range", "+.2f", **keys) == (
        "−0.50 to +0.25"
    )
    assert quotes.change(
        path, "spearman", "layer", "model", "a", "one", "+.2f", model="c", layer=1
    ) == ("−0.50")
    with pytest.raises(InputDataError, match="not all found"):
        quotes.change(table, "spearman", "layer", "model", "b", model="a")
    # where: both sides' rows satisfy it (layer 1 only: −0.5); by a list of columns
    assert quotes.change(
        path, "spearman", "layer", "model", "a", "one", "+.2f", where="layer > 0", **keys
    ) == ("−0.50")
    assert quotes.change(path, "spearman", ["layer"], "model", "a", "max", ".2f", **keys) == "0.50"
    # present: model a against b where both have a value (layer 0 only: 0.5 − 0.25)
    assert quotes.change(table, "spearman", "layer", "model", "b", present=True, model="a") == (
        "0.250"
    )
    with pytest.raises(InputDataError, match="which is max, min, argmax, argmin, range or one"):
        quotes.change(path, "spearman", "layer", "model", "a", "mean", **keys)
    with pytest.raises(InputDataError, match="which is min, max or range"):
        quotes.means(table, "spearman", "layer", "median", model="a")


def test_counts_ratios_quotients_and_differences_are_worked_by_hand(table):
    """The fixture's rows: a at layers 0, 1, 2 (0.5, −0.25, 0.75) and b twice at layer 0
    (0.125, 0.375)."""
    assert quotes.count(table) == "5"
    assert quotes.count(table, "spearman > 0.2") == "3"
    assert quotes.count(table, "spearman > 0.2", model="a") == "2"
    assert quotes.count(table, distinct=["model", "layer"]) == "4"
    # layer 2 over layer 0 of model a: 0.75 / 0.5; b has no layer 2 to pair with
    assert quotes.ratios(table, "spearman", "layer", 2, 0, ["model"], "one", model="a") == "1.5"
    with pytest.raises(InputDataError, match="not paired"):
        quotes.ratios(table, "spearman", "layer", 2, 0, ["model"])
    with pytest.raises(InputDataError, match="not paired"):  # b's two rows at layer 0
        quotes.ratios(table, "spearman", "model", "b", "a", ["layer"], layer=0)
    # 1 over the smallest and over the largest of b's values
    assert quotes.quotient(1, table, "spearman", "min", ".1f", model="b") == "8.0"
    assert quotes.quotient(1, table, "spearman", "max", ".2f", model="b") == "2.67"
    # |spearman − low| per row: 0.25, 0.25, 0.25, 0.125, 0.125
    assert quotes.difference(table, "spearman", "low", "min") == "0.125"
    assert quotes.difference(table, "spearman", "low", "max", model="a") == "0.250"
    assert quotes.difference(table, "spearman", "low", "median") == "0.250"
    assert quotes.difference(table, "spearman", "low", "max", where="layer == 0") == "0.250"
    assert quotes.difference(table, "spearman", "low", "min", where="model == 'a'") == "0.250"
    with pytest.raises(InputDataError, match="which is min, median or max"):
        quotes.difference(table, "spearman", "low", "mean")


def test_ratios_pair_rows_by_their_columns(tmp_path):
    """Two seeds, each a short and a long warm-up: the ratios pair each seed with itself."""
    path = tmp_path / "events.tsv"
    pd.DataFrame(
        {"seed": [0, 0, 1, 1], "warmup": [10, 200, 10, 200], "peak": [20, 50, 16, 32]}
    ).to_csv(path, sep="\t", index=False)
    assert quotes.ratios(str(path), "peak", "warmup", 200, 10, ["seed"]) == "2.0 to 2.5"
    assert quotes.ratios(str(path), "peak", "warmup", 200, 10, ["seed"], "max", ".2f") == "2.50"
    assert quotes.ratios(str(path), "peak", "warmup", 200, 10, ["seed"], "one", seed=1) == "2.0"


def test_a_shift_pairs_each_layer_of_two_runs_or_two_estimators(table, tmp_path):
    """Model a against model b in one table, and a table against a copy with every value
    raised by a layer's own amount, each worked by hand."""
    # a's and b's rows at layer 0: b has two, so they cannot pair one to one
    with pytest.raises(InputDataError, match="do not pair one to one"):
        quotes.shift(table, "spearman", {"model": "a"}, {"model": "b"})
    raised = pd.read_csv(table, sep="\t")
    raised["spearman"] += raised["layer"] * 0.25 - 0.125  # −0.125, +0.125, +0.375 by layer
    path = tmp_path / "raised.tsv"
    raised.to_csv(path, sep="\t", index=False)
    keys = {"before": {"model": "a"}, "after": {"model": "a"}, "after_table": str(path)}
    assert quotes.shift(table, "spearman", **keys) == "+0.125 (−0.125…+0.375)"
    assert quotes.shift(table, "spearman", **keys, which="mean", format="+.2f") == "+0.12"
    assert quotes.shift(table, "spearman", **keys, layer=[1, 2]) == "+0.250 (+0.125…+0.375)"
    # the same table, two columns of keys: a's layer 1 against b's layer 0 is no pair
    with pytest.raises(InputDataError, match="do not pair"):
        quotes.shift(table, "spearman", {"layer": 1}, {"layer": 2})
    with pytest.raises(InputDataError, match="which is spread or mean"):
        quotes.shift(table, "spearman", **keys, which="max")


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"model": "c"}, r"no row where \{'model': 'c'\}"),
        ({"model": "b", "layer": 0}, r"2 rows where .*a quote names one"),
        ({"family": "a"}, r"no column \['family'\]"),
    ],
)
def test_a_quote_of_no_row_or_two_is_refused(table, keys, message):
    with pytest.raises(InputDataError, match=message):
        quotes.value(table, "spearman", **keys)


def test_a_run_of_a_repeated_key_or_a_span_of_no_row_is_refused(table):
    with pytest.raises(InputDataError, match="layer repeats"):
        quotes.runs(table, "spearman", "layer")
    with pytest.raises(InputDataError, match="no row"):
        quotes.span(table, "spearman", where="layer > 2")
    with pytest.raises(InputDataError, match="no row"):
        quotes.runs(table, "spearman", "layer", where="layer > 2")


def test_a_quote_of_an_empty_cell_or_a_missing_table_is_refused(table, tmp_path):
    frame = pd.read_csv(table, sep="\t").iloc[:4]
    frame.assign(high=[0.75, 0.0, 1.0, math.nan]).to_csv(table, sep="\t", index=False)
    quoted_sources.table.cache_clear()
    with pytest.raises(InputDataError, match="high is empty"):
        quotes.bounds(table, model="b")
    # unless the page says what an empty cell means
    assert quotes.value(table, "high", empty="none", model="b") == "none"
    assert quotes.value(table, "high", ".2f", empty="none", model="a", layer=0) == "0.75"
    with pytest.raises(InputDataError, match="no such table"):
        quotes.value(str(tmp_path / "none.tsv"), "spearman", model="a")


def test_a_bench_s_json_records_are_quoted_as_a_table_and_anything_else_refused(tmp_path):
    """A bench's JSON list of records (one per size and device), the file's own or under a
    key of its object (``report.json#models``), is a table like a TSV file: each record a
    row, its keys the columns, a nested key's dotted; an object is one row, a list's items
    numbered; anything else is refused."""
    records = [
        {"n": 10000, "device": "cpu", "search_s": 2.454},
        {"n": 10000, "device": "cuda", "search_s": 0.139, "peak_mib": 799.1},
    ]
    path = tmp_path / "neighbours.json"
    path.write_text(json.dumps(records))
    assert quotes.value(str(path), "search_s", ".2f", n=10000, device="cuda") == "0.14"
    assert quotes.span(str(path), "search_s", ".1f", n=10000) == "0.1 to 2.5"
    with pytest.raises(InputDataError, match="peak_mib is empty"):
        quotes.value(str(path), "peak_mib", device="cpu")
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"threads": 2, "models": [{"model": "m", "full": {"s": 1.5}}]}))
    assert quotes.value(f"{report}#models", "full.s", ".1f", model="m") == "1.5"
    for wrong in (f"{report}#threads", f"{report}#none"):
        with pytest.raises(InputDataError, match="not a JSON list of records"):
            quotes.value(wrong, "model", model="m")
    timed = tmp_path / "timed.json"
    timed.write_text(json.dumps({"runs": [61.8, 60.0], "jobs": {"extract": {"total": 26.1}}}))
    assert quotes.value(str(timed), "runs.1", ".1f") == "60.0"
    assert quotes.value(str(timed), "jobs.extract.total", ".1f") == "26.1"
    assert quotes.value(str(report), "threads", "d") == "2"


def test_a_whole_number_key_picks_its_row_in_a_column_a_missing_value_made_float(tmp_path):
    """A record without a breadth makes the column float (64.0); ``breadth=64`` still
    picks its row, and ``breadth=6`` none (the text is compared whole)."""
    records = [
        {"index": "flat", "breadth": None, "s": 5.1},
        {"index": "ivf", "breadth": 64, "s": 4.3},
    ]
    path = tmp_path / "rates.json"
    path.write_text(json.dumps(records))
    assert quotes.value(str(path), "s", ".1f", breadth=64) == "4.3"
    with pytest.raises(InputDataError, match="no row"):
        quotes.value(str(path), "s", breadth=6)


@pytest.mark.parametrize("n", [5, 6, 7])
def test_the_smallest_significant_rho_is_that_of_every_ordering(n):
    """Brute force over every ordering with scipy's Spearman: the smallest |ρ| whose share
    of orderings at least as strong is below 0.05."""
    rhos = np.round(
        [abs(spearmanr(order, range(n)).statistic) for order in itertools.permutations(range(n))],
        12,
    )
    significant = [rho for rho in np.unique(rhos) if np.mean(rhos >= rho) < 0.05]
    assert quotes.smallest_significant_rho(n) == f"{min(significant):.3f}"


def _typed(text: str) -> list[str]:
    """The numbers typed in `text` outside code, comments and macro calls."""
    for pattern in (r"```.*?```", r"`[^`]*`", r"\{\{.*?\}\}", r"\{%.*?%\}", r"<!--.*?-->"):
        text = re.sub(pattern, " ", text, flags=re.DOTALL)
    return TYPED.findall(text)


def test_the_scan_finds_typed_numbers_and_passes_looked_up_ones():
    text = (
        "ρ = 0.805 over 1,000 draws in 2025 {{ value(t, 'x', model='a') }} `0.5` at layer 12"
        " (arXiv:2603.05498, §4.1), as scikit-dimension 0.5.0 gives."
    )
    assert _typed(text) == ["0.805", "1,000"]


def test_the_constants_a_looked_up_section_may_type_are_the_code_s():
    """A constant's value is the definition it names, not a number typed to match."""
    from contextuality.configuration import schema
    from contextuality.extraction import ablation
    from contextuality.measures import outliers

    assert float(
        next(k for k, v in CONSTANTS.items() if "MASSIVE_RATIO" in v).replace(",", "")
    ) == (ablation.MASSIVE_RATIO)
    assert ablation.MASSIVE_RATIO == outliers.MASSIVE_RATIO
    sampled = next(k for k, v in CONSTANTS.items() if "geometry.sample_size" in v)
    assert int(sampled.replace(",", "")) == schema.default("geometry", "sample_size")
    assert ablation.MASSIVE_MAGNITUDE == outliers.MASSIVE_MAGNITUDE


def test_the_facts_of_the_data_a_section_may_type_are_those_the_corpus_tests_check():
    """Each count of STS that `CONSTANTS` calls a fact of the data is one that
    tests/test_corpus_sentences.py checks against the archives."""
    from test_corpus_sentences import STS_PAIRS, STS_SCORED_PAIRS, STS_UNIQUE_ALL

    counts = (
        sum(STS_PAIRS.values()),
        sum(STS_SCORED_PAIRS.values()),
        STS_UNIQUE_ALL,
        *(table[year] for year in (2015, 2016) for table in (STS_PAIRS, STS_SCORED_PAIRS)),
    )
    facts = {written for written, what in CONSTANTS.items() if "a fact of the data" in what}
    assert facts == {f"{count:,}" for count in counts}


def test_no_page_types_a_number():
    """Every docs page looks its numbers up (or types only `CONSTANTS`); README.md types
    only what `README_NUMBERS` says holds it, and the torch range is pyproject.toml's."""
    typed = {
        page.name: sorted(set(_typed(page.read_text())) - set(CONSTANTS))
        for page in sorted((ROOT / "docs").glob("*.md"))
    }
    assert not any(typed.values()), {name: found for name, found in typed.items() if found}
    readme = (ROOT / "README.md").read_text()
    assert set(_typed(readme)) == set(README_NUMBERS)
    torch = re.search(r'"torch>=([\d.]+),<([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    highest = torch[2].split(".")
    assert f"torch from {torch[1]} to {highest[0]}.{int(highest[1]) - 1}" in " ".join(
        readme.split()
    )


def test_a_quote_of_a_missing_row_fails_the_site_s_build(tmp_path, table):
    pytest.importorskip("mkdocs_macros")
    (tmp_path / "docs").mkdir()
    quote = f'{{{{ value("{table}", "spearman", model="c") }}}}'
    (tmp_path / "docs/index.md").write_text(f"---\nrender_macros: true\n---\n\n# Page\n\n{quote}\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: quotes\nstrict: true\nplugins:\n  - macros:\n"
        f"      module_name: {ROOT / 'docs/macros'}\n      render_by_default: false\n"
        "      on_undefined: strict\n      on_error_fail: true\n"
    )
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", "site"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode != 0
    assert "no row where {'model': 'c'}" in result.stdout + result.stderr


def test_a_report_s_markdown_table_and_json_lines_are_tables_too(tmp_path):
    """A bench report's N-th pipe table (``report.md#2``), its numbers read as written
    (``1,159``), and a JSON Lines file, one record a line; a table number out of range is
    refused with the range."""
    report = tmp_path / "report.md"
    report.write_text(
        "# Memory\n\n| step | peak (MiB) | ratio |\n|---|---:|---:|\n| `none` | 1,159 | 1.50 |\n"
        "\nProse between.\n\n| a | b |\n|---|---|\n| x | 0.0095 |\n| y | 3.35e-05 |\n"
    )
    assert quotes.value(f"{report}#1", "peak (MiB)", ",d", step="none") == "1,159"
    assert quotes.value(f"{report}#1", "ratio", ".2f", step="none") == "1.50"
    assert quotes.value(f"{report}#2", "b", ".4f", a="x") == "0.0095"
    assert quotes.value(f"{report}#2", "b", ".2e", a="y") == "3.35e−05"
    for wrong in ("3", "0", "", "first"):
        with pytest.raises(InputDataError, match="has tables 1 to 2"):
            quotes.value(f"{report}#{wrong}", "b", a="x")
    lines = tmp_path / "profile.jsonl"
    lines.write_text('{"shape": "7b", "bare": {"tok_s": 30753.2}}\n\n{"shape": "bert"}\n')
    assert quotes.value(str(lines), "bare.tok_s", ",.0f", shape="7b") == "30,753"


def test_a_constant_is_the_code_s_own_value_by_its_name(tmp_path):
    """A constant of the package by ``module:NAME``, indexed by its keys, or of a script by
    its path; a name that is not one is refused."""
    from contextuality.extraction import partitions

    name = "contextuality.extraction.partitions:SEGMENT_WORDS"
    assert quotes.constant(name, ",d") == f"{partitions.SEGMENT_WORDS:,d}"
    assert quotes.constant("bench/gpu/compare.py:TOLERANCES[cosine][0]") == "0.01"
    script = tmp_path / "limits.py"
    script.write_text("GOALS = (('forward', 0.8), ('disk', 0.35))\n")
    assert quotes.constant(f"{script}:GOALS[1][1]", ".0%") == "35%"
    for wrong, message in (
        (f"{script}:NONE", "has no NONE"),
        (f"{script}:GOALS[2]", r"no \[2\]"),
        ("GOALS", "not a constant's name"),
        (f"{tmp_path}/none.py:X", "no such script"),
    ):
        with pytest.raises(InputDataError, match=message):
            quotes.constant(wrong)
