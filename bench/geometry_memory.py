"""Peak memory and time of the geometry jobs of finished runs against what they declare.

For each layer_dimension and layer_alignment job of each run directory given (a
workflow's working directory after its geometry jobs ran), the job's peak resident memory
and seconds from its Snakemake benchmark file (``benchmarks/geometry/<model>/<transform>/``
its ``dimension/layer_<L>.tsv`` and ``alignment.tsv``) beside what
`workflow.dimension_memory_needed` or `workflow.alignment_memory_needed` and the matching
``*_runtime_needed`` declare for it: from its layers' shards (bytes on disk), their rows,
the rows it sampled (``n_sampled_rows`` of its output's provenance; an alignment's
``resumed_seconds`` too, the work of a stopped run it read), the distinct words expected
among them (`workflow.expected_words` of the occurrence index's vocabulary: the word
baselines' columns) and the neighbour and
resampling settings (the schema's defaults unless given). tests/test_workflow.py holds
every declared value above its measured peak and seconds (with the resumed ones). Writes
``geometry-memory-<label>.{json,md}``; with ``--merge``, the records already there of jobs
not in the runs given are kept, what they declare computed again.

    python bench/geometry_memory.py RUN [RUN ...] --label cpu2 [--merge]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import h5py
import pandas as pd

from contextuality.configuration.schema import default
from contextuality.files.tables import read_parquet, read_provenance
from contextuality.geometry.search import SearchSettings
from contextuality.workflow.geometry_resources import (
    alignment_memory_needed,
    alignment_runtime_needed,
    dimension_memory_needed,
    dimension_runtime_needed,
    expected_words,
)

from arguments import input_directory, output_directory, positive_int
from workdir import write_report

RESULTS = Path(__file__).resolve().parent / "results"


def job_records(
    run: Path, neighbours: int, distances: int, resamples: int, baselines: int
) -> list[dict]:
    """A record per layer_dimension and layer_alignment job of `run` that has a benchmark
    file, its alignment with `resamples` permutations and draws and `baselines` word
    baselines, its searches at the schema's settings."""
    search = SearchSettings()
    records = []
    for benchmark in sorted((run / "benchmarks/geometry").glob("*/*/**/*.tsv")):
        parts = benchmark.relative_to(run / "benchmarks/geometry").parts
        if parts[0] in ("alignment_between_models", "alignment_sensitivity"):
            continue
        model, transform = parts[:2]
        results = run / "results/geometry" / model / transform
        resumed = 0.0
        if parts[2] == "alignment.tsv":
            job, layers = "alignment", "layer_*.h5"
            provenance = read_provenance(results / "alignment.parquet")
            sampled = provenance["n_sampled_rows"]
            resumed = provenance.get("resumed_seconds", 0.0)
        else:
            job, layers = "dimension", f"{benchmark.stem}.h5"
            output = results / "dimension" / f"{benchmark.stem}.json"
            sampled = json.loads(output.read_text())["layers"][0]["n_sampled_rows"]
        shards = sorted((run / "results/embeddings" / model).glob(layers))
        with h5py.File(shards[0], "r") as stored:
            rows, width = stored["vectors"].shape
        stored_bytes = sum(shard.stat().st_size for shard in shards)
        measured = pd.read_csv(benchmark, sep="\t").iloc[-1]
        record = {
            "run": run.name,
            "job": job,
            "model": model,
            "transform": transform,
            "layer": "every" if job == "alignment" else benchmark.stem.removeprefix("layer_"),
            "layers": len(shards),
            "rows": int(rows),
            "width": int(width),
            "sampled_rows": int(sampled),
            "sampled_words": _sampled_words(run, int(rows), int(sampled)),
            "stored_bytes": int(stored_bytes),
            "k": neighbours,
            "range_max": distances,
            "seconds": round(float(measured["s"]), 1),
            "resumed_seconds": resumed,
            "cores_busy": round(float(measured["cpu_time"]) / float(measured["s"]), 2),
            "peak_mib": round(float(measured["max_rss"]), 1),
            "declared_mb": None,
            "resamples": resamples,
            "baselines": baselines,
            "declared_minutes": None,
        }
        records.append(declared(record, search))
    return records


def declared(record: dict, search: SearchSettings) -> dict:
    """`record` with the memory (``declared_mb``) and minutes (``declared_minutes``) its
    job declares now, from its own fields, in their places."""
    shape = (record["stored_bytes"], record["rows"], record["sampled_rows"])
    corrected = record["transform"] != "none"
    rows = (record["sampled_rows"], record["width"])
    if record["job"] == "alignment":
        columns = record["baselines"] * record["sampled_words"]
        memory = alignment_memory_needed(*shape, record["layers"], record["k"], corrected, columns)
        resampled = (record["layers"], record["resamples"], record["baselines"])
        minutes = alignment_runtime_needed(*rows, *resampled, search)
    else:
        memory = dimension_memory_needed(*shape, record["range_max"], corrected)
        minutes = dimension_runtime_needed(*rows, search)
    return record | {"declared_mb": memory, "declared_minutes": minutes}


