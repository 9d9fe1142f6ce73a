"""The tiny models and their data: a tokenizer trained on the sentences, a random model
with its language-modelling head, and the sentences as blocks of one token stream."""

from __future__ import annotations

from typing import Any

import torch

from contextuality.training.settings import TrainingSettings

BERT_SPECIALS = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
GPT2_END = "<|endoftext|>"


def train_tokenizer(architecture: str, sentences: list[str], settings: TrainingSettings) -> Any:
    """A fast transformers tokenizer of ``settings.vocab_size`` entries trained on
    `sentences`: byte-level BPE for GPT-2, cased WordPiece for BERT."""
    from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer
    from transformers import BertTokenizerFast, GPT2TokenizerFast

    if architecture == "gpt2":
        bpe = ByteLevelBPETokenizer(trim_offsets=True)
        bpe.train_from_iterator(
            sentences,
            vocab_size=settings.vocab_size,
            special_tokens=[GPT2_END],
            show_progress=False,
        )
        return GPT2TokenizerFast(
            tokenizer_object=bpe._tokenizer,
            bos_token=GPT2_END,
            eos_token=GPT2_END,
            unk_token=GPT2_END,
            model_max_length=settings.block,
        )
    # The trainer numbers the "##x" pieces in hash-map order, which changes the vocabulary
    # from run to run (huggingface/tokenizers#1794); naming them up front, as special
    # tokens, fixes their order, and the tokenizer is then rebuilt from the vocabulary alone.
    pieces = sorted({f"##{character}" for character in "".join(sentences).replace(" ", "")})
    trainer = BertWordPieceTokenizer(lowercase=False)
    trainer.train_from_iterator(
        sentences,
        vocab_size=settings.vocab_size,
        special_tokens=[*BERT_SPECIALS.values(), *pieces],
        show_progress=False,
    )
    wordpiece = BertWordPieceTokenizer(trainer.get_vocab(), lowercase=False)
    return BertTokenizerFast(
        tokenizer_object=wordpiece._tokenizer,
        do_lower_case=False,
        model_max_length=settings.block,
        **BERT_SPECIALS,
    )


def new_model(architecture: str, tokenizer: Any, settings: TrainingSettings) -> torch.nn.Module:
    """A randomly initialized model with its language-modelling head (the seed set
    beforehand): ``GPT2LMHeadModel`` or ``BertForMaskedLM`` of `settings`' size."""
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel

    if architecture == "gpt2":
        config = GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=settings.block,
            n_embd=settings.hidden_size,
            n_layer=settings.layers,
            n_head=settings.heads,
            n_inner=settings.intermediate_size,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        return GPT2LMHeadModel(config)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=settings.hidden_size,
        num_hidden_layers=settings.layers,
        num_attention_heads=settings.heads,
        intermediate_size=settings.intermediate_size,
        max_position_embeddings=settings.block,
        pad_token_id=tokenizer.pad_token_id,
    )
    return BertForMaskedLM(config)


def blocks(architecture: str, tokenizer: Any, sentences: list[str], block: int) -> torch.Tensor:
    """The sentences as one token stream, each after ``<|endoftext|>`` (GPT-2) or before
    ``[SEP]`` (BERT), cut into blocks of `block` tokens (BERT's wrapped in ``[CLS]`` ...
    ``[SEP]``), the last partial block dropped: shape (blocks, `block`)."""
    encoded = tokenizer(sentences, add_special_tokens=False, verbose=False)["input_ids"]
    if architecture == "gpt2":
        stream = [token for ids in encoded for token in [tokenizer.eos_token_id, *ids]]
        return torch.tensor(stream[: len(stream) // block * block]).view(-1, block)
    stream = [token for ids in encoded for token in [*ids, tokenizer.sep_token_id]]
    width = block - 2
    content = torch.tensor(stream[: len(stream) // width * width]).view(-1, width)
    cls = torch.full((len(content), 1), tokenizer.cls_token_id)
    sep = torch.full((len(content), 1), tokenizer.sep_token_id)
    return torch.cat([cls, content, sep], dim=1)
