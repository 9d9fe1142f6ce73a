"""The exact k-NN search behind mutual k-NN and CKNNA, at the sizes alignment runs on.

`geometry.neighbours.cosine_neighbours` on n = 10^4 … 10^5 rows of d = 768 (BERT-base's
width), k = 10, on each device given: seconds of the search, rows/s, and (CUDA) the peak
memory torch allocated; then, on the CPU, the seconds of mutual k-NN and CKNNA between
the rows and a perturbed copy of them (sparse, from the neighbours). Where a GPU runs, its
neighbours are compared with the CPU's on the same rows: the share of rows whose k
neighbours are the same list, and mutual k-NN between the two searches (1 where float32
rounding on the two devices breaks no near-tie differently).

The rows are embedding-like, not uniform: a common direction (anisotropy), 200 clusters
and two outlier dimensions, drawn from a seeded generator.

    python bench/neighbours.py --devices cpu --sizes 10000 30000 100000
    python bench/neighbours.py --devices cpu cuda --sizes 10000 100000 --out DIR

Writes ``neighbours-<label>.{json,md}`` into bench/results (or --out).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from contextuality import __version__
from contextuality.geometry.neighbours import cknna, cosine_neighbours, mutual_knn

from arguments import device as known_device
from arguments import nonnegative_int, output_directory, positive_int
from workdir import write_report

RESULTS = Path(__file__).resolve().parent / "results"
WIDTH = 768
K = 10
# The largest n on which the CPU's neighbours are found to compare a GPU's with.
COMPARED_ROWS = 30_000


def embedding_like(n: int, width: int, seed: int) -> np.ndarray:
    """`n` rows (float32): a shared offset, 200 Gaussian clusters, two outlier dimensions."""
    random = np.random.default_rng(seed)
    centres = random.normal(size=(200, width)).astype(np.float32)
    rows = centres[random.integers(0, 200, n)] + random.normal(size=(n, width)).astype(np.float32)
    rows += 3.0 * random.normal(size=width).astype(np.float32)
    rows[:, :2] *= 20.0
    return rows


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed_search(rows: np.ndarray, device: str):
    """The neighbours of `rows` on `device`, and the search's seconds and peak memory."""
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        cosine_neighbours(rows[:1000], K, device)  # kernels loaded before timing
    _synchronize(device)
    started = time.perf_counter()
    found = cosine_neighbours(rows, K, device)
    _synchronize(device)
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else None
    return found, seconds, peak


def same_lists(left, right) -> float:
    """The share of rows whose k neighbours are the same, in the same order."""
    return float(np.mean(np.all(left.indices == right.indices, axis=1)))


def run(sizes: list[int], devices: list[str], seed: int) -> list[dict]:
    """One record per size and device searched; the CPU searches sizes above
    COMPARED_ROWS only when it is the one device."""
    records = []
    for n in sizes:
        rows = embedding_like(n, WIDTH, seed)
        searched = {}
        for device in devices:
            if device == "cpu" and n > COMPARED_ROWS and len(devices) > 1:
                continue
            found, seconds, peak = timed_search(rows, device)
            record = {"n": n, "width": WIDTH, "k": K, "device": device}
            record |= {"search_s": round(seconds, 3), "rows_per_s": round(n / seconds)}
            record["peak_mib"] = None if peak is None else round(peak, 1)
            if "cpu" in searched:
                record["same_lists_as_cpu"] = round(same_lists(searched["cpu"], found), 5)
                record["mutual_knn_with_cpu"] = round(mutual_knn(searched["cpu"], found), 6)
            if not searched:
                record |= timed_alignment(rows, found, device, seed)
            searched[device] = found
            records.append(record)
            print(json.dumps(record), flush=True)
    return records


def timed_alignment(rows: np.ndarray, found, device: str, seed: int) -> dict:
    """Mutual k-NN and CKNNA between `rows` and a noisy copy, and their seconds (CPU)."""
    noise = np.random.default_rng(seed + 1).normal(size=rows.shape).astype(np.float32)
    other = cosine_neighbours(rows + 0.5 * noise, K, device)
    record = {}
    for name, measure in (("mutual_knn", mutual_knn), ("cknna", cknna)):
        started = time.perf_counter()
        record[name] = round(measure(found, other), 4)
        record[f"{name}_s"] = round(time.perf_counter() - started, 3)
    return record


def markdown(records: list[dict], label: str, seed: int) -> list[str]:
    columns = [
        "n",
        "device",
        "search_s",
        "rows_per_s",
        "peak_mib",
        "mutual_knn",
        "mutual_knn_s",
        "cknna",
        "cknna_s",
        "same_lists_as_cpu",
        "mutual_knn_with_cpu",
    ]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for record in records:
        lines.append("| " + " | ".join(str(record.get(c, "")) for c in columns) + " |")
    return [
        f"# Exact cosine k-NN search ({label})",
        f"contextuality {__version__}, torch {torch.__version__}, {platform.machine()}, "
        f"{torch.get_num_threads()} CPU threads"
        + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else "")
        + f"; d = {WIDTH}, k = {K}, embedding-like rows (seed {seed}). mutual k-NN and CKNNA "
        "are timed on the CPU (sparse), between the rows and a copy with noise added; "
        "same_lists_as_cpu and mutual_knn_with_cpu compare a GPU's search with the CPU's.",
        "\n".join(lines),
    ]


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--devices", type=known_device, nargs="+", default=["cpu"])
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument("--label", default=None)
    parser.add_argument("--out", type=output_directory, default=RESULTS)
    return parser.parse_args(argv)


def main() -> None:
    arguments = parse_arguments()
    label = arguments.label or "-".join(arguments.devices)
    records = run(arguments.sizes, arguments.devices, arguments.seed)
    arguments.out.mkdir(parents=True, exist_ok=True)
    (arguments.out / f"neighbours-{label}.json").write_text(json.dumps(records, indent=1) + "\n")
    write_report(arguments.out / f"neighbours-{label}.md", markdown(records, label, arguments.seed))


if __name__ == "__main__":
    main()
