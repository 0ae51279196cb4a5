"""A recurrent language model: tokens -> vectors -> any recurrent layer -> scores over the vocabulary.

The recurrent layer can be any module whose forward is ``layer(X, state) -> (outputs, state)`` with
``X`` (batch, time, input) and ``outputs`` (batch, time, hidden): :class:`seqbook.rnn.RNNScratch`,
the LSTM and GRU of chapter 3 (whose state may be a tuple such as ``(h, c)``), or PyTorch's
batch-first ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU``. The model never looks inside the state; it
only passes it back in, so every kind works, as long as it reads left to right: a bidirectional
layer is refused, because its backward half has already read the token it is asked to predict.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import checks
from .decoding import sample
from .interfaces import NextLogProbs
from .seeding import seeded


def _layer_sizes(layer: nn.Module) -> tuple[int, int]:
    """(input size, output features) of a recurrent layer, read from its attributes."""
    for name in ("input_size", "hidden_size"):
        if not isinstance(getattr(layer, name, None), int):
            raise TypeError(f"expected a recurrent layer with an integer attribute {name!r} (like nn.RNN or "
                            f"RNNScratch), got {type(layer).__name__} without one")
    if getattr(layer, "batch_first", True) is False:
        raise ValueError(f"expected a batch-first layer: build it with {type(layer).__name__}(..., batch_first=True)")
    if getattr(layer, "bidirectional", False):
        raise ValueError("expected a left-to-right layer: a bidirectional layer's backward half has already read "
                         "the token the model must predict (on random tokens it reaches a perplexity far below "
                         "the vocabulary size, which no model of the past alone can); use bidirectional layers "
                         "to label a whole sequence, as seqbook.bidirectional.Tagger does, not in a language model")
    return layer.input_size, getattr(layer, "proj_size", 0) or layer.hidden_size


class RecurrentLM(nn.Module):
    """``p(x_{t+1} | x_1..x_t)`` from a recurrent layer's state at step ``t``.

    Each token id becomes a vector (a learned embedding of size ``embedding_dim``, or a one-hot
    vector of size ``vocab_size`` when ``embedding_dim`` is None), the layer runs over the
    sequence, and a linear layer turns every output into ``vocab_size`` logits. The embedding and
    the output layer are drawn from ``seed`` (None: from PyTorch's global generator); the layer
    comes already built.
    """

    def __init__(self, vocab_size: int, layer: nn.Module, embedding_dim: int | None = None,
                 seed: int | None = None):
        super().__init__()
        checks.integer(vocab_size, "vocab_size", 2)
        if not isinstance(layer, nn.Module):
            raise TypeError(f"expected the recurrent layer as an nn.Module, got {type(layer).__name__}")
        input_size, features = _layer_sizes(layer)
        expected = vocab_size if embedding_dim is None else embedding_dim
        if input_size != expected:
            what = (f"the vocabulary size {vocab_size} (one-hot inputs)" if embedding_dim is None
                    else f"embedding_dim={embedding_dim}")
            raise ValueError(f"expected a layer with input_size equal to {what}, got input_size={input_size}")
        self.vocab_size = vocab_size
        with seeded(seed):
            self.embedding = None if embedding_dim is None else nn.Embedding(vocab_size, embedding_dim)
            self.layer = layer
            self.output = nn.Linear(features, vocab_size)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """(batch, time) ids -> (batch, time, input) vectors."""
        if self.embedding is None:
            return F.one_hot(tokens, self.vocab_size).to(self.output.weight.dtype)
        return self.embedding(tokens)

    def forward(self, tokens: torch.Tensor, state=None):
        """``tokens`` (batch, time) int64 -> ``(logits (batch, time, vocab), final state)``.

        ``logits[:, t]`` scores the token that follows ``tokens[:, t]``."""
        checks.token_ids(tokens, "token ids", 2, self.vocab_size)
        return self._logits(tokens, state)

    def _logits(self, tokens: torch.Tensor, state=None):
        """:meth:`forward` for ids already checked."""
        outputs, state = self.layer(self.embed(tokens), state)
        return self.output(outputs), state

    def next_log_probs_fn(self) -> NextLogProbs:
        """``next_log_probs(prefixes (k, t)) -> (k, vocab_size)`` log-probabilities of the token
        after each prefix, for :mod:`seqbook.decoding`. The state after every prefix asked for is
        kept, so a prefix one token longer than a known one costs one step of the layer. Put the
        model in ``eval()`` mode first if it has dropout."""
        device, cache = self.output.weight.device, {}

        def after(prefix: tuple[int, ...]) -> torch.Tensor:
            if prefix not in cache:
                if prefix[:-1] in cache:  # one step from the known parent
                    logits, state = self._logits(torch.tensor([prefix[-1:]], device=device), cache[prefix[:-1]][1])
                else:
                    logits, state = self._logits(torch.tensor([prefix], device=device))
                cache[prefix] = (F.log_softmax(logits[0, -1].float(), dim=-1).cpu(), state)
            return cache[prefix][0]

        @torch.no_grad()
        def next_log_probs(prefixes: torch.Tensor) -> torch.Tensor:
            checks.token_ids(prefixes, "prefixes", 2, self.vocab_size)
            return torch.stack([after(tuple(row)) for row in prefixes.tolist()])

        return next_log_probs

    @torch.no_grad()
    def sample(self, prefix: list[int] | torch.Tensor, length: int, temperature: float = 1.0,
               seed: int = 0) -> list[int]:
        """``length`` ids drawn one at a time after ``prefix`` (a non-empty list of ids), by
        :func:`seqbook.decoding.sample`: each from ``softmax(logits / temperature)``, below 1
        sharper, above 1 flatter; ``temperature=0`` takes the most likely token every time.
        The draws come from a CPU generator seeded with ``seed``, so the same seed gives the
        same text on any device."""
        prefix = checks.as_token_ids(prefix, "prefix", 1).tolist()
        was_training = self.training
        self.eval()
        try:
            return sample(self.next_log_probs_fn(), prefix, length, temperature, seed)
        finally:
            self.train(was_training)
