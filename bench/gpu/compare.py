"""The acceptance workflow's tables against the CPU tables committed in bench/gpu/expected/.

Rows are matched on their keys (model, layer, measure, ...): a row missing on either side
fails, and counts (``n``, ``n_rows``, ...) must be equal. A value passes when

    |got − expected| ≤ atol + rtol × |expected|

with (atol, rtol) from `TOLERANCES`, by the measure's family on a GPU, `CPU_TOLERANCE` on
the CPU (the same arithmetic, up to the BLAS build). A GPU's float16 autocast rounds every
activation to 11 significant bits; bfloat16 weights on the CPU (8 bits, every activation
rounded too) perturb more, and moved these tables by at most the amounts that
`docs/scale.md` quotes (bench/gpu/expected/perturbation.md), which the tolerances cover.
"""

from __future__ import annotations

import json
import math
import platform
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

# Each table's key columns, and its columns that count or place rather than measure (equal
# or failed).
TABLES = {
    "measures.tsv": (
        ["model", "transform", "layer", "measure"],
        ["n", "dimensions", "n_layers", "relative_layer", "interval", "scale"],
    ),
    "alignment.tsv": (
        ["model_a", "layer_a", "model_b", "layer_b", "occurrences"],
        ["k", "n_rows"],
    ),
    # A special token's row is keyed by its token (bucket "[CLS]"); its kind and
    # cosine_share columns are the special-token rows' (kind is text: not compared).
    "positions.tsv": (["model", "transform", "layer", "bucket"], ["first_position", "n"]),
    "degeneration.tsv": (
        ["model", "transform", "layer", "vectors", "bin"],
        ["rank_low", "rank_high", "n_words", "n"],
    ),
}
# (atol, rtol) on a GPU by family: cosines, shares and correlations in absolute terms;
# scales (norms, distances, ranks, dimensions, α-ReQ's decay exponent) relative to their
# size. Intrinsic dimension reads ratios of nearest-neighbour distances, which rounding
# moves most; mutual k-NN and CKNNA count neighbours, which rounding swaps where two are
# nearly as near (an H100 moved them by 4e-4 at most: bench/results/acceptance-cuda-h100.md).
# A permutation p-value moves in steps of 1 / (permutations + 1) where a null crosses the
# value: between unrelated tiny models, values and nulls are near, and a swapped neighbour
# moves a p-value by a step or two.
TOLERANCES = {
    "cosine": (0.01, 0.0),
    "scale": (0.0, 0.02),
    "intrinsic_dimension": (0.0, 0.05),
    "neighbours": (0.01, 0.0),
    "p_value": (0.15, 0.0),
}
# The alignment columns of the measures counted from neighbours (their values, intervals,
# biases, nulls, critical values and calibrated scores).
NEIGHBOUR_MEASURES = ("mutual_knn", "cknna")
SCALE_MEASURES = (
    "effective_rank",
    "alpha_req",
    "norm",
    "knn_distance",
    "knn_dot",
    "mean_norm",
    "median_norm",
)
CPU_TOLERANCE = (1e-4, 1e-4)
# On a GPU, the distinct points an intrinsic dimension is measured on (its row's ``n``) may
# differ by this share: with the weights held in float16, every token's embedding rounds,
# and the mean of two byte tokens in one order (``no``) and in the other (``on``) at the
# same place, equal in float32, come out a few float16 steps apart: 6 more distinct points
# of 8,003 (bench/gpu/expected/perturbation.md).
DISTINCT_POINTS_SHARE = 0.002
FINGERPRINTS = "fingerprints.json"


def family(table: str, measure: str, column: str) -> str:
    """Which tolerance family a value belongs to: by the measure's name in measures.tsv, by
    the column elsewhere."""
    name = measure if table == "measures.tsv" else column
    if name.startswith("intrinsic_dimension"):
        return "intrinsic_dimension"
    if table == "alignment.tsv" and name.startswith("p_"):
        return "p_value"
    if table == "alignment.tsv" and any(measure in name for measure in NEIGHBOUR_MEASURES):
        return "neighbours"
    if name in SCALE_MEASURES and "~" not in name:
        return "scale"
    return "cosine"


