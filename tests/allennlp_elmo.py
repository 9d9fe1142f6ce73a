"""Run AllenNLP's own ELMo biLM (``allennlp.modules.elmo._ElmoBiLm``) on word lists and save
its activations, for the comparison in tests/test_elmo.py.

AllenNLP cannot share this package's environment (it needs transformers < 5 and
huggingface-hub < 1), so this script runs in an environment of its own, named by the
CONTEXTUALITY_ALLENNLP_PYTHON variable:

    python allennlp_elmo.py OPTIONS WEIGHTS SENTENCES_JSON OUTPUT_NPZ

SENTENCES_JSON is a list of word lists. OUTPUT_NPZ gets ``sentence_<i>``: the
(n_layers + 1, n_words, 2p) activations of sentence i, begin and end of sentence dropped,
all sentences in one batch from the zero states of a fresh biLM; and ``second_call_<i>``:
the same batch run again, from the states the first call left (AllenNLP's ELMo is
stateful, as the paper's ElmoEmbedder was).
"""

import json
import sys

import numpy as np
import torch
from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids


def main(options: str, weights: str, sentences_path: str, output: str) -> None:
    with open(sentences_path) as handle:
        sentences = json.load(handle)
    bilm = _ElmoBiLm(options, weights, requires_grad=False).eval()
    ids = batch_to_ids(sentences)
    arrays = {}
    for call in ("sentence", "second_call"):
        with torch.no_grad():
            activations = torch.stack(bilm(ids)["activations"]).numpy()
        for row, words in enumerate(sentences):
            arrays[f"{call}_{row}"] = activations[:, row, 1 : len(words) + 1]
    np.savez(output, **arrays)


if __name__ == "__main__":
    main(*sys.argv[1:5])
