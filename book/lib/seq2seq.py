"""Sequence to sequence: an encoder reads the source into a vector, a decoder writes the target from it.

The encoder is an embedding and a GRU or LSTM; its final state is the *only* thing the decoder
learns about the source (Sutskever et al. 2014, Cho et al. 2014). The decoder starts from that
state and, as Cho et al. do, also reads the encoder's final top-layer hidden state (the
*context*) alongside every input token, so the source is not forgotten as the decoder runs.
``reverse_source=True`` feeds the source backwards (Sutskever et al.'s trick), in training and
in decoding alike.

:class:`Seq2Seq` keeps the translator contract (:class:`seqbook.interfaces.Translator`), so the
trainer, the batched greedy decoding and BLEU of :mod:`seqbook.translator` and the searches of
:mod:`seqbook.decoding` work on it, as on chapters 5 and 6's models.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from . import checks
from .seeding import seeded
from .translation import PAD
from .translator import StepwiseTranslator, check_source, check_vocab_sizes

_CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}


def reverse_padded(src: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row's first ``lengths[b]`` tokens in reverse order; the padding stays on the right."""
    positions = torch.arange(src.shape[1], device=src.device)[None, :]
    lengths = lengths.to(src.device)[:, None]
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)
    return src.gather(1, index)


class Encoder(nn.Module):
    """Token ids (batch, src_len) -> outputs (batch, src_len, d_h) and the final state.

    The padded batch is *packed*, so each sentence's final state is taken at its own last token
    and padding never enters the recurrence. The state is ``h`` (layers, batch, d_h) for a GRU,
    ``(h, c)`` for an LSTM; outputs at padded positions are zero."""

    def __init__(self, vocab_size: int, embed_size: int, hidden_size: int, num_layers: int = 1, cell: str = "gru"):
        super().__init__()
        checks.one_of(cell, _CELLS, "cell")
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.rnn = _CELLS[cell](embed_size, hidden_size, num_layers, batch_first=True)

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor):
        embedded = self.embedding(src)                # (batch, src_len, embed_size)
        packed = pack_padded_sequence(embedded, src_lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        outputs, state = self.rnn(packed)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True,
                                                      total_length=src.shape[1])
        return outputs, state


class DecoderState(NamedTuple):
    """The decoder's recurrent state (``h``, or ``(h, c)`` for an LSTM; batch on dim 1) and the
    fixed context vector it reads at every step (batch, d_h)."""

    hidden: torch.Tensor | tuple[torch.Tensor, torch.Tensor]
    context: torch.Tensor

    def select(self, rows) -> "DecoderState":
        """The state of the given batch rows (a list or tensor of indices)."""
        pick = (lambda h: h[:, rows])
        hidden = tuple(map(pick, self.hidden)) if isinstance(self.hidden, tuple) else pick(self.hidden)
        return DecoderState(hidden, self.context[rows])

    @staticmethod
    def cat(states: Sequence["DecoderState"]) -> "DecoderState":
        """Stack states of single sentences (or small batches) along the batch."""
        first = states[0].hidden
        if isinstance(first, tuple):
            hidden = tuple(torch.cat([s.hidden[i] for s in states], 1) for i in range(len(first)))
        else:
            hidden = torch.cat([s.hidden for s in states], 1)
        return DecoderState(hidden, torch.cat([s.context for s in states]))


class Decoder(nn.Module):
    """Previous target tokens (batch, t) and a state -> next-token logits (batch, t, |V_tgt|).

    Each input is the token's embedding, concatenated with the context vector when
    ``feed_context`` (Cho et al. 2014)."""

    def __init__(self, vocab_size: int, embed_size: int, hidden_size: int, num_layers: int = 1,
                 cell: str = "gru", feed_context: bool = True):
        super().__init__()
        checks.one_of(cell, _CELLS, "cell")
        self.feed_context = feed_context
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.rnn = _CELLS[cell](embed_size + hidden_size * feed_context, hidden_size, num_layers, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens: torch.Tensor, state: DecoderState):
        """tokens (batch, t) -> logits (batch, t, |V_tgt|) and the state after them."""
        x = self.embedding(tokens)                   # E_y[y_{i-1}]: (batch, t, d)
        if self.feed_context:                        # [E_y[y_{i-1}]; v] (Cho et al.)
            context = state.context[:, None, :].expand(-1, x.shape[1], -1)
            x = torch.cat([x, context], dim=-1)      # (batch, t, d + d_h)
        outputs, hidden = self.rnn(x, state.hidden)  # s_i: (batch, t, d_h)
        return self.out(outputs), DecoderState(hidden, state.context)


class Seq2Seq(StepwiseTranslator, nn.Module):
    """Encoder-decoder translation model (the interface of chapters 4-6).

    - ``forward(src, src_lengths, tgt_in) -> logits`` (batch, tgt_len, |V_tgt|), teacher forcing;
    - ``forward_scheduled(..., teacher_forcing, gen)``: each step reads the gold token with
      probability ``teacher_forcing``, else the model's own previous prediction (scheduled sampling);
    - ``start``/``step``: one decoder step at a time (batched greedy decoding);
    - ``next_log_probs_fn(src_ids)`` for :mod:`seqbook.decoding`.
    Parameters get PyTorch's default initialisation, drawn from ``seed`` (None: from PyTorch's
    global generator).
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_size: int = 64, hidden_size: int = 128,
                 num_layers: int = 1, cell: str = "gru", reverse_source: bool = False, feed_context: bool = True,
                 seed: int | None = None):
        super().__init__()
        check_vocab_sizes(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)
        self.reverse_source = reverse_source
        self.tgt_vocab_size = tgt_vocab_size
        with seeded(seed):
            self.encoder = Encoder(src_vocab_size, embed_size, hidden_size, num_layers, cell)
            self.decoder = Decoder(tgt_vocab_size, embed_size, hidden_size, num_layers, cell, feed_context)

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor) -> DecoderState:
        """Encode the source: the decoder's initial state (the encoder's final state)
        and the context."""
        check_source(src, src_lengths)
        if self.reverse_source:                       # Sutskever et al.: x_T, ..., x_1
            src = reverse_padded(src, src_lengths)
        _, hidden = self.encoder(src, src_lengths)    # (layers, batch, d_h), or (h, c)
        top = hidden[0][-1] if isinstance(hidden, tuple) else hidden[-1]  # v: top h
        return DecoderState(hidden, top)              # s_0 = the encoder's final state

    def step(self, tokens: torch.Tensor, state: DecoderState):
        """One decoder step: tokens (batch,) -> logits (batch, |V_tgt|), next state."""
        logits, state = self.decoder(tokens[:, None], state)
        return logits[:, 0], state

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor,
                tgt_in: torch.Tensor) -> torch.Tensor:
        checks.token_ids(tgt_in, "tgt_in", 2)
        logits, _ = self.decoder(tgt_in, self.start(src, src_lengths))
        return logits
