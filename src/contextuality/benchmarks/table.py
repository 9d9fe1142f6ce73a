"""Table 1: every static embedding's scores in one table, beside the paper's own rows."""

from __future__ import annotations

import io
from importlib import resources

import pandas as pd

# The columns of the table, in order.
TABLE_COLUMNS = (
    "source",
    "protocol",
    "model",
    "transform",
    "method",
    "layer",
    "benchmark",
    "metric",
    "value",
    "coverage",
    "n",
)


def shared_vocabulary(vocab: pd.DataFrame) -> set[str]:
    """The paper protocol's common vocabulary: the lowercased indexed words of a word
    index's vocabulary (the paper used its ELMo index: spaCy words, punctuation dropped)."""
    return {word.lower() for word in vocab.loc[vocab["indexed"], "word"]}


def quoted_table1() -> pd.DataFrame:
    """The paper's own Table 1 rows (``contextuality/data/paper_table1.tsv``), in the
    layout of the score tables."""
    text = resources.files("contextuality").joinpath("data/paper_table1.tsv").read_text()
    quoted = pd.read_csv(io.StringIO(text), sep="\t", comment="#", dtype={"layer": "Int64"})
    long = quoted.melt(id_vars=["model", "layer"], var_name="benchmark", value_name="value")
    return long.assign(
        method="pc1", transform="none", source="quoted: Ethayarajh (2019) Table 1", protocol="paper"
    )


def word_benchmarks_table(scores: list[pd.DataFrame]) -> pd.DataFrame:
    """Score tables (one per embedding and protocol) and the paper's quoted rows in one
    table of `TABLE_COLUMNS`."""
    table = pd.concat([*scores, quoted_table1()], ignore_index=True)
    return table.reindex(columns=list(TABLE_COLUMNS))
