"""The workflow on a real SLURM cluster, through workflow/profiles/slurm and Snakemake's
SLURM executor plugin: a single-node cluster (tests/slurm/start-cluster.sh) runs the tiny
workflow, whose outputs must equal a local run's.

Needs root and Debian's ``slurm-wlm`` and ``munge``; skipped with the reason otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from test_workflow import _config, _write_corpus
from workflow_runs import SNAKEFILE, snakemake, write_config

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]
SCRIPTS = Path(__file__).resolve().parent / "slurm"
PROFILE = Path(__file__).resolve().parents[1] / "workflow" / "profiles" / "slurm"
# What a single test node lacks against the profile's site: an accounting database
# (so job states come from squeue, and there is no account), and the profile's partition.
SINGLE_NODE = [
    "--slurm-status-command",
    "squeue",
    "--slurm-no-account",
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--seconds-between-status-checks",
    "2",
    "--default-resources",
    "slurm_partition=debug",
    "mem_mb=2000",
    "runtime=30",
    "--max-threads",
    "2",
]


def why_slurm_cannot_run() -> str | None:
    """Why this machine cannot start the test cluster, or None when it can."""
    if os.geteuid() != 0:
        return "starting munged, slurmctld and slurmd needs root"
    missing = [name for name in ("munged", "slurmctld", "slurmd", "sbatch", "squeue")]
    missing = [name for name in missing if shutil.which(name) is None]
    if missing:
        return f"SLURM is not installed ({', '.join(missing)}): apt-get install slurm-wlm munge"
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "the SLURM executor plugin is not installed: pip install -e '.[slurm]'"
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running single-node cluster; yields the environment its clients need."""
    reason = why_slurm_cannot_run()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("slurm")
    started = subprocess.run(
        ["bash", str(SCRIPTS / "start-cluster.sh"), str(base)], capture_output=True, text=True
    )
    if started.returncode != 0:
        pytest.fail(f"the test cluster did not start:\n{started.stdout}\n{started.stderr}")
    yield {**os.environ, "SLURM_CONF": str(base / "etc" / "slurm.conf")}
    subprocess.run(["bash", str(SCRIPTS / "stop-cluster.sh"), str(base)], capture_output=True)


def test_the_workflow_through_the_slurm_profile_equals_a_local_run(
    cluster, tmp_path, tiny_bert_dir
):
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    # One layer: every rule the profile submits runs, in the fewest cluster jobs.
    config = _config(corpus, {"bert": {"source": str(tiny_bert_dir), "layers": [2]}})
    config["measures"]["transforms"] = ["none"]
    for name in ("local", "slurm"):
        (tmp_path / name).mkdir()
        write_config(tmp_path / name, config)
    # The table compared, and what it needs: the index, the extraction and the measures.
    table = "results/tables/measures.tsv"
    local = snakemake(tmp_path / "local", table)
    assert local.returncode == 0, local.stderr[-3000:]
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE)]
    command += ["--directory", str(tmp_path / "slurm"), "--workflow-profile", str(PROFILE)]
    on_slurm = subprocess.run(
        [*command, *SINGLE_NODE, table], capture_output=True, text=True, env=cluster, timeout=1200
    )
    assert on_slurm.returncode == 0, on_slurm.stderr[-3000:]
    assert re.search(r"rule extract_bert:.*?submitted with SLURM jobid", on_slurm.stderr, re.S)

    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "slurm" / table, sep="\t"),
        pd.read_csv(tmp_path / "local" / table, sep="\t"),
    )
    for shard in sorted((tmp_path / "local" / "results" / "embeddings" / "bert").glob("*.h5")):
        with (
            h5py.File(shard) as here,
            h5py.File(tmp_path / "slurm" / shard.relative_to(tmp_path / "local")) as there,
        ):
            np.testing.assert_array_equal(here["vectors"][...], there["vectors"][...])
