"""Bidirectional and stacked recurrent layers, and a task where the label needs the future.

:class:`Bidirectional` runs one layer left to right and another right to left and concatenates
their outputs, so the output at step ``t`` depends on the whole sequence (Schuster & Paliwal
1997). :class:`Stacked` feeds each layer's output sequence to the next layer. Both wrap any
layers with the book's contract ``layer(X, state) -> (outputs, final_state)`` (scratch or
PyTorch's batch-first modules) and have ``from_torch`` for ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN``
built with ``bidirectional=True`` or ``num_layers > 1``.

:func:`negation_task` makes sentences like ``the food was good and fresh here not``: the label of
the adjective is its polarity, flipped when ``not`` comes LATER in the sentence. A left-to-right
model has to label the adjective before it has seen whether ``not`` follows, so it can do no
better than a coin flip on it; a bidirectional one sees both sides.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from .device import pick_device
from .progress import progress
from .seeding import numpy_rng
from .vocab import Vocab

IGNORE = -100  # label of positions that carry no label (cross_entropy's ignore_index)
FILLERS = ["the", "food", "service", "was", "is", "really", "quite", "and", "here", "today", "so", "very"]
POSITIVE = ["good", "great", "tasty", "fresh"]
NEGATIVE = ["bad", "awful", "bland", "stale"]
NOT = "not"


# -- the task ------------------------------------------------------------------------------
def negation_vocab() -> Vocab:
    """The task's 21 words, with no ``<unk>`` (an unknown word is an error)."""
    return Vocab(FILLERS + POSITIVE + NEGATIVE + [NOT], unknown=False)


