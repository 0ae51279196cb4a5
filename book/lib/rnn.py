"""A one-layer recurrent network written from its equations.

At every step the hidden state is updated from the input and the previous state, with the
same weights at every step::

    h_t = phi(x_t W_xh + h_{t-1} W_hh + b_h)

``x_t`` is a row of shape (batch, input_size) and ``h_t`` a row of shape (batch, hidden_size),
so a whole batch moves through one step as two matrix products.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import checks
from .seeding import seeded

NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu}


class RNNScratch(nn.Module):
    """One recurrent layer, batch-first, from ``h_t = phi(x_t W_xh + h_{t-1} W_hh + b_h)``.

    Parameters (shapes): ``W_xh`` (input_size, hidden_size), ``W_hh`` (hidden_size, hidden_size),
    ``b_h`` (hidden_size,). They start uniform in ``[-1/sqrt(hidden), 1/sqrt(hidden)]`` as in
    ``torch.nn.RNN``, drawn from ``seed`` (None: from PyTorch's global generator).
    """

    def __init__(self, input_size: int, hidden_size: int, nonlinearity: str = "tanh",
                 seed: int | None = None):
        super().__init__()
        checks.positive_ints(input_size=input_size, hidden_size=hidden_size)
        self.nonlinearity = checks.one_of(nonlinearity, NONLINEARITIES, "nonlinearity")
        self.input_size, self.hidden_size = input_size, hidden_size
        self.phi = NONLINEARITIES[nonlinearity]
        bound = 1 / math.sqrt(hidden_size)

        def uniform(*shape):
            return nn.Parameter((torch.rand(*shape) * 2 - 1) * bound)

        with seeded(seed):
            self.W_xh = uniform(input_size, hidden_size)
            self.W_hh = uniform(hidden_size, hidden_size)
            self.b_h = uniform(hidden_size)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, nonlinearity={self.nonlinearity!r}"

    @classmethod
    def from_torch(cls, module: nn.RNN) -> "RNNScratch":
        """A copy of a one-layer, one-direction, batch-first ``torch.nn.RNN``.

        PyTorch stores ``weight_ih`` as (hidden, input) and applies ``x @ weight_ih.T``; it also
        keeps two biases, ``b_ih`` and ``b_hh``, which only ever appear as their sum."""
        checks.torch_module(module, nn.RNN)
        checks.built_with([(f"num_layers=1 (got {module.num_layers})", module.num_layers != 1),
                           ("bidirectional=False", module.bidirectional),
                           ("batch_first=True", not module.batch_first)],
                          "use one scratch layer per torch layer and direction")
        scratch = cls(module.input_size, module.hidden_size, module.nonlinearity)
        ref = module.weight_ih_l0
        scratch.to(device=ref.device, dtype=ref.dtype)
        with torch.no_grad():
            scratch.W_xh.copy_(module.weight_ih_l0.T)
            scratch.W_hh.copy_(module.weight_hh_l0.T)
            if module.bias:
                scratch.b_h.copy_(module.bias_ih_l0 + module.bias_hh_l0)
            else:
                scratch.b_h.zero_()
        return scratch

    def _initial_state(self, X: torch.Tensor, h0) -> torch.Tensor:
        """``h0``, checked, or zeros: (batch, hidden)."""
        if h0 is None:
            return X.new_zeros(X.shape[0], self.hidden_size)
        return checks.state_tensor(h0, "the initial state h0", (X.shape[0], self.hidden_size), "(batch, hidden)")

    # -- the recurrence ----------------------------------------------------------------------
    def step(self, x_t: torch.Tensor, h_prev: torch.Tensor) -> torch.Tensor:
        """One step for a batch: (batch, input), (batch, hidden) -> (batch, hidden)."""
        return self.phi(x_t @ self.W_xh + h_prev @ self.W_hh + self.b_h)

    def unroll(self, X: torch.Tensor,
               h0: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The states ``[h_1, ..., h_T]``, each (batch, hidden), in the autograd graph.

        ``h_{t+1}`` is computed from the very tensor ``h_t`` in this list, so gradients
        with respect to these tensors (see :mod:`seqbook.gradients`) flow along the
        recurrence."""
        checks.sequence(X, self.input_size)
        h = self._initial_state(X, h0)
        states = []
        for t in range(X.shape[1]):
            h = self.step(X[:, t], h)
            states.append(h)
        return states

    def forward(self, X: torch.Tensor, h0: torch.Tensor | None = None):
        """``X`` (batch, time, input_size), ``h0`` (batch, hidden) or None for zeros ->
        ``(outputs (batch, time, hidden), h_T (batch, hidden))``."""
        states = self.unroll(X, h0)
        return torch.stack(states, dim=1), states[-1]
