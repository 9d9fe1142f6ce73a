"""The paper authors' published results, and a comparison of a run with them.

Ethayarajh's code (github.com/kawine/contextual, commit c10c992) publishes, for BERT,
GPT-2 and ELMo over STS 2012–2016, per-layer statistics and per-word tables. They are not
adjusted for anisotropy, and they come from the paper's estimators, not from its
definitions: SelfSim over ≤ 1,000 sampled pairs of a word's listed occurrences, IntraSim
and the cosine baseline from 1,000 sampled sentences with one word each, and, per word and
for the random words, scikit-learn's TruncatedSVD variance ratio (the variance-explained
files were written at the repository's first commit, 84d2f97, by ``TruncatedSVD`` and never
regenerated after the code switched to PCA). The comparison sets each published value
beside this run's value from the same estimator (``[paper]`` and ``[truncated_svd]``
measures), and correlates the per-word values over the words both runs index.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from contextuality.files.fetch import fetch_file, packaged_checksums
from contextuality.measures.ranks import spearman_correlation

COMMIT = "c10c992a20d09660bcbac1e84466a3004374317c"
URL = f"https://raw.githubusercontent.com/kawine/contextual/{COMMIT}/{{path}}"
MODELS = ("bert", "gpt2", "elmo")
FILES = ("embedding_space_stats.json", "self_similarity.csv", "variance_explained.csv")

# Published layer statistic → (our measure, its column in the summary table, what the
# published value estimated, what ours estimated).
LAYER_STATISTICS = {
    "mean cosine similarity between sentence and words": (
        "intrasim[paper]",
        "raw",
        "IntraSim, mean over 1,000 sentences drawn from the corpus list",
        "intrasim[paper] raw: the same, 1,000 sentences drawn with this run's seed",
    ),
    "mean cosine similarity across words": (
        "anisotropy[paper]",
        "raw",
        "mean cosine of 1,000 pairs of random words, one word from each of 1,000 sentences",
        "anisotropy[paper] raw: the expectation of those pairs given this run's 1,000 words",
    ),
    "variance explained for random words": (
        "mev[truncated_svd]",
        "baseline",
        "TruncatedSVD variance ratio of those 1,000 random words",
        "mev[truncated_svd] baseline: the same ratio of this run's 1,000 random words",
    ),
}
# Published per-word table → (our per-word column, what the published values estimated,
# what ours estimated).
WORD_TABLES = {
    "self_similarity.csv": (
        "selfsim_paper",
        "SelfSim over ≤ 1,000 sampled ordered pairs of a word's listed occurrences",
        "selfsim_paper: the mean over all those pairs (the sample's expectation)",
    ),
    "variance_explained.csv": (
        "mev_truncated_svd",
        "TruncatedSVD variance ratio of a word's listed occurrences",
        "mev_truncated_svd: the same ratio, exact",
    ),
}


def published_checksums() -> dict[str, str]:
    """SHA-256 of every published file, keyed ``<model>/<file>``."""
    return packaged_checksums("ethayarajh2019.sha256")


def fetch_published(relative: str, destination: str | Path, mirror: str | Path | None) -> None:
    """Copy ``<model>/<file>`` from a mirror directory or download it, verifying its SHA-256."""
    fetch_file(
        destination,
        URL.format(path=relative),
        None if mirror is None else Path(mirror) / relative,
        "with no network, set reference.mirror to a directory holding <model>/<file>",
        expected_sha256=published_checksums()[relative],
    )


def read_layer_statistics(path: str | Path) -> pd.DataFrame:
    """``embedding_space_stats.json`` as rows of (statistic, layer, published)."""
    statistics = json.loads(Path(path).read_text())
    return pd.DataFrame(
        [
            {"statistic": name, "layer": int(key.removeprefix("layer_")), "published": value}
            for name, layers in statistics.items()
            for key, value in layers.items()
        ]
    )


def read_word_table(path: str | Path) -> pd.DataFrame:
    """A published per-word table (word, layer_0, …) as rows of (word, layer, published)."""
    table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    long = table.melt(id_vars="word", var_name="layer", value_name="published")
    long["layer"] = long["layer"].str.removeprefix("layer_").astype(int)
    return long.dropna(subset=["published"])


def compare(
    published_dir: str | Path,
    summary: pd.DataFrame,
    words: dict[int, pd.DataFrame],
) -> pd.DataFrame:
    """Our values beside the published ones, per layer and statistic.

    published_dir: holds the three published files of one model.
    summary: our summary table rows of that model (transform ``none``).
    words: our per-word table of each layer.
    Only layers present in both are compared. Columns: layer, statistic,
    published_estimator and our_estimator (what each side computed), published, ours,
    difference, n_words (shared words, for per-word statistics), spearman (rank
    correlation over shared words).
    """
    published_dir = Path(published_dir)
    rows = []
    layer_statistics = read_layer_statistics(published_dir / "embedding_space_stats.json")
    ours = summary.set_index(["measure", "layer"])
    for item in layer_statistics.itertuples():
        if item.statistic not in LAYER_STATISTICS:
            continue
        measure, column, published_estimator, our_estimator = LAYER_STATISTICS[item.statistic]
        if (measure, item.layer) not in ours.index:
            continue  # a layer this run did not extract
        value = ours.loc[(measure, item.layer), column]
        rows.append(
            {
                "layer": item.layer,
                "statistic": item.statistic,
                "published_estimator": published_estimator,
                "our_estimator": our_estimator,
                "published": item.published,
                "ours": value,
            }
        )
    for file, (column, published_estimator, our_estimator) in WORD_TABLES.items():
        published = read_word_table(published_dir / file)
        for layer, group in published.groupby("layer"):
            if layer not in words:
                continue
            merged = group.merge(words[layer][["word", column]], on="word")
            enough = len(merged) >= 3
            rows.append(
                {
                    "layer": layer,
                    "statistic": file.removesuffix(".csv"),
                    "published_estimator": published_estimator + ", mean over shared words",
                    "our_estimator": our_estimator + ", mean over shared words",
                    "published": merged["published"].mean() if enough else np.nan,
                    "ours": merged[column].mean() if enough else np.nan,
                    "n_words": len(merged),
                    "spearman": spearman_correlation(merged["published"], merged[column]),
                }
            )
    table = pd.DataFrame(
        rows,
        columns=[
            "layer",
            "statistic",
            "published_estimator",
            "our_estimator",
            "published",
            "ours",
            "difference",
            "n_words",
            "spearman",
        ],
    )
    table["difference"] = table["ours"] - table["published"]
    return table.sort_values(["statistic", "layer"]).reset_index(drop=True)