def negation_task(n: int, length: int = 12, seed: int = 0, p_not: float = 0.5, device=None):
    """``n`` sentences of ``length`` words, each with one adjective in its first half and, with
    probability ``p_not``, the word ``not`` somewhere after it.

    Returns ``tokens (n, length)`` int64, ``labels (n, length)`` int64 (1 = the adjective means
    positive, 0 = negative, :data:`IGNORE` elsewhere) and ``negated (n,)`` bool.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"expected a positive integer n, got {n!r}")
    if isinstance(length, bool) or not isinstance(length, int) or length < 6:
        raise ValueError(f"expected an integer length >= 6, got {length!r}")
    if not 0 <= p_not <= 1:
        raise ValueError(f"expected p_not between 0 and 1, got {p_not!r}")
    vocab = negation_vocab()
    rng = numpy_rng(seed)
    fillers = torch.tensor(vocab.encode(FILLERS))
    adjectives = torch.tensor(vocab.encode(POSITIVE + NEGATIVE))
    tokens = fillers[torch.from_numpy(rng.integers(0, len(FILLERS), (n, length)))]
    where = torch.from_numpy(rng.integers(0, length // 2, n))
    which = torch.from_numpy(rng.integers(0, len(adjectives), n))
    positive = which < len(POSITIVE)
    negated = torch.from_numpy(rng.random(n) < p_not)
    # "not" goes at least two words after the adjective, anywhere up to the end.
    gap = torch.from_numpy(rng.random(n))
    not_at = where + 2 + (gap * (length - where - 2).double()).long()
    rows = torch.arange(n)
    tokens[rows, where] = adjectives[which]
    tokens[rows[negated], not_at[negated]] = vocab.id_of(NOT)
    labels = torch.full((n, length), IGNORE, dtype=torch.int64)
    labels[rows, where] = (positive ^ negated).long()
    device = device or torch.device("cpu")
    return tokens.to(device), labels.to(device), negated.to(device)


# -- wrappers around one-direction, one-layer layers ------------------------------------------
def _one_layer(module: nn.Module, layer: int, reverse: bool) -> nn.Module:
    """A one-layer, one-direction, batch-first copy of layer ``layer`` (direction ``reverse``)."""
    suffix = f"_l{layer}" + ("_reverse" if reverse else "")
    input_size = module.input_size if layer == 0 else module.hidden_size * (2 if module.bidirectional else 1)
    kwargs = {"nonlinearity": module.nonlinearity} if isinstance(module, nn.RNN) else {}
    single = type(module)(input_size, module.hidden_size, batch_first=True, bias=module.bias, **kwargs)
    single = single.to(device=module.weight_ih_l0.device, dtype=module.weight_ih_l0.dtype)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh") + (("bias_ih", "bias_hh") if module.bias else ()):
            getattr(single, name + "_l0").copy_(getattr(module, name + suffix))
    return single


def _scratch_class(module: nn.Module):
    from .gated import GRUScratch, LSTMScratch
    from .rnn import RNNScratch

    for torch_class, scratch in ((nn.LSTM, LSTMScratch), (nn.GRU, GRUScratch), (nn.RNN, RNNScratch)):
        if type(module) is torch_class:
            return scratch
    raise TypeError(f"expected an nn.LSTM, nn.GRU or nn.RNN, got {type(module).__name__}")


def _check_torch(module: nn.Module) -> None:
    _scratch_class(module)
    if not module.batch_first:
        raise ValueError(f"expected a batch-first module: build it with {type(module).__name__}(..., batch_first=True)")
    if getattr(module, "proj_size", 0):
        raise ValueError("expected an nn.LSTM without a projection (proj_size=0)")


class Bidirectional(nn.Module):
    """Two layers over the same sequence, one reading it left to right, one right to left.

    ``outputs[:, t]`` is ``[forward output at t, backward output at t]``: shape
    ``(batch, time, 2 * hidden)``. The final state is the pair ``(forward state, backward state)``;
    the backward layer's final state is its state after reading the FIRST step.
    """

    bidirectional = True  # the output at t has read the steps after t (a language model refuses it)

    def __init__(self, forward_layer: nn.Module, backward_layer: nn.Module):
        super().__init__()
        if forward_layer.hidden_size != backward_layer.hidden_size or \
                forward_layer.input_size != backward_layer.input_size:
            raise ValueError("expected two layers of the same input and hidden sizes, got "
                             f"({forward_layer.input_size}, {forward_layer.hidden_size}) and "
                             f"({backward_layer.input_size}, {backward_layer.hidden_size})")
        self.forward_layer, self.backward_layer = forward_layer, backward_layer
        self.input_size, self.hidden_size = forward_layer.input_size, forward_layer.hidden_size

    @classmethod
    def from_torch(cls, module: nn.Module) -> "Bidirectional":
        """Scratch copies of both directions of a one-layer ``bidirectional=True`` module."""
        _check_torch(module)
        if not module.bidirectional or module.num_layers != 1:
            raise ValueError("expected a module built with bidirectional=True and num_layers=1")
        scratch = _scratch_class(module)
        return cls(scratch.from_torch(_one_layer(module, 0, False)),
                   scratch.from_torch(_one_layer(module, 0, True)))

    def forward(self, X: torch.Tensor, state=None):
        """``X (batch, time, input)`` -> ``(outputs (batch, time, 2 * hidden), (state_fwd, state_bwd))``."""
        fwd_state, bwd_state = (None, None) if state is None else state
        out_f, fwd_state = self.forward_layer(X, fwd_state)
        out_b, bwd_state = self.backward_layer(X.flip(1), bwd_state)
        return torch.cat([out_f, out_b.flip(1)], dim=-1), (fwd_state, bwd_state)


def _output_size(layer: nn.Module) -> int:
    return layer.hidden_size * (2 if isinstance(layer, Bidirectional) else 1)


class Stacked(nn.Module):
    """Layers applied one after the other: layer ``k`` reads the output sequence of layer ``k - 1``.

    With ``residual=True`` each layer's input is added to its output (a residual connection,
    as between the stacked LSTM layers of Wu et al. 2016): ``H_k = H_{k-1} + layer_k(H_{k-1})``,
    so every layer must output as many features as it reads. The final state is a tuple with
    one state per layer."""

    def __init__(self, layers, residual: bool = False):
        super().__init__()
        layers = list(layers)
        if not layers:
            raise ValueError("expected at least one layer")
        for k in range(1, len(layers)):
            below = _output_size(layers[k - 1])
            if layers[k].input_size != below:
                raise ValueError(f"expected layer {k} to take input_size {below} (the output of layer {k - 1}), "
                                 f"got {layers[k].input_size}")
        if residual:
            for k, layer in enumerate(layers):
                if _output_size(layer) != layer.input_size:
                    raise ValueError(f"a residual connection adds a layer's input to its output: expected layer "
                                     f"{k} to output as many features as it reads ({layer.input_size}), "
                                     f"got {_output_size(layer)}")
        self.layers = nn.ModuleList(layers)
        self.residual = bool(residual)
        self.input_size, self.hidden_size = layers[0].input_size, layers[-1].hidden_size

    @property
    def bidirectional(self) -> bool:
        """True when any layer reads right to left too (its outputs then depend on later steps)."""
        return any(getattr(layer, "bidirectional", False) for layer in self.layers)

    @classmethod
    def from_torch(cls, module: nn.Module) -> "Stacked":
        """Scratch copies of every layer (and direction) of a multi-layer torch module."""
        _check_torch(module)
        scratch = _scratch_class(module)
        layers = []
        for k in range(module.num_layers):
            fwd = scratch.from_torch(_one_layer(module, k, False))
            layers.append(Bidirectional(fwd, scratch.from_torch(_one_layer(module, k, True)))
                          if module.bidirectional else fwd)
        return cls(layers)

    def forward(self, X: torch.Tensor, state=None):
        """``X (batch, time, input)`` -> ``(outputs of the top layer, tuple of per-layer states)``."""
        states = [None] * len(self.layers) if state is None else list(state)
        if len(states) != len(self.layers):
            raise ValueError(f"expected one state per layer ({len(self.layers)}), got {len(states)}")
        finals = []
        for layer, s in zip(self.layers, states):
            out, s = layer(X, s)
            X = X + out if self.residual else out
            finals.append(s)
        return X, tuple(finals)


# -- a tagger and its training --------------------------------------------------------------------
KINDS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


class Tagger(nn.Module):
    """Word ids ``(batch, time)`` -> class scores at every position ``(batch, time, n_classes)``,
    through an embedding, a (possibly bidirectional, possibly stacked) recurrent layer and a
    linear readout."""

    def __init__(self, vocab_size: int, kind: str = "gru", hidden_size: int = 32, embedding_dim: int = 16,
                 bidirectional: bool = False, num_layers: int = 1, n_classes: int = 2):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"expected kind to be one of {sorted(KINDS)}, got {kind!r}")
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.recurrent = KINDS[kind](embedding_dim, hidden_size, num_layers=num_layers, batch_first=True,
                                     bidirectional=bidirectional)
        self.readout = nn.Linear(hidden_size * (2 if bidirectional else 1), n_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.int64:
            got = (f"shape {tuple(tokens.shape)} and dtype {tokens.dtype}" if isinstance(tokens, torch.Tensor)
                   else type(tokens).__name__)
            raise ValueError(f"expected token ids of shape (batch, time) and dtype torch.int64, got {got}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise ValueError(f"expected token ids in 0..{self.vocab_size - 1}, got ids from "
                             f"{int(tokens.min())} to {int(tokens.max())}")
        outputs, _ = self.recurrent(self.embedding(tokens))
        return self.readout(outputs)


@torch.no_grad()
def tag_accuracy(model: nn.Module, tokens: torch.Tensor, labels: torch.Tensor, mask=None) -> float:
    """Accuracy over the labelled positions (those not :data:`IGNORE`), optionally only in the
    sentences where ``mask`` (batch,) is true."""
    was = model.training
    model.eval()
    pred = model(tokens).argmax(-1)
    model.train(was)
    keep = labels != IGNORE
    if mask is not None:
        keep = keep & mask[:, None]
    return float((pred[keep] == labels[keep]).float().mean())


def train_tagger(model: nn.Module, steps: int = 300, batch: int = 64, length: int = 12, lr: float = 1e-2,
                 seed: int = 0, n_test: int = 2000, device=None, desc: str = "tagger") -> dict:
    """Train ``model`` on fresh batches of :func:`negation_task`; returns test accuracies
    (``all``, on ``negated`` and ``plain`` sentences), the loss ``curve`` and ``seconds``."""
    device = device or pick_device()
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    curve, start = [], time.perf_counter()
    for step in progress(range(steps), desc=desc):
        tokens, labels, _ = negation_task(batch, length, seed=seed * 1_000_003 + step + 1, device=device)
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                           ignore_index=IGNORE)
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
    seconds = time.perf_counter() - start
    tokens, labels, negated = negation_task(n_test, length, seed=10_000_019 + seed, device=device)
    return {"all": tag_accuracy(model, tokens, labels), "negated": tag_accuracy(model, tokens, labels, negated),
            "plain": tag_accuracy(model, tokens, labels, ~negated), "curve": curve, "seconds": seconds}
