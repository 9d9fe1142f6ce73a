"""The top eigenpair behind MEV: LAPACK on the Gram matrix against Lanczos iteration.

`components.top_singular_pair` finds σ₁² (and v₁) of a word's occurrences, or of a sampled
baseline's 1,000 rows, by Lanczos iteration (ARPACK); smaller groups go to LAPACK on their
Gram matrix (`components._LANCZOS_LIMIT`). This times both on rows of a real layer (the
embedded default run's MiniLM layer 3 by default: run the README's first command first),
one thread, and the Lanczos start and restart length the package uses against ARPACK's
defaults (a seeded random start, 20 vectors between restarts).

    python bench/lanczos.py [--shard results/embeddings/minilm/layer_3.h5]

Writes ``bench/results/lanczos-<machine>.{json,md}``.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import scipy.linalg
from scipy.sparse.linalg import LinearOperator, eigsh
from threadpoolctl import threadpool_limits

from contextuality.measures import components

from arguments import input_file, output_directory
from workdir import REPO, write_report

SIZES = (50, 100, 150, 200, 300, 384, 1000, 4000)


def interleaved(
    solvers: dict[str, Callable[[np.ndarray], float]], matrices: list[np.ndarray]
) -> dict[str, float]:
    """Mean milliseconds of each solver over `matrices`, the solvers taking turns on each
    matrix (after one warm-up call each), so that a drift in the machine's speed meets
    them alike."""
    totals = dict.fromkeys(solvers, 0.0)
    for solve in solvers.values():
        solve(matrices[0])
    for matrix in matrices:
        for name, solve in solvers.items():
            started = time.perf_counter()
            solve(matrix)
            totals[name] += time.perf_counter() - started
    return {name: total / len(matrices) * 1e3 for name, total in totals.items()}


def lapack_top(matrix: np.ndarray) -> float:
    """σ₁² from LAPACK's syevr on the smaller Gram matrix, the top eigenvalue only."""
    n, d = matrix.shape
    gram = matrix @ matrix.T if n <= d else matrix.T @ matrix
    size = len(gram)
    found = scipy.linalg.eigh(gram, subset_by_index=[size - 1, size - 1], eigvals_only=True)
    return float(found[0])


def arpack_defaults(matrix: np.ndarray, products: list[int]) -> float:
    """σ₁² by ARPACK on XᵀX from a seeded random start with its default 20 vectors,
    counting the products with XᵀX in `products`."""

    def gram_times(vectors: np.ndarray) -> np.ndarray:
        products.append(1)
        return matrix.T @ (matrix @ vectors)

    size = matrix.shape[1]
    operator = LinearOperator((size, size), matvec=gram_times, matmat=gram_times, dtype=float)
    start = np.random.default_rng(0).standard_normal(size)
    return float(eigsh(operator, k=1, v0=start, return_eigenvectors=False)[0])


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shard", type=input_file, default=REPO / "results/embeddings/minilm/layer_3.h5"
    )
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument("--machine", default="cpu")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    with h5py.File(args.shard, "r") as handle:
        rows = np.asarray(handle["vectors"][:], dtype=np.float64)
    rows = rows[np.isfinite(rows).all(axis=1)]
    rng = np.random.default_rng(0)

    def samples(n: int, count: int = 20) -> list[np.ndarray]:
        return [rows[np.sort(rng.choice(len(rows), n, replace=False))] for _ in range(count)]

    by_size, start_rows = {}, []
    with threadpool_limits(1):
        for n in SIZES:
            chosen = samples(n, 20 if n <= 1000 else 5)
            timed = interleaved(
                {"lapack": lapack_top, "lanczos": lambda m: components.top_singular_pair(m)[0]},
                chosen,
            )
            by_size[n] = {"lapack_ms": timed["lapack"], "lanczos_ms": timed["lanczos"]}
        baseline = samples(1000, 200)
        for centered in (False, True):
            matrices = [m - m.mean(axis=0) for m in baseline] if centered else baseline
            products: list[int] = []
            timed = interleaved(
                {
                    "defaults": functools.partial(arpack_defaults, products=products),
                    "package": lambda m: components.top_singular_pair(m)[0],
                },
                matrices,
            )
            reference = [lapack_top(m) for m in matrices]
            ours = [components.top_singular_pair(m)[0] for m in matrices]
            start_rows.append(
                {
                    "rows": "centered" if centered else "uncentered",
                    "arpack_defaults_ms": timed["defaults"],
                    "arpack_defaults_products": len(products) / (len(matrices) + 1),
                    "package_ms": timed["package"],
                    "largest_relative_difference": max(
                        abs(a - b) / b for a, b in zip(ours, reference, strict=True)
                    ),
                }
            )
    figures = {
        "shard": str(args.shard),
        "rows": len(rows),
        "by_rows": by_size,
        "lanczos_limit": components._LANCZOS_LIMIT,
        "baseline_samples": start_rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"lanczos-{args.machine}"
    Path(f"{stem}.json").write_text(json.dumps(figures, indent=1) + "\n")
    write_report(
        Path(f"{stem}.md"),
        [
            "# The top eigenpair behind MEV: LAPACK against Lanczos",
            f"Written by `bench/lanczos.py`; rows of `{args.shard.name}` ({len(rows):,} "
            "occurrences × 384, MiniLM), one thread, mean of 20 random samples (5 above "
            "1,000 rows), the two taking turns.",
            f"σ₁² of n sampled rows (the package switches to Lanczos above "
            f"{components._LANCZOS_LIMIT} rows and columns):\n\n"
            + "\n".join(
                [
                    "| rows | LAPACK on the Gram matrix | Lanczos (`top_singular_pair`) |",
                    "|---|---|---|",
                    *(
                        f"| {n:,} | {value['lapack_ms']:.2f} ms | {value['lanczos_ms']:.2f} ms |"
                        for n, value in by_size.items()
                    ),
                ]
            ),
            "A sampled baseline's 1,000 rows (200 samples, the two taking turns): ARPACK's "
            "defaults (seeded random start, 20 vectors between restarts) against the "
            "package's (the rows' mean as start where it is a direction, 6 vectors), and the "
            "package's largest difference from LAPACK:"
            "\n\n"
            + "\n".join(
                [
                    "| rows | ARPACK defaults | products with XᵀX | package | largest "
                    "relative difference |",
                    "|---|---|---|---|---|",
                    *(
                        f"| {row['rows']} | {row['arpack_defaults_ms']:.2f} ms "
                        f"| {row['arpack_defaults_products']:.1f} | {row['package_ms']:.2f} ms "
                        f"| {row['largest_relative_difference']:.1e} |"
                        for row in start_rows
                    ),
                ]
            ),
        ],
    )


if __name__ == "__main__":
    main()
