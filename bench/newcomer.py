"""What a newcomer's two README commands cost on this machine, measured.

In a fresh virtual environment and a fresh copy of the working tree (outputs of earlier
runs left behind), times the installation, the embedded default run (`snakemake --cores
2`) with its corpus and extraction figures, and the test suite, once with the data mirror
``../shared/data`` beside the copy and once without it (the tests that need it skip).
Writes ``bench/results/newcomer-<machine>.{json,md}``.

    python bench/newcomer.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arguments import output_directory
from workdir import benchmark_seconds

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """Run `command`, fail loudly, and return its wall time in seconds and its output."""
    started = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return seconds, result.stdout + result.stderr


def copy_tree(destination: Path) -> Path:
    """The working tree's tracked and unignored files, as a fresh checkout has them."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def test_counts(output: str) -> dict[str, int]:
    """Passed and skipped test counts from pytest's last line."""
    return {
        kind: int(match[1]) if (match := re.search(rf"(\d+) {kind}", output)) else 0
        for kind in ("passed", "skipped", "failed")
    }


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument("--machine", default="cpu2", help="name of the results file")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        checkout = copy_tree(root / "with-data" / "main")
        os.symlink(SHARED, root / "with-data" / "shared")
        bare = copy_tree(root / "without-data" / "main")
        environment = root / "venv"
        env = {**os.environ, "PATH": f"{environment / 'bin'}:{os.environ['PATH']}"}
        env.pop("PYTHONPATH", None)
        subprocess.run([sys.executable, "-m", "venv", str(environment)], check=True)
        python = str(environment / "bin" / "python")
        install, _ = timed([python, "-m", "pip", "install", "-q", "-e", ".[test]"], checkout, env)
        run, _ = timed([python, "-m", "snakemake", "--cores", "2"], checkout, env)
        meta = json.loads((checkout / "results/embeddings/minilm/meta.json").read_text())
        index = json.loads((checkout / "results/corpus/index.json").read_text())
        measures = [
            benchmark_seconds(path) for path in (checkout / "benchmarks/measures").rglob("*.tsv")
        ]
        tests, output = timed(
            [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], checkout, env
        )
        with_data = test_counts(output)
        tests_bare, output = timed(
            [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], bare, env
        )
        without_data = test_counts(output)
    figures = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "install_seconds": round(install),
        "default_run_seconds": round(run),
        "corpus": {
            key: index[key]
            for key in ("n_sentences", "n_occurrences", "n_words", "n_indexed_words")
        },
        "extraction_seconds": round(meta["seconds"], 1),
        "extraction_tokens_per_second": meta["tokens_per_second"],
        "measure_job_seconds": [round(value, 1) for value in sorted(measures)],
        "tests_seconds": round(tests),
        "tests_with_data": with_data,
        "tests_without_data_seconds": round(tests_bare),
        "tests_without_data": without_data,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"newcomer-{args.machine}"
    Path(f"{stem}.json").write_text(json.dumps(figures, indent=1) + "\n")
    lines = [
        "# A newcomer's two commands, timed",
        "",
        f"Written by `bench/newcomer.py` ({time.strftime('%Y-%m-%d')}); {figures['machine']}.",
        "",
        "| step | measured |",
        "|---|---|",
        f"| `pip install -e '.[test]'` in a fresh venv | {figures['install_seconds']} s |",
        f"| `snakemake --cores 2` (embedded default) | {figures['default_run_seconds']} s |",
        f"| corpus | {index['n_sentences']:,} sentences, {index['n_occurrences']:,} "
        f"word occurrences, {index['n_indexed_words']:,} indexed words |",
        f"| extraction (all 7 layers) | {figures['extraction_seconds']} s at "
        f"{figures['extraction_tokens_per_second']:,.0f} subword tokens/s |",
        f"| measure jobs, one a layer and transform | {min(measures):.1f}–"
        f"{max(measures):.1f} s each |",
        f"| `python -m pytest`, data mirror beside | {figures['tests_seconds']} s: "
        f"{with_data['passed']} passed, {with_data['skipped']} skipped |",
        f"| `python -m pytest`, no data mirror | {figures['tests_without_data_seconds']} s: "
        f"{without_data['passed']} passed, {without_data['skipped']} skipped |",
    ]
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
