"""A transformers model's token embedding matrices. As `measures.embedding_matrix` measures
them: the input embedding (V, d), one row per vocabulary entry; the output embedding (the
language-modelling head's weights) where the model has one of its own; whether the two are
one tensor (tied); and how the model's files store the input embedding."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contextuality.backends.base import LoadedModel, model_location
from contextuality.backends.hf import language_model_from_files
from contextuality.backends.settings import ModelSettings
from contextuality.errors import ModelLoadError


@dataclass(frozen=True)
class TokenEmbeddings:
    """A model's token embedding matrices: `inputs` (V, d) float32; `outputs` (V, d)
    float32 where the output embedding is a tensor of its own, else None; `tied` True
    where the output embedding is the input's tensor, False where it is another, None where
    the model has none (an encoder shipped without its language-modelling head, a model of
    random weights); `stored_as` the type the model's files hold the input embedding in."""

    inputs: np.ndarray
    outputs: np.ndarray | None
    tied: bool | None
    stored_as: str


def output_embedding(
    spec: ModelSettings, inputs: np.ndarray
) -> tuple[np.ndarray | None, bool | None]:
    """The model's output embedding (V, d) where it is a tensor of its own, and whether it
    is tied to the input embedding `inputs` (V, d): its files read again with the
    language-modelling head (`hf.language_model_from_files`); a head the files lack means
    none, (None, None), and a head holding the input's tensor (None, True). ModelLoadError
    where the model read so has another input embedding than `inputs`."""
    found = language_model_from_files(spec)
    if found is None:
        return None, None
    model, missing = found
    head = model.get_output_embeddings()
    if missing or head is None:
        return None, None
    embedding = model.get_input_embeddings().weight
    if not np.array_equal(embedding.detach().numpy(), inputs):
        raise ModelLoadError(
            f"model {spec.name}: read with its language-modelling head, it has another input "
            "embedding than the model loaded"
        )
    if head.weight.data_ptr() == embedding.data_ptr():
        return None, True
    return head.weight.detach().numpy(), False


def stored_as(loaded: LoadedModel) -> str:
    """How the model's files hold the input embedding: the GGUF tensor type of
    ``token_embd.weight`` (dequantized to float32 on loading), else the loaded tensor's
    dtype."""
    spec = loaded.spec
    if spec.gguf_file is None:
        return str(loaded.model.get_input_embeddings().weight.dtype).removeprefix("torch.")
    from gguf import GGUFReader

    reader = GGUFReader(Path(model_location(spec)) / spec.gguf_file)
    return next(t.tensor_type.name for t in reader.tensors if t.name == "token_embd.weight")


def read(loaded: LoadedModel) -> TokenEmbeddings:
    """The token embedding matrices of `loaded` (`TokenEmbeddings`), the input one widened
    to float32 where the model holds it narrower."""
    inputs = loaded.model.get_input_embeddings().weight.detach().float().numpy()
    outputs, tied = output_embedding(loaded.spec, inputs)
    return TokenEmbeddings(inputs, outputs, tied, stored_as(loaded))
