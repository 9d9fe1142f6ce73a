"""How far half-precision arithmetic moves the acceptance tables, measured on the CPU.

A GPU runs the forward pass with the weights held in ``cuda_dtype``, float16 by default
(11 significant bits): every operation rounds to it, layer norms and softmax accumulating
in float32 inside their kernels. No GPU is needed to bound what that does downstream: the
acceptance workflow runs here with float32 weights, then with ``weights_dtype: float16``
and ``bfloat16`` (every operation in that precision), and every value of the
half-precision runs' tables is compared with the float32 run's by the families of
`compare.TOLERANCES`. The results go to bench/gpu/expected/perturbation.md; the GPU
tolerances must cover the float16 run's.

    python bench/gpu/perturbation.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import acceptance  # noqa: E402
import compare  # noqa: E402
from workdir import run_workflow  # noqa: E402

RESULT = HERE / "expected" / "perturbation.md"
HEADER = [
    "| table | family | share of tolerance | difference | where | GPU tolerance |",
    "|---|---|---|---|---|---|",
]


HALF_PRECISIONS = ("float16", "bfloat16")


def main() -> None:
    corpus = acceptance.corpus_path()
    sections = []
    with tempfile.TemporaryDirectory(prefix="perturbation-") as scratch:
        work = Path(scratch)
        acceptance.build_models(work / "models", corpus)
        tables = {}
        for weights in ("float32", *HALF_PRECISIONS):
            config = acceptance.workflow_config(corpus, work / "models", "cpu")
            for section in config["models"].values():
                section["weights_dtype"] = weights
            run_workflow(work / weights, config, 2, ["--scheduler", "greedy"])
            tables[weights] = work / weights / "results" / "tables"
        for weights in HALF_PRECISIONS:
            sections += [f"## {weights} weights", "", *HEADER]
            for name in compare.TABLES:
                exact = pd.read_csv(tables["float32"] / name, sep="\t")
                rounded = pd.read_csv(tables[weights] / name, sep="\t")
                compared = compare.compare_table(name, rounded, exact, "cuda")
                for family, (share, value, where) in sorted(compared.worst.items()):
                    atol, rtol = compare.TOLERANCES[family]
                    sections.append(
                        f"| {name} | {family} | {share:.0%} | {value:.3g} | {where} "
                        f"| {atol:g} + {rtol:g}·|x| |"
                    )
                sections += [f"| {name} | outside | | | {line} | |" for line in compared.failures]
            sections.append("")
    lines = [
        "# Half-precision weights against float32 on the CPU: the acceptance tables",
        "",
        "Written by `bench/gpu/perturbation.py`: the acceptance workflow with float32 weights,",
        "then with float16 and with bfloat16 weights (every operation in that precision, as",
        "a GPU runs it with its weights held in `cuda_dtype`). For each family of values, the",
        "one closest to the GPU tolerance of `bench/gpu/compare.py` (as a share of it), its",
        "difference and where it is; then any value outside.",
        "",
        *sections,
    ]
    RESULT.write_text("\n".join(lines) + "\n")
    print(RESULT.read_text())


if __name__ == "__main__":
    main()