@dataclass
class TableComparison:
    """One table's comparison: rows matched, failures, and by family the value closest to
    its tolerance: (difference / tolerance, |difference|, where)."""

    name: str
    rows: int = 0
    worst: dict[str, tuple[float, float, str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


@dataclass
class Report:
    """Every table's comparison, or why none could be made."""

    device: str
    tables: list[TableComparison] = field(default_factory=list)
    void: str = ""

    @property
    def ok(self) -> bool:
        return not self.void and not any(table.failures for table in self.tables)

    @property
    def headline(self) -> str:
        if self.void:
            return self.void
        failures = sum(len(table.failures) for table in self.tables)
        rows = sum(table.rows for table in self.tables)
        worst = max((w[0] for table in self.tables for w in table.worst.values()), default=0.0)
        verdict = "all within tolerance" if not failures else f"{failures} values outside"
        return (
            f"{rows} rows of {len(self.tables)} tables, {verdict} "
            f"(the closest at {worst:.0%} of its tolerance)"
        )

    def markdown(self, seconds: float) -> str:
        lines = [
            f"# Acceptance workflow on {self.device} against the committed CPU tables",
            "",
            f"Workflow {seconds:.0f} s. {self.headline}.",
            "",
            "| table | rows | family | closest to tolerance | its difference | where | tolerance |",
            "|---|---|---|---|---|---|---|",
        ]
        for table in self.tables:
            for name, (share, value, where) in sorted(table.worst.items()):
                atol, rtol = tolerance(self.device, name)
                lines.append(
                    f"| {table.name} | {table.rows} | {name} | {share:.0%} | {value:.3g} | {where} "
                    f"| {atol:g} + {rtol:g}·|expected| |"
                )
        failures = [line for table in self.tables for line in table.failures]
        if failures:
            lines += ["", "## Outside tolerance", "", *(f"- {line}" for line in failures[:50])]
        return "\n".join(lines) + "\n"


def tolerance(device: str, name: str) -> tuple[float, float]:
    """(atol, rtol) for a family on `device`."""
    return CPU_TOLERANCE if device == "cpu" else TOLERANCES[name]


def compare_table(
    name: str, got: pd.DataFrame, expected: pd.DataFrame, device: str
) -> TableComparison:
    """Match rows on the table's keys and check every value against its tolerance."""
    keys, counts = TABLES[name]
    result = TableComparison(name)
    merged = expected.merge(got, on=keys, how="outer", suffixes=("", "_got"), indicator=True)
    for _, row in merged[merged["_merge"] != "both"].iterrows():
        side = "expected only" if row["_merge"] == "left_only" else "computed only"
        result.failures.append(f"{name}: row {tuple(row[keys])} {side}")
    both = merged[merged["_merge"] == "both"]
    result.rows = len(both)
    values = [
        column
        for column in expected.columns
        if column not in keys and pd.api.types.is_numeric_dtype(expected[column])
    ]
    for _, row in both.iterrows():
        where = "/".join(str(row[key]) for key in keys)
        for column in values:
            want, have = row[column], row[f"{column}_got"]
            if pd.isna(want) and pd.isna(have):
                continue
            if column in counts:
                if want != have and not _distinct_points_close(name, row, column, device):
                    result.failures.append(f"{where} {column}: {have} ≠ {want}")
                continue
            kind = family(name, str(row.get("measure", "")), column)
            atol, rtol = tolerance(device, kind)
            difference = abs(float(have) - float(want))
            if math.isnan(difference):  # one side NaN
                difference = math.inf
            allowed = atol + rtol * abs(float(want))
            share = difference / allowed if allowed else (0.0 if difference == 0 else math.inf)
            if share > result.worst.get(kind, (-1.0,))[0]:
                result.worst[kind] = (share, difference, f"{where} {column}")
            if share > 1:
                result.failures.append(f"{where} {column}: {have} against {want}")
    return result


def _distinct_points_close(name: str, row: pd.Series, column: str, device: str) -> bool:
    """Whether a row's count is an intrinsic dimension's distinct points on a GPU, within
    `DISTINCT_POINTS_SHARE` of the CPU's."""
    measure = str(row.get("measure", ""))
    if device == "cpu" or name != "measures.tsv" or column != "n":
        return False
    if not measure.startswith("intrinsic_dimension"):
        return False
    return abs(float(row["n_got"]) - float(row["n"])) <= DISTINCT_POINTS_SHARE * float(row["n"])


def compare_run(tables: Path, expected: Path, fingerprints: dict[str, str], device: str) -> Report:
    """Compare a run's tables folder with the expected folder, after checking that the run
    used the models the expected tables were computed with."""
    report = Report(device)
    recorded = json.loads((expected / FINGERPRINTS).read_text())["models"]
    differing = sorted(name for name in recorded if recorded[name] != fingerprints.get(name))
    if differing:
        report.void = (
            f"models {differing} built here differ from those the expected tables were "
            "computed with (random_models changed?): the comparison is void"
        )
        return report
    for name in TABLES:
        got = pd.read_csv(tables / name, sep="\t")
        want = pd.read_csv(expected / name, sep="\t")
        report.tables.append(compare_table(name, got, want, device))
    return report


def write_expected(tables: Path, fingerprints: dict[str, str], destination: Path) -> None:
    """Copy a CPU run's tables as the expected ones, with the models' fingerprints and the
    environment that computed them."""
    import torch
    import transformers

    destination.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        shutil.copy(tables / name, destination / name)
    environment = {
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    document = {"models": fingerprints, "computed_with": environment}
    (destination / FINGERPRINTS).write_text(json.dumps(document, indent=2) + "\n")
