"""The ELMo biLM as a PyTorch module, holding the values of a published weights file.

Each LSTM cell is TensorFlow's LSTMCell with a projection, as bilm-tf trained it (gates in
TensorFlow's order i, j, f, o; 1 added to the forget gate's bias)::

    [i, j, f, o] = [x_t; h_{t-1}] W_0 + B
    c_t = σ(f + 1) ⊙ c_{t-1} + σ(i) ⊙ tanh(j)        clipped to ±cell_clip
    h_t = (σ(o) ⊙ tanh(c_t)) W_P_0                   clipped to ±proj_clip

Both directions of a layer run in one batched recurrence (direction first); the backward
direction reads each sentence reversed within its own length, so padding never reaches a
sentence's states. Each sentence starts from zero states, or, with ``carry_states`` (one
sentence per call, in corpus order), from the states the previous sentence ended in, as
AllenNLP's stateful ``ElmoEmbedder`` did: per layer and direction, the forward LSTM's
after the end-of-sentence token and the backward LSTM's after the begin-of-sentence token.
Imported only when an ELMo is loaded (it imports torch).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from contextuality.backends.elmo.weights import ElmoOptions, lstm_cell_group
from contextuality.errors import ModelLoadError


class ElmoBiLM(torch.nn.Module):
    """The biLM with the published values (`weights.read_weights`), frozen.

    forward(input_ids (batch, tokens, characters), attention_mask (batch, tokens)) gives
    ``hidden_states``: n_layers + 1 float32 tensors of (batch, tokens, 2p).
    """

    def __init__(
        self, options: ElmoOptions, arrays: dict[str, np.ndarray], carry_states: bool = False
    ) -> None:
        super().__init__()
        self.options = options
        self.carry_states = carry_states
        self.carried: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        frozen = {"requires_grad": False}
        embedding = np.zeros((arrays["char_embed"].shape[0] + 1, options.character_dim))
        embedding[1:] = arrays["char_embed"]  # row 0: padding tokens
        self.character_embedding = torch.nn.Parameter(
            torch.tensor(embedding, dtype=torch.float32), **frozen
        )
        self.convolutions = torch.nn.ModuleList()
        for index, (width, number) in enumerate(options.filters):
            convolution = torch.nn.Conv1d(options.character_dim, number, width)
            # (1, width, dim, number) → (number, dim, width)
            kernel = arrays[f"CNN/W_cnn_{index}"][0].transpose(2, 1, 0)
            _assign(convolution, kernel, arrays[f"CNN/b_cnn_{index}"])
            self.convolutions.append(convolution)
        self.highways = torch.nn.ModuleList()
        for k in range(options.n_highway):
            highway = torch.nn.Linear(options.n_filters, 2 * options.n_filters)
            group = f"CNN_high_{k}"
            # One product x ↦ [transform, carry]; the published matrices act on rows.
            _assign(
                highway,
                np.concatenate([arrays[f"{group}/W_transform"], arrays[f"{group}/W_carry"]], 1).T,
                np.concatenate([arrays[f"{group}/b_transform"], arrays[f"{group}/b_carry"]]),
            )
            self.highways.append(highway)
        self.projection = torch.nn.Linear(options.n_filters, options.projection_dim)
        _assign(self.projection, arrays["CNN_proj/W_proj"].T, arrays["CNN_proj/b_proj"])
        p = options.projection_dim
        self.input_weights = torch.nn.ParameterList()
        self.recurrent_weights = torch.nn.ParameterList()
        self.biases = torch.nn.ParameterList()
        self.output_projections = torch.nn.ParameterList()
        for layer in range(options.n_layers):
            cells = [lstm_cell_group(direction, layer) for direction in range(2)]
            stacked = {
                name: np.stack([arrays[f"{cell}/{name}"] for cell in cells])
                for name in ("W_0", "B", "W_P_0")
            }
            bias = stacked["B"].copy()
            bias[:, 2 * options.cell_dim : 3 * options.cell_dim] += 1.0  # forget bias
            for target, value in (
                (self.input_weights, stacked["W_0"][:, :p]),
                (self.recurrent_weights, stacked["W_0"][:, p:]),
                (self.biases, bias),
                (self.output_projections, stacked["W_P_0"]),
            ):
                target.append(
                    torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(value)), **frozen)
                )

    def token_vectors(self, character_ids: torch.Tensor) -> torch.Tensor:
        """(batch, tokens, characters) ids → (batch, tokens, p) token representations,
        computed once per distinct token of the batch."""
        batch, tokens, characters = character_ids.shape
        distinct, inverse = torch.unique(
            character_ids.reshape(-1, characters), dim=0, return_inverse=True
        )
        embedded = torch.nn.functional.embedding(distinct, self.character_embedding)
        embedded = embedded.transpose(1, 2)  # (distinct, dim, characters)
        activation = torch.relu if self.options.activation == "relu" else torch.tanh
        pooled = [activation(conv(embedded).amax(dim=-1)) for conv in self.convolutions]
        vectors = torch.cat(pooled, dim=-1)
        for highway in self.highways:
            transform, carry = highway(vectors).chunk(2, dim=-1)
            gate = torch.sigmoid(carry)
            vectors = gate * torch.relu(transform) + (1 - gate) * vectors
        return self.projection(vectors)[inverse].reshape(batch, tokens, -1)

    def reset_states(self) -> None:
        """Start the next sentence from zero states (with ``carry_states``)."""
        self.carried = None

    def lstm_layer(
        self,
        layer: int,
        inputs: torch.Tensor,
        initial: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """One biLSTM layer over (2, batch, tokens, p) inputs, direction first (the
        backward direction's tokens already reversed), from `initial` (h, c) states of
        (2, batch, p) and (2, batch, cell), else zeros. Returns the outputs, shaped as the
        inputs, and the (h, c) after the last token. The recurrence runs in float32
        whatever the autocast dtype."""
        directions, batch, tokens, width = inputs.shape
        projected = torch.matmul(
            inputs.reshape(directions, batch * tokens, width), self.input_weights[layer]
        )
        projected = projected.float().reshape(directions, batch, tokens, -1)
        projected += self.biases[layer].float()[:, None, None]
        recurrent = self.recurrent_weights[layer].float()
        output_projection = self.output_projections[layer].float()
        if initial is None:
            state = projected.new_zeros(directions, batch, self.options.projection_dim)
            cell = projected.new_zeros(directions, batch, self.options.cell_dim)
        else:
            state, cell = initial
        outputs = projected.new_empty(directions, batch, tokens, self.options.projection_dim)
        with torch.autocast(inputs.device.type, enabled=False):
            for position in range(tokens):
                gates = projected[:, :, position] + torch.bmm(state, recurrent)
                i, j, f, o = gates.chunk(4, dim=-1)
                cell = torch.sigmoid(f) * cell + torch.sigmoid(i) * torch.tanh(j)
                if self.options.cell_clip is not None:
                    cell = cell.clamp(-self.options.cell_clip, self.options.cell_clip)
                state = torch.bmm(torch.sigmoid(o) * torch.tanh(cell), output_projection)
                if self.options.proj_clip is not None:
                    state = state.clamp(-self.options.proj_clip, self.options.proj_clip)
                outputs[:, :, position] = state
        return outputs, (state, cell)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        output_hidden_states: bool = True,
    ) -> SimpleNamespace:
        if self.carry_states and (input_ids.shape[0] != 1 or not attention_mask.all()):
            raise ValueError("carried LSTM states need one unpadded sentence per call")
        tokens = self.token_vectors(input_ids)
        reverse = _reversal(attention_mask.sum(dim=1), tokens.shape[1])
        states = [torch.cat([tokens, tokens], dim=-1).float()]
        layer_input = torch.stack([tokens, _gather_tokens(tokens, reverse)])
        finals = []
        for layer in range(self.options.n_layers):
            initial = self.carried[layer] if self.carried is not None else None
            output, final = self.lstm_layer(layer, layer_input, initial)
            finals.append(final)
            if self.options.skip_connections and layer > 0:
                output = output + layer_input
            states.append(torch.cat([output[0], _gather_tokens(output[1], reverse)], -1))
            layer_input = output
        if self.carry_states:
            self.carried = finals
        return SimpleNamespace(hidden_states=tuple(states))


def _assign(module: torch.nn.Module, weight: np.ndarray, bias: np.ndarray) -> None:
    """Copy published values into a torch layer's (frozen) weight and bias."""
    if tuple(module.weight.shape) != weight.shape:
        raise ModelLoadError(f"weight of shape {weight.shape} for a layer of {module}")
    module.weight = torch.nn.Parameter(torch.tensor(weight), requires_grad=False)
    module.bias = torch.nn.Parameter(torch.tensor(bias), requires_grad=False)


def _reversal(lengths: torch.Tensor, tokens: int) -> torch.Tensor:
    """(batch, tokens) index that reverses each sequence's first `length` tokens and leaves
    its padding in place; applying it twice is the identity."""
    positions = torch.arange(tokens, device=lengths.device)[None, :]
    lengths = lengths[:, None]
    return torch.where(positions < lengths, lengths - 1 - positions, positions)


def _gather_tokens(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """values (batch, tokens, width) reordered along tokens by index (batch, tokens)."""
    return values.gather(1, index[..., None].expand_as(values))
