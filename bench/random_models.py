"""Random-init models of the paper's architectures, built the same on every machine.

Speed does not depend on the weights, and a GPU node without network can build these
instead of carrying them. Nothing here trains: a WordPiece vocabulary is the corpus's
characters and most frequent words (ties broken alphabetically), a byte-level BPE
tokenizer has the 256 byte symbols and no merges, and every weight comes from numpy's
PCG64 stream seeded by the seed and the parameter's name (normal, σ = 0.02; norms'
weights around 1, biases 0). The same sentences, sizes and seed therefore give the same
weights and vocabulary, bit for bit, whatever the torch or transformers version, and
`fingerprint` proves it (imported by the scripts beside it and in bench/gpu/, as
``random_models``).

    bert = save_bert(directory, sentences, BERT_BASE)
    gpt2 = save_gpt2(directory, GPT2_SMALL)
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from contextuality.corpus.words import split_words

SPECIAL_WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
END_OF_TEXT = "<|endoftext|>"
INIT_STD = 0.02
# Norms' weights spread around 1, not all 1: a layer norm with unit weights gives every
# vector the same length, √d, and then measures of length (its correlation with word
# frequency) read nothing but rounding.
NORM_WEIGHT_STD = 0.2

# Sizes: BERT-base-cased and GPT-2 small (the paper's), and tiny ones for CPU checks.
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12}
BERT_TINY = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 256,
}
GPT2_SMALL = {"n_embd": 768, "n_layer": 12, "n_head": 12}
GPT2_TINY = {"n_embd": 64, "n_layer": 2, "n_head": 2}


def wordpiece_vocabulary(sentences: Iterable[str], size: int) -> list[str]:
    """A cased WordPiece vocabulary of at most `size` entries (at least the specials and
    characters): the special tokens, every character alone and as a ``##`` continuation,
    then the corpus's most frequent words (`split_words`), ties alphabetical. A word
    outside it is read as its characters."""
    words = Counter(word for sentence in sentences for word in split_words(sentence))
    characters = sorted({character for word in words for character in word})
    vocabulary = SPECIAL_WORDPIECE + characters + [f"##{c}" for c in characters]
    known = set(vocabulary)
    for word, _ in sorted(words.items(), key=lambda item: (-item[1], item[0])):
        if len(vocabulary) >= size:
            break
        if word not in known:
            vocabulary.append(word)
    return vocabulary


def seed_weights(model, seed: int) -> None:
    """Overwrite every parameter of a torch module from a PCG64 stream seeded by (seed,
    CRC-32 of its name): norms' weights normal(1, NORM_WEIGHT_STD), biases 0, the rest
    normal(0, INIT_STD)."""
    import torch

    with torch.no_grad():
        for module_name, module in model.named_modules():
            is_norm = (
                isinstance(module, torch.nn.LayerNorm) or "norm" in type(module).__name__.lower()
            )
            for name, parameter in module.named_parameters(recurse=False):
                full_name = f"{module_name}.{name}".lstrip(".")
                stream = np.random.default_rng([seed, zlib.crc32(full_name.encode())])
                if is_norm and name == "weight":
                    values = 1.0 + stream.normal(0.0, NORM_WEIGHT_STD, parameter.shape)
                elif name == "bias":
                    values = np.zeros(parameter.shape)
                else:
                    values = stream.normal(0.0, INIT_STD, parameter.shape)
                parameter.copy_(torch.from_numpy(values.astype(np.float32)))


def fingerprint(directory: Path) -> str:
    """SHA-256 of a saved model's weights (every tensor by name, as float32 bytes) and of
    its tokenizer's vocabulary: equal exactly when two builds are the same model, whatever
    the file format's metadata."""
    from safetensors.numpy import load_file
    from transformers import AutoTokenizer

    digest = hashlib.sha256()
    tensors = load_file(directory / "model.safetensors")
    for name in sorted(tensors):
        digest.update(name.encode() + tensors[name].astype(np.float32).tobytes())
    vocabulary = AutoTokenizer.from_pretrained(directory).get_vocab()
    digest.update(json.dumps(sorted(vocabulary.items())).encode())
    return digest.hexdigest()


def save_bert(directory: Path, sentences: list[str], size: dict, seed: int = 0) -> Path:
    """A random-init BertModel of `size` (BertConfig keys) with a cased WordPiece tokenizer
    built from `sentences` (at most 28,996 entries, BERT-base-cased's count)."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocabulary = wordpiece_vocabulary(sentences, 28_996)
    (directory / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    BertTokenizerFast.from_pretrained(directory, do_lower_case=False).save_pretrained(directory)
    model = BertModel(BertConfig(vocab_size=len(vocabulary), **size))
    seed_weights(model, seed)
    model.eval().save_pretrained(directory)
    return directory


def byte_level_tokenizer():
    """A GPT-2 style byte-level BPE tokenizer with no merges: every byte one token (its
    256 symbols in code-point order), then ``<|endoftext|>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import GPT2TokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocabulary = {symbol: index for index, symbol in enumerate(alphabet)}
    vocabulary[END_OF_TEXT] = len(vocabulary)
    backend = Tokenizer(models.BPE(vocab=vocabulary, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    return GPT2TokenizerFast(
        tokenizer_object=backend,
        bos_token=END_OF_TEXT,
        eos_token=END_OF_TEXT,
        unk_token=END_OF_TEXT,
    )


def trained_byte_level_tokenizer(sentences: list[str], vocab_size: int = 16_000):
    """A GPT-2 style byte-level BPE tokenizer trained on `sentences` (as GPT-2's was on its
    corpus), for speed measurements that need realistic subwords per word."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2TokenizerFast

    backend = ByteLevelBPETokenizer()
    backend.train_from_iterator(sentences, vocab_size=vocab_size, special_tokens=[END_OF_TEXT])
    return GPT2TokenizerFast(
        tokenizer_object=backend._tokenizer,
        bos_token=END_OF_TEXT,
        eos_token=END_OF_TEXT,
        unk_token=END_OF_TEXT,
    )


def save_gpt2(directory: Path, size: dict, seed: int = 0, n_positions: int = 1024) -> Path:
    """A random-init GPT2Model of `size` (GPT2Config keys) with the byte-level tokenizer."""
    from transformers import GPT2Config, GPT2Model

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = byte_level_tokenizer()
    tokenizer.save_pretrained(directory)
    end = tokenizer.convert_tokens_to_ids(END_OF_TEXT)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        bos_token_id=end,
        eos_token_id=end,
        **size,
    )
    model = GPT2Model(config)
    seed_weights(model, seed)
    model.eval().save_pretrained(directory)
    return directory
