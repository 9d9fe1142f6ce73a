"""What a distance costs in each index against the exact search, on a stored layer by
distance: where `auto` should give an index up (`geometry.search.SCAN_LIMITS`).

On a layer's distinct rows (as the intrinsic dimension searches them), `--queries` seeded
rows each search their k nearest (k = `range_max` + `REPEAT_SPARE`, the dimension's):
FAISS's flat index (the exact search's float32 products,
`geometry.exact_distance`), then the inverted file at each of `--probes` and the HNSW
graph at each of `--breadths`, both at the schema's settings and built as the workflow
builds them (`index.built_index`). For each: seconds a query,
the share of the rows FAISS counted it compared a query with, the recall against the
flat search, and its cost per distance against the flat search's; the share at which an
index costs what the exact search does is the flat search's seconds a query over the
index's seconds per share.

    python bench/scan_rates.py results/embeddings/minilm/layer_6.h5 --label cpu2-minilm-layer6

Writes ``scan-rates-<label>.{json,md}`` into bench/results (or --out).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from contextuality import __version__
from contextuality.geometry.dimension import REPEAT_SPARE, DimensionSettings
from contextuality.geometry.index import built_index, distinct_rows
from contextuality.geometry.search import SearchSettings, faiss_module
from contextuality.storage.hdf5 import reading

from arguments import input_file, output_directory, positive_int
from workdir import write_report

RESULTS = Path(__file__).resolve().parent / "results"


def _timed(index, queries: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """The neighbours `index` finds for `queries`, and seconds a query."""
    started = time.perf_counter()
    _, found = index.search(queries, k)
    return found, (time.perf_counter() - started) / len(queries)


def _recall(found: np.ndarray, exact: np.ndarray) -> float:
    """The share of the flat search's neighbours an index found, averaged over queries."""
    return float(np.mean([np.isin(one, two).mean() for one, two in zip(found, exact, strict=True)]))


def measure(rows: np.ndarray, queries: int, probes, graph_breadths, seed: int) -> dict:
    """The shape of the distinct finite `rows` (float32), k, the queries and the inverted
    file's cells, and every search's record with them (``records``)."""
    faiss = faiss_module()
    settings = SearchSettings()
    k = DimensionSettings().range_max + REPEAT_SPARE  # the dimension's search
    random = np.random.default_rng(seed)
    asked = rows[np.sort(random.choice(len(rows), queries, replace=False))]
    flat = faiss.IndexFlatL2(rows.shape[1])
    flat.add(rows)
    exact, flat_seconds = _timed(flat, asked, k)
    del flat
    records = [{"index": "flat", "breadth": None, "s_per_query": flat_seconds, "share": 1.0,
                "recall": 1.0, "cost_per_distance": 1.0, "even_share": 1.0}]  # fmt: skip
    lists = settings.lists_for(len(rows))
    for method, breadths in (("ivf", probes), ("hnsw", graph_breadths)):
        built = built_index(faiss, rows, method, settings, random, True, "cpu")
        for breadth in breadths:
            built.set_breadth(breadth)
            built.count_from_zero()
            found, seconds = _timed(built.index, asked, k)
            share = built.share_compared(breadth, len(asked))
            relative = seconds / share / flat_seconds
            records.append(
                {
                    "index": method,
                    "breadth": breadth,
                    "s_per_query": seconds,
                    "share": share,
                    "recall": _recall(found, exact),
                    "cost_per_distance": relative,
                    "even_share": 1.0 / relative,
                }
            )
            print(json.dumps(records[-1]), flush=True)
        del built  # before the next is built
    shape = {"rows": len(rows), "width": rows.shape[1], "k": k, "queries": queries,
             "lists": lists}  # fmt: skip
    return shape | {"records": [shape | record for record in records]}


def markdown(shape: dict, label: str, shard: Path) -> list[str]:
    """The report: `shape` (`measure`'s result) and a row per search."""
    head = (
        f"# Scan rates: an index's cost per distance against the exact search ({label})\n\n"
        f"`{shard}`: {shape['rows']:,} distinct rows × {shape['width']}, k = {shape['k']}, "
        f"{shape['queries']:,} queries, an inverted file of {shape['lists']:,} cells; "
        f"contextuality {__version__}. share: the rows FAISS counted a query compared with; "
        "even_share: the share at which the index costs what the exact search does. "
        "`python bench/scan_rates.py SHARD`."
    )
    columns = ("index", "breadth", "s_per_query", "share", "recall", "cost_per_distance",
               "even_share")  # fmt: skip
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in shape["records"]:
        cells = ["" if row[name] is None else row[name] for name in columns]
        lines.append("| " + " | ".join(f"{c:.4g}" if isinstance(c, float) else str(c)
                                       for c in cells) + " |")  # fmt: skip
    return [head, "\n".join(lines)]


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shard", type=input_file, help="a stored layer (HDF5 shard)")
    parser.add_argument("--queries", type=positive_int, default=10_000)
    parser.add_argument("--probes", type=positive_int, nargs="*", default=[16, 64, 256])
    parser.add_argument("--breadths", type=positive_int, nargs="*", default=[256, 1024, 2048])
    parser.add_argument("--seed", type=positive_int, default=1)
    parser.add_argument("--label", required=True)
    parser.add_argument("--out", type=output_directory, default=RESULTS)
    return parser.parse_args(argv)


def main() -> None:
    arguments = parse_arguments()
    with reading(arguments.shard) as stored:
        vectors = stored["vectors"][:]
    vectors = vectors[np.isfinite(vectors).all(axis=1)]
    distinct = distinct_rows(vectors)
    rows = np.ascontiguousarray(vectors if distinct is None else distinct.rows, dtype=np.float32)
    result = measure(rows, arguments.queries, arguments.probes, arguments.breadths,
                     arguments.seed)  # fmt: skip
    arguments.out.mkdir(parents=True, exist_ok=True)
    stem = arguments.out / f"scan-rates-{arguments.label}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    write_report(stem.with_suffix(".md"), markdown(result, arguments.label, arguments.shard))


if __name__ == "__main__":
    main()
