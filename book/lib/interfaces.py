"""The contracts the book's models keep, written down once: what a new model must implement to
work with the trainers, the decoders and the plots of the earlier chapters.

These are ``typing.Protocol`` classes: a class meets one by having its methods and attributes,
without inheriting from it, and ``isinstance(model, Translator)`` checks that they are there
(``tests/test_contracts.py`` holds every model of the book to its contract, and checks the
behaviour too).

=================  ======================================================================
contract           kept by
=================  ======================================================================
RecurrentLayer     chapters 2-3: ``RNNScratch``, ``LSTMScratch``, ``GRUScratch``,
                   ``Bidirectional``, ``Stacked``; PyTorch's ``nn.RNN`` / ``nn.LSTM`` /
                   ``nn.GRU`` built with ``batch_first=True``
NextLogProbs       what :func:`seqbook.decoding.greedy`, ``beam_search`` and ``sample`` call
LanguageModel      chapters 1-2: ``NGramLM``, ``RecurrentLM`` (their ``sample`` is
                   :func:`seqbook.decoding.sample` over ``next_log_probs_fn()``)
DecoderState       what a translator carries from one decoder step to the next
Translator         chapters 4-6: ``Seq2Seq``, ``AttentionSeq2Seq``, ``Transformer``;
                   :class:`seqbook.translator.StepwiseTranslator` supplies
                   ``forward_scheduled`` and ``next_log_probs_fn`` from ``start``/``step``
ShowsAttention     chapters 5-6: ``AttentionSeq2Seq``, ``Transformer`` (alignment heatmaps)
=================  ======================================================================

A chapter-7 decoder-only language model (a GPT) needs only ``next_log_probs_fn()``, returning a
:class:`NextLogProbs`, to be sampled with :func:`seqbook.decoding.sample` and searched with
greedy and beam search; a new translation model needs ``forward``, ``start`` and ``step`` and a
state with ``select``/``cat``, and inherits the rest from ``StepwiseTranslator``.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

import torch

__all__ = ["RecurrentLayer", "NextLogProbs", "LanguageModel", "DecoderState", "Translator", "ShowsAttention"]


@runtime_checkable
class RecurrentLayer(Protocol):
    """``layer(X, state=None) -> (outputs, final_state)``.

    ``X`` (batch, time, input_size) floats; ``outputs`` (batch, time, hidden_size), or
    ``2 * hidden_size`` for a bidirectional layer (which then has ``bidirectional = True``);
    ``state`` None (zeros) or what the layer returned last: a tensor, or a tuple such as the
    LSTM's ``(h, c)``. Callers never look inside a state; they only pass it back in."""

    input_size: int
    hidden_size: int

    def __call__(self, X: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]: ...


@runtime_checkable
class NextLogProbs(Protocol):
    """``next_log_probs(prefixes) -> log_probs``: ``prefixes`` an int64 tensor (k, t) of k prefixes
    of the same length (for a translator each starts with ``<bos>``), the answer a float tensor
    (k, |V|) whose row i holds ``log p(next token | prefix i)`` (log-probabilities, not logits)."""

    def __call__(self, prefixes: torch.Tensor) -> torch.Tensor: ...


@runtime_checkable
class LanguageModel(Protocol):
    """A model of ``p(x_{t+1} | x_1..x_t)`` over token ids that decoding can sample from."""

    def next_log_probs_fn(self) -> NextLogProbs: ...


@runtime_checkable
class DecoderState(Protocol):
    """What a translator carries between decoder steps, for a batch of sentences: ``select(rows)``
    keeps some of them (a list or tensor of row indices), ``cat(states)`` stacks states along the
    batch. A NamedTuple of tensors with the batch first, such as
    :class:`seqbook.attention_model.AttentionState`, is the simplest way to have both."""

    def select(self, rows) -> DecoderState: ...

    @staticmethod
    def cat(states: Sequence[DecoderState]) -> DecoderState: ...


@runtime_checkable
class Translator(Protocol):
    """A sequence-to-sequence model over padded batches of ids (``<pad>`` = 0, ``<bos>`` = 1).

    - ``forward(src (batch, src_len), src_lengths (batch,), tgt_in (batch, tgt_len))`` -> logits
      (batch, tgt_len, |V_tgt|), teacher forcing: position t scores the token after ``tgt_in[:, t]``;
    - ``start(src, src_lengths) -> state``: encode the source;
    - ``step(tokens (batch,), state) -> (logits (batch, |V_tgt|), state)``: one decoder step;
    - ``forward_scheduled(src, src_lengths, tgt_in, teacher_forcing, gen)``: scheduled sampling;
    - ``next_log_probs_fn(src_ids)``: a :class:`NextLogProbs` for one source sentence.

    ``step`` after ``start``, fed ``tgt_in`` one column at a time, must give the logits of
    ``forward``: that is what :func:`seqbook.translator.greedy_batch` and beam search rely on."""

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor: ...

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor) -> DecoderState: ...

    def step(self, tokens: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState]: ...

    def forward_scheduled(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor,
                          teacher_forcing: float, gen: torch.Generator) -> torch.Tensor: ...

    def next_log_probs_fn(self, src_ids) -> NextLogProbs: ...


@runtime_checkable
class ShowsAttention(Protocol):
    """A translator that can show where it looks: ``attention_for(src_ids, tgt_ids)`` -> the
    (len(tgt_ids), len(src_ids)) weights on the CPU under teacher forcing, row j the weights used
    to predict ``tgt_ids[j]`` (``tgt_ids`` without ``<bos>``/``<eos>``)."""

    def attention_for(self, src_ids, tgt_ids) -> torch.Tensor: ...
