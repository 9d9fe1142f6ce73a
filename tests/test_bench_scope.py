"""bench/ measures speed and memory: a table or report a docs page quotes is made by the
workflow and published (`docs/results/`), never written by a bench script that computes a
study's results."""

from __future__ import annotations

import re
from pathlib import Path

from contextuality.figures import docs

ROOT = Path(__file__).resolve().parents[1]
BENCH_RESULTS = ROOT / "bench" / "results"
# Benches of speed and memory (and of an algorithm's cost against its exact answer): the
# docs may cite their reports.
SPEED_AND_MEMORY = {
    "batch_padding",
    "default_run",
    "extraction",
    "forward_bounds",
    "geometry_memory",
    "lanczos",
    "measure_memory",
    "measures",
    "neighbours",
    "newcomer",
    "parity",
    "scaling",
    "scan_rates",
}
# The GPU acceptance (bench/gpu/): its reports are named after its stages.
GPU_REPORTS = ("acceptance-", "forward-profile-")
WRITER = re.compile(r"Written by `bench/(\w+)\.py")


def _expanded(written: str) -> list[str]:
    """A name as a page writes it with its braces expanded: ``a-{b,c}.tsv`` is ``a-b.tsv``
    and ``a-c.tsv``; a wildcard matches the files under bench/results."""
    found = re.search(r"\{([^{}]*)\}", written)
    if found:
        return [
            name
            for choice in found.group(1).split(",")
            for name in _expanded(written[: found.start()] + choice + written[found.end() :])
        ]
    if "*" in written:
        return [path.name for path in BENCH_RESULTS.glob(written)]
    return [written]


def _cited() -> set[str]:
    """Every file under bench/results a docs page, README or a docs figure's tables name."""
    pages = [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    named = {
        name
        for page in pages
        for written in re.findall(r"bench/results/([\w.{},*-]+)", page.read_text())
        for name in _expanded(written)
        if name.endswith((".tsv", ".md"))
    }
    for figure in docs.FIGURES.values():
        named |= {Path(table).name for table in figure.tables if table.startswith("bench/")}
    return named


def _writer(name: str) -> str | None:
    """The bench script that wrote `name`: the one its report (the longest report name it
    begins with) says wrote it, else the bench whose name, dashed, begins it (``gpu`` for
    the GPU acceptance's reports)."""
    stem = Path(name).stem
    reports = [path for path in BENCH_RESULTS.glob("*.md") if stem.startswith(path.stem)]
    if reports:
        found = WRITER.search(max(reports, key=lambda path: len(path.stem)).read_text())
        if found:
            return found.group(1)
    if stem.startswith(GPU_REPORTS):
        return "gpu"
    scripts = [path.stem for path in (ROOT / "bench").glob("*.py")]
    named = [script for script in scripts if stem.startswith(script.replace("_", "-"))]
    return max(named, key=len) if named else None


def test_no_bench_script_writes_what_the_docs_quote():
    writers: dict[str, set[str]] = {}
    for name in sorted(_cited()):
        writer = _writer(name)
        assert writer is not None, f"bench/results/{name}: no report names the script writing it"
        writers.setdefault(writer, set()).add(name)
    studies = set(writers) - SPEED_AND_MEMORY - {"gpu"}
    assert not studies, (
        f"bench scripts write tables the docs quote: {sorted(studies)} (make the study a stage"
        " of the workflow and publish its run)"
    )


def test_the_speed_benches_are_bench_scripts():
    scripts = {path.stem for path in (ROOT / "bench").glob("*.py")}
    assert scripts >= SPEED_AND_MEMORY, sorted(SPEED_AND_MEMORY - scripts)
    assert (ROOT / "bench" / "gpu" / "acceptance.py").is_file()
