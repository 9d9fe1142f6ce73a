"""Run AllenNLP's own ELMo biLM (``allennlp.modules.elmo._ElmoBiLm``) on word lists and save
its activations, for the comparison in tests/test_backends_elmo.py.

AllenNLP cannot share this package's environment (it needs transformers < 5 and
huggingface-hub < 1), so this script runs in an environment of its own, named by the
CONTEXTUALITY_ALLENNLP_PYTHON variable:

    python allennlp_elmo.py OPTIONS WEIGHTS SENTENCES_JSON OUTPUT_NPZ

SENTENCES_JSON is a list of word lists. OUTPUT_NPZ gets ``batch_<i>``: the
(n_layers + 1, n_words, 2p) activations of sentence i, begin and end of sentence dropped,
all sentences in one batch from the zero states of a fresh biLM; and ``sequential_<i>``:
each sentence in its own call, in order, on another fresh biLM, which carries its states
from one call to the next (AllenNLP's ELMo is stateful, and the paper's code called
ElmoEmbedder one sentence at a time).
"""

import json
import sys

import numpy as np
import torch
from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids


def main(options: str, weights: str, sentences_path: str, output: str) -> None:
    with open(sentences_path) as handle:
        sentences = json.load(handle)
    arrays = {}
    with torch.no_grad():
        batched = _ElmoBiLm(options, weights, requires_grad=False).eval()
        activations = torch.stack(batched(batch_to_ids(sentences))["activations"]).numpy()
        for row, words in enumerate(sentences):
            arrays[f"batch_{row}"] = activations[:, row, 1 : len(words) + 1]
        sequential = _ElmoBiLm(options, weights, requires_grad=False).eval()
        for row, words in enumerate(sentences):
            activations = torch.stack(sequential(batch_to_ids([words]))["activations"])
            arrays[f"sequential_{row}"] = activations.numpy()[:, 0, 1:-1]
    np.savez(output, **arrays)


if __name__ == "__main__":
    main(*sys.argv[1:5])
