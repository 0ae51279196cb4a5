"""Translation with attention: a bidirectional GRU encoder and a GRU decoder that attends to it.

The model keeps chapter 4's translator contract (:class:`seqbook.interfaces.Translator`):
``forward(src, src_lengths, tgt_in) -> logits``, ``start``/``step`` (so the trainer and the
batched decoding of :mod:`seqbook.translator` work on it unchanged) and ``next_log_probs_fn``
(for :mod:`seqbook.decoding`'s greedy and beam search). It also shows where it looks:
:meth:`AttentionSeq2Seq.attention_for` (teacher forcing) and
:meth:`AttentionSeq2Seq.greedy_with_attention` (its own translation) return the (tgt_len, src_len)
weight matrix of one sentence.

The encoder (Bahdanau et al. 2015, section 3.2) runs a GRU each way over the source; the
annotation of word j is ``h_j = [->h_j; <-h_j]``, and the decoder starts from
``s_0 = tanh(W_init <-h_1 + b_init)``. Each direction has d_h / 2 units, so annotations have the decoder's
size d_h and all four scores of :mod:`seqbook.attention` (the dot score included) apply.

Two decoders, ``style=``:

- ``"bahdanau"`` (Bahdanau et al. 2015, eqs. 4-6): the *previous* state queries,
  ``c_i = sum_j a_ij h_j`` with ``a_i = softmax_j score(s_{i-1}, h_j)``, then
  ``s_i = GRU(s_{i-1}, [E y_{i-1}; c_i])`` and ``logits_i = W_o [s_i; c_i; E y_{i-1}]``
  (a linear read-out where the paper has a maxout layer);
- ``"luong"`` (Luong et al. 2015, section 3 with input feeding, 3.3): the *current* state queries,
  ``h_t = GRU(h_{t-1}, [E y_{t-1}; ~h_{t-1}])``, ``a_t = softmax_j score(h_t, h_j)``,
  ``~h_t = tanh(W_c [c_t; h_t])``, ``logits_t = W_s ~h_t`` (one GRU layer where the paper stacks
  four LSTM layers; ``~h_0 = 0``). ``input_feeding=False`` gives Luong et al.'s basic global
  attention, ``h_t = GRU(h_{t-1}, E y_{t-1})``.

Either takes any ``score=`` of ``"additive"``, ``"dot"``, ``"general"``, ``"concat"``.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from . import checks
from .attention import make_score, masked_softmax
from .seeding import seeded
from .translator import StepwiseTranslator, check_source, check_vocab_sizes
from .translation import BOS, EOS, PAD

STYLES = ("bahdanau", "luong")


class BidirectionalEncoder(nn.Module):
    """Source ids (batch, src_len) -> annotations (batch, src_len, 2 * hidden_size) and the
    decoder's initial state (batch, decoder_size) = ``tanh(W_init <-h_1 + b_init)``.
    ``hidden_size`` is one direction's size (the model's d_h / 2).

    The batch is packed, so padding never enters either direction: the backward GRU starts at
    each sentence's own last word, and a sentence gets the same annotations alone as in a padded
    batch. Annotations at padded positions are zero."""

    def __init__(self, vocab_size: int, embed_size: int, hidden_size: int, decoder_size: int | None = None,
                 num_layers: int = 1):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.rnn = nn.GRU(embed_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(hidden_size, decoder_size or hidden_size)  # W_init, b_init

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor):
        packed = pack_padded_sequence(self.embedding(src), src_lengths.cpu(),
                                      batch_first=True, enforce_sorted=False)
        outputs, h_n = self.rnn(packed)  # h_n: (layers * 2 directions, batch, d_h / 2)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True,
                                         total_length=src.shape[1])  # [->h_j; <-h_j]
        # top layer, backward direction: its state after reading back to word 1
        first_backward = h_n[-1]
        # the bridge: s_0 = tanh(W_init <-h_1 + b_init), of the decoder's size d_h
        return outputs, torch.tanh(self.bridge(first_backward))


class AttentionState(NamedTuple):
    """Everything the decoder carries from one step to the next (batch first in every field):
    ``hidden`` (batch, d_h); ``feed`` (batch, d_h) Luong's attentional vector ~h (width 0 for
    Bahdanau's decoder); ``weights`` (batch, src_len) the last step's attention; the encoder's
    ``keys`` (batch, src_len, d_h), their ``prepared`` form (``score.prepare(keys)``) and ``mask``
    (batch, src_len), True at real words."""

    hidden: torch.Tensor
    feed: torch.Tensor
    weights: torch.Tensor
    keys: torch.Tensor
    prepared: torch.Tensor
    mask: torch.Tensor

    def select(self, rows) -> "AttentionState":
        """The state of the given batch rows (a list or tensor of indices)."""
        return AttentionState(*(field[rows] for field in self))

    @staticmethod
    def cat(states: Sequence["AttentionState"]) -> "AttentionState":
        """Stack states of single sentences (all with the same source) along the batch."""
        return AttentionState(*(torch.cat(fields) for fields in zip(*states)))


class AttentionDecoder(nn.Module):
    """A GRU decoder that attends to the encoder's annotations at every step and returns the
    weights it used (the two styles are described in the module docstring)."""

    def __init__(self, vocab_size: int, embed_size: int, hidden_size: int, key_size: int,
                 score: str = "additive", style: str = "bahdanau", attention_size: int | None = None,
                 input_feeding: bool = True):
        super().__init__()
        checks.one_of(style, STYLES, "style")
        if not input_feeding and style != "luong":
            raise ValueError("expected input_feeding=False only with style='luong' (Bahdanau's decoder always "
                             "reads its context)")
        self.style, self.hidden_size, self.input_feeding = style, hidden_size, bool(input_feeding)
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.score = make_score(score, hidden_size, key_size, attention_size)
        if style == "bahdanau":
            self.cell = nn.GRUCell(embed_size + key_size, hidden_size)
            self.out = nn.Linear(hidden_size + key_size + embed_size, vocab_size)
        else:
            if input_feeding:
                self.cell = nn.GRUCell(embed_size + hidden_size, hidden_size)
            else:  # the recurrence does not see the attention: one GRU call runs all the steps
                self.rnn = nn.GRU(embed_size, hidden_size, batch_first=True)
            self.combine = nn.Linear(key_size + hidden_size, hidden_size)
            self.out = nn.Linear(hidden_size, vocab_size)

    def initial_state(self, keys: torch.Tensor, mask: torch.Tensor, hidden: torch.Tensor) -> AttentionState:
        """The state before the first step, from the annotations, their mask and s_0."""
        feeds = self.style == "luong" and self.input_feeding
        feed = hidden.new_zeros(hidden.shape[0], self.hidden_size if feeds else 0)
        weights = keys.new_zeros(keys.shape[:2])
        return AttentionState(hidden, feed, weights, keys, self.score.prepare(keys), mask)

    def _attend(self, query: torch.Tensor, state: AttentionState):
        """Context (batch, d_k), weights (batch, src_len) for a query (batch, d_h)."""
        scores = self.score.score(query[:, None], state.prepared)  # (batch, 1, src_len)
        weights = masked_softmax(scores, state.mask[:, None])
        return (weights @ state.keys)[:, 0], weights[:, 0]

    def advance(self, embedded: torch.Tensor, state: AttentionState):
        """One step from the previous tokens' embeddings (batch, embed): the features
        the output layer reads (batch, features) and the next state (its ``weights``
        are this step's)."""
        if self.style == "bahdanau":
            # Bahdanau: the previous state s_{i-1} is the query
            context, weights = self._attend(state.hidden, state)  # c_i, a_i
            # s_i = GRU(s_{i-1}, [E y_{i-1}; c_i]), one GRUCell step: (batch, d_h)
            hidden = self.cell(torch.cat([embedded, context], -1), state.hidden)
            features = torch.cat([hidden, context, embedded], -1)  # [s_i; c_i; E y]
            feed = state.feed                   # not used by this style (width 0)
        else:
            # Luong: the GRU steps first, and the new state s_i is the query
            if self.input_feeding:  # s_i = GRU(s_{i-1}, [E y_{i-1}; ~s_{i-1}])
                hidden = self.cell(torch.cat([embedded, state.feed], -1), state.hidden)
            else:                   # s_i = GRU(s_{i-1}, E y_{i-1})
                # nn.GRU over a sequence of one step: input (batch, 1, embed), state
                # (1, batch, d_h); it returns (outputs, last state): keep the last state
                _, last = self.rnn(embedded[:, None], state.hidden[None])
                hidden = last[0]
            context, weights = self._attend(hidden, state)  # c_i, a_i
            # ~s_i = tanh(W_c [c_i; s_i]): what the read-out reads (and, with input
            # feeding, the next step's GRU)
            features = torch.tanh(self.combine(torch.cat([context, hidden], -1)))
            feed = features if self.input_feeding else state.feed
        # a state is a NamedTuple: _replace gives a copy with these fields changed
        return features, state._replace(hidden=hidden, feed=feed, weights=weights)

    def step(self, tokens: torch.Tensor, state: AttentionState):
        """One step: previous tokens (batch,) -> logits (batch, n_vocab) and the next state."""
        features, state = self.advance(self.embedding(tokens), state)
        return self.out(features), state

    def forward(self, tokens: torch.Tensor, state: AttentionState):
        """Teacher forcing: tokens (batch, t) -> logits (batch, t, n_vocab), weights (batch, t, src_len)
        and the final state."""
        if self.style == "luong" and not self.input_feeding:
            return self._forward_all_steps(tokens, state)
        features, weights = [], []
        for embedded in self.embedding(tokens).unbind(1):  # unbind, not [:, t]: a cheap backward
            step_features, state = self.advance(embedded, state)
            features.append(step_features)
            weights.append(state.weights)
        return self.out(torch.stack(features, 1)), torch.stack(weights, 1), state

    def _forward_all_steps(self, tokens: torch.Tensor, state: AttentionState):
        """Luong's decoder without input feeding: all states first, then all attention at once."""
        hidden, last = self.rnn(self.embedding(tokens), state.hidden[None])
        scores = self.score.score(hidden, state.prepared)  # (batch, t, src_len)
        weights = masked_softmax(scores, state.mask[:, None])
        features = torch.tanh(self.combine(torch.cat([weights @ state.keys, hidden], -1)))
        return self.out(features), weights, state._replace(hidden=last[0], weights=weights[:, -1])


class AttentionSeq2Seq(StepwiseTranslator, nn.Module):
    """Bidirectional GRU encoder + attention GRU decoder, with chapter 4's model interface.

    ``hidden_size`` is the decoder's d_h (even: each encoder direction has d_h / 2 units);
    ``score`` one of ``additive``, ``dot``, ``general``, ``concat``; ``style`` ``bahdanau``
    (the previous state queries) or ``luong`` (the current state queries); ``attention_size``
    the a of the additive and concat scores (default d_h); ``input_feeding=False`` (Luong style
    only) drops ~h_{t-1} from the GRU's input, so teacher forcing runs the GRU over the whole
    target in one call, much faster. Parameters come from ``seed`` (None: from PyTorch's global
    generator)."""

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_size: int = 64, hidden_size: int = 128,
                 score: str = "additive", style: str = "bahdanau", attention_size: int | None = None,
                 input_feeding: bool = True, num_encoder_layers: int = 1, seed: int | None = None):
        super().__init__()
        check_vocab_sizes(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)
        if checks.integer(hidden_size, "hidden_size", 2, note="even: each encoder direction gets half") % 2:
            raise ValueError(f"expected an even hidden_size >= 2 (each encoder direction gets half), "
                             f"got {hidden_size!r}")
        self.tgt_vocab_size, self.score_name, self.style = tgt_vocab_size, score, style
        with seeded(seed):
            self.encoder = BidirectionalEncoder(src_vocab_size, embed_size, hidden_size // 2, hidden_size,
                                                num_encoder_layers)
            self.decoder = AttentionDecoder(tgt_vocab_size, embed_size, hidden_size, hidden_size, score, style,
                                            attention_size, input_feeding)

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor) -> AttentionState:
        """Encode the source: annotations, mask and the decoder's initial state."""
        check_source(src, src_lengths)
        keys, hidden = self.encoder(src, src_lengths)
        mask = torch.arange(src.shape[1], device=src.device)[None, :] < src_lengths.to(src.device)[:, None]
        return self.decoder.initial_state(keys, mask, hidden)

    def step(self, tokens: torch.Tensor, state: AttentionState):
        """One decoder step: tokens (batch,) -> logits (batch, n_vocab) and the next state
        (whose ``weights`` are this step's attention)."""
        return self.decoder.step(tokens, state)

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        return self.forward_with_attention(src, src_lengths, tgt_in)[0]

    def forward_with_attention(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor):
        """Teacher forcing: logits (batch, tgt_len, n_vocab) and weights (batch, tgt_len, src_len)."""
        checks.token_ids(tgt_in, "tgt_in", 2)
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"expected tgt_in with the source's batch of {src.shape[0]}, got {tuple(tgt_in.shape)}")
        logits, weights, _ = self.decoder(tgt_in, self.start(src, src_lengths))
        return logits, weights

    @torch.no_grad()
    def attention_for(self, src_ids, tgt_ids) -> torch.Tensor:
        """The (len(tgt_ids), len(src_ids)) attention matrix of one pair under teacher forcing:
        row j holds the weights the decoder used when predicting target word j (``tgt_ids`` are
        the target words without ``<bos>``/``<eos>``). On the CPU."""
        src = self.one_source(src_ids)
        tgt = checks.as_token_ids(tgt_ids, "tgt_ids", 1).cpu()
        tgt_in = torch.cat([torch.tensor([BOS]), tgt[:-1]])[None].to(src.device)
        _, weights = self.forward_with_attention(src, torch.tensor([src.shape[1]]), tgt_in)
        return weights[0].cpu()

    @torch.no_grad()
    def greedy_with_attention(self, src_ids, max_len: int | None = None) -> tuple[list[int], torch.Tensor]:
        """The model's greedy translation of one sentence (ids, without ``<eos>``) and the
        (len(ids), len(src_ids)) weights it used for them (on the CPU). ``max_len`` counts
        generated tokens (default: twice the source length plus 10)."""
        src = self.one_source(src_ids)
        state = self.start(src, torch.tensor([src.shape[1]]))
        token, ids, rows = torch.tensor([BOS], device=src.device), [], []
        for _ in range(max_len or 2 * src.shape[1] + 10):
            logits, state = self.step(token, state)
            token = logits.argmax(-1)
            if int(token) == EOS:
                break
            ids.append(int(token))
            rows.append(state.weights[0].cpu())
        return ids, torch.stack(rows) if rows else torch.zeros(0, src.shape[1])
