"""The model settings as options of 'extract' and 'stream'. The library's messages in
those terms: a module of its own, importing nothing heavy, so that the command line's
one-line error never needs more than the error did (`contextuality.cli.main`)."""

from __future__ import annotations

import re

# Every setting of a model's config section, as an option of 'extract' and 'stream'.
MODEL_OPTION_HELP = {
    "revision": "hub branch, tag or commit to pin (ELMo: its weights' SHA-256)",
    "gguf_file": "a GGUF file inside the model directory to load (dequantized to float32)",
    "loader": "transformers (AutoModel) or elmo (a published release or a directory)",
    "units": "word: words pooled from subwords; subword: the model's tokens "
    "(needs 'index --subwords')",
    "layers": "hidden states to extract, a comma list such as 0,3,6; 0 = the embedding "
    "output (default: all)",
    "last_layer": "the last hidden state as returned, or before the final normalization",
    "pooling": "how a word's subword vectors become one vector",
    "add_bos": "put the tokenizer's BOS token before each sentence",
    "max_length": "subwords per input (default: the model's window)",
    "long_sentences": "sentences longer than max_length: truncate, or read in windows",
    "window_overlap": "subwords shared by consecutive windows (default: a quarter)",
    "token_budget": "padded subwords per forward batch (default: 32768 on a GPU, 2048 on CPU)",
    "storage_dtype": "shard dtype: auto is float16, float32 where a value overflows it",
    "cuda_dtype": "precision of the forward pass on a GPU, the weights held in it",
    "device": "auto, or a device torch knows: cpu, cuda, cuda:N, mps, xpu, xpu:N",
    "trust_remote_code": "let the model's own code from the hub run",
    "lstm_states": "ELMo: per_sentence (zero states) or carried from sentence to sentence",
    "weights_dtype": "dtype the weights load in (bfloat16 halves a large model's memory)",
    "device_map": "accelerate's placement over GPUs and CPU: auto, balanced or sequential",
    "segment_words": "words per extraction segment, the span batches are planned in",
    "ablation": 'Sun et al.\'s intervention, as JSON: \'{"block": 12, "value": "mean"}\'',
    "autocast": "on a GPU, weights in weights_dtype, matrix products autocast to cuda_dtype",
    "random_weights_seed": "the architecture with random weights from this seed (untrained)",
    "parity_sentences": "sentences also run alone, their vectors compared with their "
    "batches' (0: no check)",
}


# A model setting as the library's messages name it: ``models.<name>.<setting>``, and any
# key inside it (``models.m.ablation.block``).
_SETTING_IN_MESSAGE = re.compile(r"models\.[^.\s:]+\.(\w+)((?:\.\w+)*)")


def in_option_terms(message: str) -> str:
    """`message` with each model setting it names as a config key (``models.m.layers``)
    named as the option of 'extract' and 'stream' that sets it (``--layers``;
    ``--ablation block`` for a key inside one), the source as the MODEL argument: what a
    command-line user can change. Anything else is left as it is."""

    def option(match: re.Match) -> str:
        setting, inner = match.groups()
        if setting == "source" and not inner:
            return "MODEL"
        if setting not in MODEL_OPTION_HELP:
            return match[0]
        return "--" + setting.replace("_", "-") + (f" {inner[1:]}" if inner else "")

    return _SETTING_IN_MESSAGE.sub(option, message)
