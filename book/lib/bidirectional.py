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

from . import checks
from .device import pick_device
from .gated import KINDS, GRUScratch, LSTMScratch
from .progress import progress
from .rnn import RNNScratch
from .seeding import numpy_rng, seeded
from .vocab import Vocab

IGNORE = -100  # label of positions that carry no label (cross_entropy's ignore_index)
FILLER_WORDS = ["the", "food", "service", "was", "is", "really", "quite", "and", "here", "today", "so", "very"]
POSITIVE = ["good", "great", "tasty", "fresh"]
NEGATIVE = ["bad", "awful", "bland", "stale"]
NOT = "not"


# -- the task ------------------------------------------------------------------------------
def negation_vocab() -> Vocab:
    """The task's 21 words, with no ``<unk>`` (an unknown word is an error)."""
    return Vocab(FILLER_WORDS + POSITIVE + NEGATIVE + [NOT], unknown=False)


def negation_task(n: int, length: int = 12, seed: int = 0, p_not: float = 0.5, device=None):
    """``n`` sentences of ``length`` words, each with one adjective in its first half and, with
    probability ``p_not``, the word ``not`` somewhere after it.

    Returns ``tokens (n, length)`` int64, ``labels (n, length)`` int64 (1 = the adjective means
    positive, 0 = negative, :data:`IGNORE` elsewhere) and ``negated (n,)`` bool.
    """
    checks.positive_int(n, "n")
    checks.integer(length, "length", 6)
    checks.number(p_not, "p_not", at_least=0, at_most=1)
    vocab = negation_vocab()
    rng = numpy_rng(seed)
    fillers = torch.tensor(vocab.encode(FILLER_WORDS))
    adjectives = torch.tensor(vocab.encode(POSITIVE + NEGATIVE))
    tokens = fillers[torch.from_numpy(rng.integers(0, len(FILLER_WORDS), (n, length)))]
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


SCRATCH = {nn.LSTM: LSTMScratch, nn.GRU: GRUScratch, nn.RNN: RNNScratch}


def _scratch_class(module: nn.Module):
    """The scratch class that copies a batch-first ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN``."""
    checks.torch_module(module, tuple(SCRATCH))
    checks.built_with([("batch_first=True", not module.batch_first),
                       ("proj_size=0", getattr(module, "proj_size", 0) != 0)])
    return SCRATCH[type(module)]


class Bidirectional(nn.Module):
    """Two layers over the same sequence, one reading it left to right, one right to left.

    ``outputs[:, t]`` is ``[forward output at t, backward output at t]``: shape
    ``(batch, time, 2 * hidden)``. The final state is the pair ``(forward state, backward state)``;
    the backward layer's final state is its state after reading the FIRST step. The backward
    layer reads the whole time axis reversed, padding included: use it on equal-length sequences.
    """

    bidirectional = True  # the output at t has read the steps after t (a language model refuses it)

    def __init__(self, forward_layer: nn.Module, backward_layer: nn.Module):
        super().__init__()
        sizes = [(layer.input_size, layer.hidden_size) for layer in (forward_layer, backward_layer)]
        if sizes[0] != sizes[1]:
            raise ValueError(f"expected two layers of the same input and hidden sizes, got {sizes[0]} and {sizes[1]}")
        self.forward_layer, self.backward_layer = forward_layer, backward_layer
        self.input_size, self.hidden_size = forward_layer.input_size, forward_layer.hidden_size

    @classmethod
    def from_torch(cls, module: nn.Module) -> "Bidirectional":
        """Scratch copies of both directions of a one-layer ``bidirectional=True`` module."""
        scratch = _scratch_class(module)
        checks.built_with([("bidirectional=True", not module.bidirectional),
                           ("num_layers=1", module.num_layers != 1)])
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
        """Scratch copies of every layer (and direction) of a multi-layer torch module. Dropout
        between the layers (``dropout=`` of the torch module) is not copied: the copy equals the
        module in ``eval()`` mode."""
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
class Tagger(nn.Module):
    """Word ids ``(batch, time)`` -> class scores at every position ``(batch, time, n_classes)``,
    through an embedding, a (possibly bidirectional, possibly stacked) recurrent layer and a
    linear readout. Parameters come from ``seed`` (None: from PyTorch's global generator)."""

    def __init__(self, vocab_size: int, kind: str = "gru", hidden_size: int = 32, embedding_dim: int = 16,
                 bidirectional: bool = False, num_layers: int = 1, n_classes: int = 2,
                 seed: int | None = None):
        super().__init__()
        checks.one_of(kind, KINDS, "kind")
        self.vocab_size = checks.positive_int(vocab_size, "vocab_size")
        with seeded(seed):
            self.embedding = nn.Embedding(vocab_size, embedding_dim)
            self.recurrent = KINDS[kind](embedding_dim, hidden_size, num_layers=num_layers, batch_first=True,
                                         bidirectional=bidirectional)
            self.readout = nn.Linear(hidden_size * (2 if bidirectional else 1), n_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens (batch, time)`` int64 -> scores ``(batch, time, n_classes)``."""
        checks.token_ids(tokens, "token ids", 2, self.vocab_size, allow_empty=True)
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
