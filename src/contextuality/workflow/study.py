"""A study's config against what it will run on, while the workflow plans, before any job
removes an output: a sentence table or an occurrence index from another study, a GPU
asked for where there is none.

Snakemake reruns a job whose inputs are newer or whose settings changed, and otherwise
trusts the file it finds. A sentence table copied in from another study is newer than the
corpus it claims to come from, so the index, and everything after it, would be rebuilt
from it without a word. The sentence table records the hash of the ``corpus`` settings it
was made from and the checksum of its sentences, and the index the checksum of the
sentences it was built from: a table made from other settings that is not the one the
index was built from (or with no index yet) is another study's. A table whose settings
are this config's is a rebuild in progress, and one the index was built from is what the
results stand on (when the settings change, Snakemake rebuilds both). An occurrence
index newer than the sentence table at hand but built from other sentences is another
study's too: Snakemake would rerun every extraction from it (removing the shards first),
and each would refuse it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextuality.backends.base import resolved_device
from contextuality.errors import InputDataError
from contextuality.provenance import config_hash, read_json
from contextuality.tables import read_footer_provenance

SENTENCES = Path("results/corpus/sentences.parquet")
WORD_INDEX_SUMMARY = Path("results/corpus/index.json")


def check_sentence_table(config: dict[str, Any]) -> None:
    """Refuse (InputDataError, one line naming both) a sentence table at hand that another
    study made: made from other ``corpus`` settings than `config`'s and not the table the
    word index at hand was built from. Reads only the table's metadata."""
    if not SENTENCES.is_file():
        return
    recorded = read_footer_provenance(SENTENCES)
    expected = config_hash(config["corpus"])
    if recorded.get("config_hash") == expected:
        return
    index = read_json(WORD_INDEX_SUMMARY) if WORD_INDEX_SUMMARY.is_file() else {}
    if index and index.get("corpus_checksum") == recorded.get("corpus_checksum"):
        return
    built_from = (
        f"the index at hand was built from sentences {index.get('corpus_checksum')}"
        if index
        else "no index was built from it"
    )
    raise InputDataError(
        f"{SENTENCES}: {recorded.get('n_sentences', '?')} sentences of corpus "
        f"'{recorded.get('corpus', '?')}' made from other corpus settings "
        f"({recorded.get('config_hash')}) than this config's ({expected}), and {built_from}: "
        "another study's table; move it away (or delete it) and the run rebuilds it from "
        "this config's corpus"
    )


def check_indexes(sentences: Path = SENTENCES, corpus: Path = WORD_INDEX_SUMMARY.parent) -> None:
    """Refuse (InputDataError, one line naming both) an occurrence index under `corpus` (the
    word index, every model's subword index) built from other sentences than the table at
    `sentences` while not older than it: another study's index, which no rule rebuilds.
    An older one is rebuilt by Snakemake before anything reads it."""
    if not sentences.is_file():
        return
    table = read_footer_provenance(sentences).get("corpus_checksum")
    for summary in sorted(corpus.glob("**/index.json")):
        built_from = read_json(summary).get("corpus_checksum")
        if built_from == table or summary.stat().st_mtime < sentences.stat().st_mtime:
            continue
        raise InputDataError(
            f"{summary}: built from sentences {built_from}, not from the sentence table at "
            f"hand ({sentences}: {table}), though newer than it: another study's index; "
            "move its directory away (or delete it) and the run rebuilds it from this "
            "study's sentences"
        )


def check_devices(config: dict[str, Any]) -> None:
    """Refuse (ConfigError naming the key) a device asked for (``models.<name>.device``,
    ``geometry.alignment.device``: ``cuda:N``, ``mps``, ``xpu``, any kind torch knows)
    that torch does not see here (`backends.base.resolved_device`): none, too few, or a
    torch built without it. Only for a run whose jobs run here: a cluster's jobs run on
    other nodes, and each checks its own device as it starts."""
    asked = {
        f"models.{name}.device": (section or {}).get("device", "auto")
        for name, section in config["models"].items()
    }
    asked["geometry.alignment.device"] = (
        (config.get("geometry") or {}).get("alignment") or {}
    ).get("device", "auto")
    for setting, device in asked.items():
        resolved_device(str(device), setting)
