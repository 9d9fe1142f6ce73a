"""Shared fixtures: tiny random-init BERT and GPT-2 models with real trained tokenizers,
and a tiny random-init ELMo; one fixture per tiny model, used by every test file.

The models are built in a temporary directory once per test session: a WordPiece
(BERT) or byte-level BPE (GPT-2) tokenizer trained with `tokenizers` on a few sentences,
a 2-layer random-init model, both saved with ``save_pretrained``, so they load through
exactly the code path a hub model uses.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

TRAINING_SENTENCES = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the cat watched.",
    "The quick brown fox jumps over the lazy dog!",
    "Bushfires forced hundreds of residents to leave their homes.",
    "The bank raised interest rates; the river bank flooded.",
    "Is it true that 1,650 people voted?",
]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REPO = Path(__file__).resolve().parents[1]


def shipped(path: Path) -> str:
    """A file of the repository as it ships (its committed text, where this is a git
    checkout): a user's edits of config/config.yaml are their study, not what is tested."""
    committed = subprocess.run(
        ["git", "show", f"HEAD:{path.relative_to(REPO).as_posix()}"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    return committed.stdout if committed.returncode == 0 else path.read_text()


def shipped_config(name: str = "config.yaml") -> dict:
    """config/`name` as the repository ships it (`shipped`), parsed."""
    return yaml.safe_load(shipped(REPO / "config" / name))


def _train_wordpiece(directory: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    backend = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=False)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece()
    backend.train_from_iterator(
        TRAINING_SENTENCES * 3, trainers.WordPieceTrainer(vocab_size=120, special_tokens=specials)
    )
    from tokenizers.processors import TemplateProcessing

    backend.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[
            ("[CLS]", backend.token_to_id("[CLS]")),
            ("[SEP]", backend.token_to_id("[SEP]")),
        ],
    )
    tokenizer = BertTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        do_lower_case=False,
    )
    tokenizer.save_pretrained(directory)


def _train_byte_level_bpe(directory: Path) -> None:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2TokenizerFast

    backend = ByteLevelBPETokenizer()
    backend.train_from_iterator(
        TRAINING_SENTENCES * 3, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"]
    )
    tokenizer = GPT2TokenizerFast(
        tokenizer_object=backend._tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    tokenizer.save_pretrained(directory)


def _tiny_model(directory: Path, train_tokenizer, model_class, config) -> Path:
    """`directory` holding a tokenizer trained by `train_tokenizer` and a random-init
    `model_class` of `config` (seeded), saved as a hub model is."""
    import torch

    train_tokenizer(directory)
    torch.manual_seed(0)
    model_class(config).eval().save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A 2-layer, 32-dimensional random-init BERT with a trained WordPiece tokenizer."""
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    directory = tmp_path_factory.mktemp("tiny-bert")
    return _tiny_model(directory, _train_wordpiece, BertModel, config)


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A 2-layer, 32-dimensional random-init GPT-2 with a trained byte-level BPE tokenizer."""
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(
        vocab_size=300,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    directory = tmp_path_factory.mktemp("tiny-gpt2")
    return _tiny_model(directory, _train_byte_level_bpe, GPT2Model, config)


@pytest.fixture(scope="session")
def tiny_elmo_dir(tmp_path_factory) -> Path:
    """A small random-init ELMo (options.json and weights.hdf5, as a release ships them)."""
    from contextuality.backends.elmo.synthetic import write_random_files

    directory = tmp_path_factory.mktemp("tiny-elmo")
    write_random_files(directory)
    return directory


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only data mirror beside the checkout (../shared/data); skip if absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data mirror not found at {SHARED_DATA}")
    return SHARED_DATA
