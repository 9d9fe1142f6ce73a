"""The k-NN search behind mutual k-NN and CKNNA, exact and from FAISS's indices,
against the number of rows, and one pair of layers aligned at the sizes studies now use.

`geometry.neighbours.cosine_neighbours` on n rows of d = 768 (BERT-base's width), k = 10,
each search in a process of its own (its peak resident memory is the process's): the
exact search (every row against every row, on each device given) and each index
(`geometry.index`: the HNSW graph and the inverted file, at the schema's settings, on the
CPU): seconds of its building, breadth calibration, search and recall measurement, the
breadth it settled on, the recall it measures, and mutual k-NN between its neighbours
and the exact ones where both ran. The growth
exponent of each search's time is the slope of log seconds against log n. Then, on the
CPU, the seconds of mutual k-NN and CKNNA between the rows and a noisy copy; with
``--align``, one pair of layers (the rows and the noisy copy) aligned as the geometry step
aligns two models (`alignment.alignment_between`: every measure with its permutation
null and bootstrap interval at the schema's defaults, the neighbours searched as
``--align-method`` says), time and peak memory.

The rows are embedding-like, not uniform: a common direction (anisotropy), 200 clusters
and two outlier dimensions, drawn from a seeded generator; or, with ``--shard``, a stored
layer's rows (after the main job, ``results/embeddings/minilm/layer_6.h5``), which need
more breadth for the same recall than the synthetic rows.

    python bench/neighbours.py --devices cpu --sizes 10000 30000 100000 --index-sizes 300000
    python bench/neighbours.py --devices cpu cuda --sizes 10000 100000 --out DIR
    python bench/neighbours.py --sizes --index-sizes --align 1000000 --align-method ivf
    python bench/neighbours.py --sizes 64188 --index-sizes \
        --shard results/embeddings/minilm/layer_6.h5

Writes ``neighbours-<label>.{json,md}`` into bench/results (or --out).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import platform
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from contextuality import __version__
from contextuality.configuration.random_streams import generator
from contextuality.geometry.index import index_neighbours
from contextuality.geometry.neighbours import Neighbours, cknna, cosine_neighbours, mutual_knn
from contextuality.geometry.search import SEARCH_METHODS, SearchSettings

from arguments import device as known_device
from arguments import input_file, nonnegative_int, output_directory, positive_int
from workdir import write_report

RESULTS = Path(__file__).resolve().parent / "results"
WIDTH = 768
K = 10
# The indices timed (`geometry.index`).
INDEX_METHODS = ("hnsw", "ivf")
# The largest n on which the CPU's exact neighbours are found to compare a GPU's with.
COMPARED_ROWS = 30_000


def embedding_like(n: int, width: int, seed: int) -> np.ndarray:
    """`n` rows (float32): a shared offset, 200 Gaussian clusters, two outlier dimensions."""
    random = np.random.default_rng(seed)
    centres = random.standard_normal((200, width), dtype=np.float32)
    rows = centres[random.integers(0, 200, n)]
    rows += random.standard_normal((n, width), dtype=np.float32)  # no float64 copy
    rows += 3.0 * random.standard_normal(width, dtype=np.float32)
    rows[:, :2] *= 20.0
    return rows


def noisy_copy(rows: np.ndarray, seed: int) -> np.ndarray:
    """`rows` with Gaussian noise of half their clusters' spread: another layer."""
    noise = np.random.default_rng(seed + 1).standard_normal(rows.shape, dtype=np.float32)
    noise *= 0.5
    noise += rows
    return noise


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _peak_rss_mib() -> float:
    """This process's peak resident memory (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def exact_search(rows: np.ndarray, device: str) -> tuple[Neighbours, dict]:
    """The exact neighbours of `rows` on `device`, and the search's seconds and peak
    memory (the GPU's allocation on CUDA)."""
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        cosine_neighbours(rows[:1000], K, device)  # kernels loaded before timing
    _synchronize(device)
    started = time.perf_counter()
    found = cosine_neighbours(rows, K, device)
    _synchronize(device)
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else None
    record = {"search_s": round(seconds, 3), "rows_per_s": round(len(rows) / seconds)}
    return found, record | {"peak_mib": None if peak is None else round(peak, 1)}


def index_search(rows: np.ndarray, seed: int, method: str) -> tuple[Neighbours, dict]:
    """An index's neighbours of `rows` (`method` hnsw or ivf on the CPU, at the schema's
    settings), the seconds of building it, calibrating its breadth, searching every row
    and measuring its recall, the breadth it settled on and that recall."""
    settings = SearchSettings(method=method)
    units = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    started = time.perf_counter()
    found = index_neighbours(units, K, settings, generator(seed, "neighbour_search"))
    seconds = time.perf_counter() - started
    record = {
        "lists": settings.lists_for(len(rows)) if method == "ivf" else None,
        "indexed": found.indexed,
        "share": round(found.share, 4),
        "breadth": found.breadth,
        "search_s": round(seconds, 3),
        "rows_per_s": round(len(rows) / seconds),
        "recall": round(found.recall, 5),
    }
    return Neighbours(found.indices, found.scores, found.recall), record


def rows_for(n: int, seed: int, shard: Path | None) -> np.ndarray:
    """`n` embedding-like rows, or the first `n` rows of a stored layer `shard` (an HDF5
    file with a ``vectors`` dataset, as the extraction writes it) as float32."""
    if shard is None:
        return embedding_like(n, WIDTH, seed)
    import h5py

    with h5py.File(shard, "r") as stored:
        vectors = stored["vectors"]
        if n > len(vectors):
            raise SystemExit(f"{shard}: {len(vectors):,} rows, fewer than the {n:,} asked for")
        return np.asarray(vectors[:n], dtype=np.float32)


def one_search(
    n: int, search: str, device: str, seed: int, kept: Path, shard: Path | None = None
) -> dict:
    """One record: `n` rows searched by `search` on `device` (in a process of its own),
    the neighbour measures between them and a noisy copy (the exact search on the CPU);
    the CPU's exact neighbours are kept in the folder `kept`, and a search of the same
    rows after them is compared with them."""
    rows = rows_for(n, seed, shard)
    record = {"n": n, "width": rows.shape[1], "k": K, "search": search, "device": device}
    if search == "exact":
        found, timed = exact_search(rows, device)
    else:
        found, timed = index_search(rows, seed, search)
    record |= timed
    exact_file = kept / f"exact-{n}.npy"
    if exact_file.is_file():
        exact = Neighbours(np.load(exact_file), np.zeros((n, K)))
        agreement = "mutual_knn_with_cpu" if search == "exact" else "mutual_knn_with_exact"
        record[agreement] = round(mutual_knn(exact, found), 6)
        if search == "exact":
            record["same_lists_as_cpu"] = round(same_lists(exact, found), 5)
    elif device == "cpu" and search == "exact":
        np.save(exact_file, found.indices)
    if device == "cpu" and search == "exact":
        other = cosine_neighbours(noisy_copy(rows, seed), K)
        for name, measure in (("mutual_knn", mutual_knn), ("cknna", cknna)):
            started = time.perf_counter()
            record[name] = round(measure(found, other), 4)
            record[f"{name}_s"] = round(time.perf_counter() - started, 3)
    return record | {"peak_rss_mib": round(_peak_rss_mib())}


def one_alignment(n: int, seed: int, shard: Path | None = None, method: str = "auto") -> dict:
    """One pair of layers of `n` rows aligned as two models are (`alignment_between` at
    the schema's settings, the neighbours searched by `method`: ``auto``, the index past
    its size), its seconds and peak memory."""
    from contextuality.geometry.alignment import (
        AlignmentSettings,
        SampledLayers,
        SampleRows,
        alignment_between,
    )

    rows = rows_for(n, seed, shard)
    left = ("rows", SampledLayers({0: rows}, {}))
    right = ("noisy", SampledLayers({0: noisy_copy(rows, seed)}, {}))
    sentences = np.arange(n) // 20  # sentences of 20 words, what a bootstrap draw takes
    sample = SampleRows(np.ones(n, dtype=bool), sentences, sampled=False)
    settings = AlignmentSettings(device="cpu", search=SearchSettings(method=method))
    started = time.perf_counter()
    table = alignment_between(left, right, sample, seed, 0.95, settings, occurrences=("all",))
    seconds = time.perf_counter() - started
    row = table.table.iloc[0]
    record = {"n": n, "width": rows.shape[1], "k": K, "search": "alignment", "device": "cpu"}
    record |= {"align_search": method, "align_s": round(seconds, 1)}
    record |= {"permutations": int(row["permutations"])}
    record |= {"bootstrap": int(row["bootstrap"]), "knn_recall": round(row["knn_recall"], 5)}
    for name in ("cka", "mutual_knn", "cknna"):
        record[name] = round(float(row[name]), 4)
        record[f"{name}_width"] = round(float(row[f"{name}_high"] - row[f"{name}_low"]), 4)
    return record | {"peak_rss_mib": round(_peak_rss_mib())}


def same_lists(left, right) -> float:
    """The share of rows whose k neighbours are the same, in the same order."""
    return float(np.mean(np.all(left.indices == right.indices, axis=1)))


def _log_progress() -> None:
    """The library's progress lines (each index's breadth and recall) on the console."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("faiss").setLevel(logging.WARNING)


def _in_own_process(function, *arguments) -> dict:
    """`function(*arguments)` in a fresh process, so that its peak memory is its own."""
    with multiprocessing.get_context("spawn").Pool(1, initializer=_log_progress) as pool:
        record = pool.apply(function, arguments)
    print(json.dumps(record), flush=True)
    return record


def run(arguments: argparse.Namespace, kept: Path) -> list[dict]:
    """Every record: the exact search at ``--sizes`` on each device (the CPU above
    COMPARED_ROWS only where it is the one device), the index at ``--sizes`` and
    ``--index-sizes``, and the alignment at ``--align``; the CPU's exact neighbours kept in
    `kept` to compare the other searches with."""
    records, devices, seed, shard = [], arguments.devices, arguments.seed, arguments.shard
    for n in arguments.sizes:
        for device in sorted(devices, key=lambda name: name != "cpu"):
            if device == "cpu" and n > COMPARED_ROWS and len(devices) > 1:
                continue
            record = _in_own_process(one_search, n, "exact", device, seed, kept, shard)
            records.append(record)
    for n in [*arguments.sizes, *arguments.index_sizes]:
        for method in INDEX_METHODS:
            records.append(_in_own_process(one_search, n, method, "cpu", seed, kept, shard))
    for n in arguments.align:
        method = arguments.align_method
        records.append(_in_own_process(one_alignment, n, seed, shard, method))
    return records


def growth(records: list[dict]) -> list[dict]:
    """For each search and device timed at two sizes or more, the exponent b of
    seconds ≈ a · n^b (least squares on the logarithms)."""
    found = []
    for key in sorted({(r["search"], r["device"]) for r in records if "search_s" in r}):
        timed = [r for r in records if (r["search"], r["device"]) == key and "search_s" in r]
        if len(timed) < 2:
            continue
        sizes = np.log([r["n"] for r in timed])
        seconds = np.log([r["search_s"] for r in timed])
        slope = float(np.polyfit(sizes, seconds, 1)[0])
        found.append({"search": key[0], "device": key[1], "exponent": round(slope, 2)})
        found[-1] |= {"smallest_n": min(r["n"] for r in timed)}
        found[-1] |= {"largest_n": max(r["n"] for r in timed)}
    return found


COLUMNS = [
    "n",
    "search",
    "device",
    "lists",
    "indexed",
    "breadth",
    "search_s",
    "rows_per_s",
    "recall",
    "mutual_knn_with_exact",
    "peak_mib",
    "peak_rss_mib",
    "mutual_knn",
    "mutual_knn_s",
    "cknna",
    "cknna_s",
    "same_lists_as_cpu",
    "mutual_knn_with_cpu",
    "align_search",
    "align_s",
    "knn_recall",
    "cka",
    "cka_width",
    "mutual_knn_width",
    "cknna_width",
]


def _table(records: list[dict], columns: list[str]) -> str:
    shown = [column for column in columns if any(column in record for record in records)]
    lines = ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    for record in records:
        lines.append("| " + " | ".join(str(record.get(c, "")) for c in shown) + " |")
    return "\n".join(lines)


def markdown(
    records: list[dict], exponents: list[dict], label: str, seed: int, shard: Path | None
) -> list[str]:
    rows = (
        f"d = {WIDTH}, embedding-like rows (seed {seed})"
        if shard is None
        else (f"the rows of the stored layer {shard.name} (d = {records[0]['width']})")
    )
    return [
        f"# Cosine k-NN search, exact and indexed ({label})",
        f"contextuality {__version__}, torch {torch.__version__}, {platform.machine()}, "
        f"{torch.get_num_threads()} CPU threads"
        + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else "")
        + f"; k = {K}, {rows}, each search in a process of its own (peak_rss_mib its "
        "peak resident memory, rows included). An index's search_s is building it, "
        "indexing its distinct rows (indexed), calibrating its breadth (the graph's "
        "candidates or the inverted file's probes, "
        "doubled until the recall on calibration queries reaches the target), searching "
        "every row and measuring its recall on other queries; "
        "mutual_knn_with_exact compares its neighbours with the exact ones. mutual k-NN "
        "and CKNNA are timed on the CPU (sparse), between the rows and a "
        "copy with noise added; same_lists_as_cpu and mutual_knn_with_cpu compare a GPU's "
        "search with the CPU's. align_s: one pair of layers aligned as two models are, "
        "every measure with its null and interval.",
        _table(records, COLUMNS),
    ] + (
        [
            "Growth of the search's seconds with n (seconds ≈ a · n^exponent):",
            _table(exponents, ["search", "device", "exponent", "smallest_n", "largest_n"]),
        ]
        if exponents
        else []
    )


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=positive_int, nargs="*", default=[10_000, 30_000, 100_000])
    parser.add_argument("--index-sizes", type=positive_int, nargs="*", default=[300_000])
    parser.add_argument("--align", type=positive_int, nargs="*", default=[])
    parser.add_argument("--align-method", choices=SEARCH_METHODS, default="auto")
    parser.add_argument("--devices", type=known_device, nargs="+", default=["cpu"])
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument("--shard", type=input_file, default=None, help="a stored layer's rows")
    parser.add_argument("--label", default=None)
    parser.add_argument("--out", type=output_directory, default=RESULTS)
    return parser.parse_args(argv)


def main() -> None:
    arguments = parse_arguments()
    label = arguments.label or "-".join(arguments.devices)
    with tempfile.TemporaryDirectory() as kept:
        records = run(arguments, Path(kept))
    exponents = growth(records)
    arguments.out.mkdir(parents=True, exist_ok=True)
    (arguments.out / f"neighbours-{label}.json").write_text(json.dumps(records, indent=1) + "\n")
    if exponents:
        growth_file = arguments.out / f"neighbours-{label}-growth.json"
        growth_file.write_text(json.dumps(exponents, indent=1) + "\n")
    report = markdown(records, exponents, label, arguments.seed, arguments.shard)
    write_report(arguments.out / f"neighbours-{label}.md", report)


if __name__ == "__main__":
    main()