def merged(kept: list[dict], records: list[dict], search: SearchSettings) -> list[dict]:
    """The `kept` records, each replaced by the one of `records` of its job or else with
    what it declares computed again, then the `records` of jobs not kept before."""
    new = {_job(record): record for record in records}
    again = [new.pop(_job(old), None) or declared(_placed(old, records[0]), search) for old in kept]
    return again + list(new.values())


def _placed(old: dict, like: dict) -> dict:
    """`old` with the columns of `like` in their places, None where it has none (a
    column added since it was measured)."""
    return {name: old.get(name) for name in like} | {
        name: value for name, value in old.items() if name not in like
    }


def _sampled_words(run: Path, rows: int, sampled: int) -> int:
    """The distinct words expected among `sampled` occurrences of `run`'s occurrence index
    of `rows` (a shard's rows): `expected_words` of its vocabulary's counts."""
    for summary in sorted((run / "results/corpus").glob("**/index.json")):
        if json.loads(summary.read_text())["n_occurrences"] == rows:
            vocabulary = read_parquet(summary.with_name("vocab.parquet"))
            return expected_words(vocabulary["count"], sampled)
    raise SystemExit(f"{run}: no occurrence index of {rows} occurrences under results/corpus")


def _job(record: dict) -> tuple:
    return tuple(record[name] for name in ("run", "job", "model", "transform", "layer"))


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", type=input_directory, nargs="+")
    parser.add_argument("--k", type=positive_int, default=default("geometry", "alignment", "k"))
    parser.add_argument(
        "--range-max",
        type=positive_int,
        default=default("geometry", "intrinsic_dimension", "range_max"),
    )
    alignment = ("geometry", "alignment")
    parser.add_argument(
        "--resamples",
        type=positive_int,
        default=default(*alignment, "permutations") + default(*alignment, "bootstrap"),
    )
    parser.add_argument("--baselines", type=int, default=len(default(*alignment, "baselines")))
    parser.add_argument("--label", default="cpu2")
    parser.add_argument("--merge", action="store_true", help="keep the other jobs' records")
    parser.add_argument("--out", type=output_directory, default=RESULTS)
    return parser.parse_args(argv)


def main() -> None:
    arguments = parse_arguments()
    records = [
        record
        for run in arguments.runs
        for record in job_records(
            run.resolve(),
            arguments.k,
            arguments.range_max,
            arguments.resamples,
            arguments.baselines,
        )  # fmt: skip
    ]
    if not records:
        raise SystemExit("no layer_dimension or layer_alignment benchmark file in the runs given")
    arguments.out.mkdir(parents=True, exist_ok=True)
    path = arguments.out / f"geometry-memory-{arguments.label}"
    if arguments.merge and path.with_suffix(".json").exists():
        kept = json.loads(path.with_suffix(".json").read_text())
        records = merged(kept, records, SearchSettings())
    written(path, records)


def written(path: Path, records: list[dict]) -> None:
    """`records` written to `path` as JSON (``.json``) and as a table (``.md``)."""
    path.with_suffix(".json").write_text(json.dumps(records, indent=1) + "\n")
    columns = list(records[0])
    table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    table += ["| " + " | ".join(str(record[c]) for c in columns) + " |" for record in records]
    write_report(
        path.with_suffix(".md"),
        [
            "# Geometry jobs: peak memory and time against what they declare",
            "Each layer_dimension and layer_alignment job's peak resident memory "
            "(peak_mib, its Snakemake benchmark file's max_rss), seconds and the cores it kept "
            "busy on average (cores_busy, cpu_time over seconds; None where not recorded), "
            "the seconds an alignment's parts read from a stopped run of it took there "
            "(resumed_seconds, its output's provenance; None before it was recorded), "
            "and the memory "
            "and runtime the workflow asks a scheduler for (declared_mb, "
            "`workflow.dimension_memory_needed`, `workflow.alignment_memory_needed`; "
            "declared_minutes, `workflow.dimension_runtime_needed`, "
            "`workflow.alignment_runtime_needed`, with `resamples` permutations and draws and "
            "`baselines` word baselines, of `sampled_words` columns each, "
            "`workflow.expected_words`). "
            "`python bench/geometry_memory.py "
            + " ".join(dict.fromkeys(record["run"] for record in records))
            + "` (each run's working directory after its geometry jobs).",
            "\n".join(table),
        ],
    )


if __name__ == "__main__":
    main()
