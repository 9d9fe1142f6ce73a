"""Word-embedding benchmarks of the paper's Table 1: readers, scorers and a registry.

Ethayarajh (2019, Table 1) scores static word embeddings on nine benchmarks with the
word-embeddings-benchmarks package (``web``, Jastrzebski et al. 2017). Two protocols are
offered (`PROTOCOLS`). Both lowercase the benchmark words, give an out-of-vocabulary (OOV)
word a mean vector, and report with every `Score` its coverage: the share of items (pairs,
questions, words) whose words are all in the vocabulary, so that a score over a small
vocabulary is never read as a score over the whole benchmark.

``"standard"`` scores the vectors as given, normalizing each vector where a benchmark
compares directions; the OOV stand-in is the mean of the raw vectors.

- Similarity (SimLex-999, MEN, WordSim-353, Stanford RW): Spearman ρ between the cosine of
  the two words' vectors and the human score.
- Analogy (Google, MSR): accuracy of 3CosAdd, argmax over the vocabulary of
  cos(d, b − a + c), the question words a, b, c excluded from the candidates; 3CosMul
  (Levy & Goldberg 2014) on request. The OOV stand-in is unit-normalized like every vector.
- Relational similarity (SemEval-2012 Task 2): per subcategory, Spearman ρ between the
  model's rating of each pair and the gold rating, averaged over the 69 Testing
  subcategories, which is the official evaluation (the organisers' ``score_scale.pl``). The
  task leaves the rating to the system; ours rates a pair X:Y by the mean cosine of its
  offset Y − X with the offsets of the subcategory's paradigm pairs (those shown to the
  annotators). ``relation="dot"`` gives instead the ``web`` rating, the dot product of
  Y − X with the mean paradigm offset.
- Categorization (BLESS, AP): purity of a KMeans clustering (scikit-learn, seeded,
  ``n_init=10``) of the unit-normalized word vectors into as many clusters as there are
  gold categories. One fixed method, so no choice is made after seeing the result.

``"paper"`` reproduces what the paper's authors ran. Their ``visualize.evaluate()`` kept
only the entries of each embedding file whose lowercased word is in one shared vocabulary
(the lowercased words of the ELMo occurrence index), so that every embedding, GloVe too, is
scored on the same words; ``web``'s ``load_embedding`` then lowercased the words (the first
entry of a lowercase form wins) and scaled every vector to unit norm (`paper_vectors`). The
OOV stand-in is the mean of those unit vectors, not normalized again, so it is shorter than
a word's vector; this changes analogy answers and clusterings wherever a benchmark word is
OOV.

- Similarity: as standard, on the unit vectors and their mean.
- Analogy: argmax over the vocabulary of d · (b − a + c), which ranks candidates as the
  cosine does since they are unit, with the stand-in entering as it is; 3CosMul likewise.
- Relational similarity: the ``web`` rating (``relation="dot"``) averaged over all 79
  subcategories, the 10 Training ones included, as ``evaluate_on_semeval_2012_2`` does.
- Categorization: ``evaluate_categorization(method="all")``: the words in a seeded random
  order, then the best purity over Ward, average- and complete-linkage agglomerative
  clusterings (cosine and Euclidean) and the seeded KMeans.
"""

from contextuality.benchmarks.readers import (
    SEMEVAL2012_PARADIGMS,
    SEMEVAL2012_SUBCATEGORIES,
    SEMEVAL2012_TESTING,
    SEMEVAL2012_TRAINING,
    read_categorization,
    read_google_analogies,
    read_msr_analogies,
    read_semeval2012,
    read_semeval2012_gold,
    read_semeval2012_paradigms,
    read_similarity,
    semeval2012_gold_file,
)
from contextuality.benchmarks.registry import (
    BENCHMARKS,
    BenchmarkSpec,
    ScoringSettings,
    score_benchmark,
    score_benchmarks,
)
from contextuality.benchmarks.scorers import (
    COSMUL_EPSILON,
    Score,
    cluster_purity,
    score_analogy,
    score_categorization,
    score_semeval2012,
    score_similarity,
    solve_analogies,
)
from contextuality.benchmarks.sources import fetch_benchmark_file, known_checksums, source_url
from contextuality.benchmarks.table import (
    TABLE_COLUMNS,
    quoted_table1,
    shared_vocabulary,
    word_benchmarks_table,
)
from contextuality.benchmarks.vectors import (
    OOV_POLICIES,
    PROTOCOLS,
    OovPolicy,
    ScoringProtocol,
    WordVectors,
    paper_vectors,
)

__all__ = [
    "BENCHMARKS",
    "COSMUL_EPSILON",
    "OOV_POLICIES",
    "PROTOCOLS",
    "SEMEVAL2012_PARADIGMS",
    "SEMEVAL2012_SUBCATEGORIES",
    "SEMEVAL2012_TESTING",
    "SEMEVAL2012_TRAINING",
    "TABLE_COLUMNS",
    "BenchmarkSpec",
    "OovPolicy",
    "Score",
    "ScoringProtocol",
    "ScoringSettings",
    "WordVectors",
    "cluster_purity",
    "fetch_benchmark_file",
    "known_checksums",
    "paper_vectors",
    "quoted_table1",
    "read_categorization",
    "read_google_analogies",
    "read_msr_analogies",
    "read_semeval2012",
    "read_semeval2012_gold",
    "read_semeval2012_paradigms",
    "read_similarity",
    "score_analogy",
    "score_benchmark",
    "score_benchmarks",
    "score_categorization",
    "score_semeval2012",
    "score_similarity",
    "semeval2012_gold_file",
    "shared_vocabulary",
    "solve_analogies",
    "source_url",
    "word_benchmarks_table",
]
