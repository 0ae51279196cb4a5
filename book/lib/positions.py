"""Where a token is: the sine/cosine position encoding of Vaswani et al. (2017) and its rivals.

Self-attention treats its input as a set: permute the tokens and the outputs are permuted the
same way. Order enters only through a position signal added to the token embeddings. The paper's
signal is fixed::

    PE(pos, 2i)     = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model))

Each pair of columns ``(2i, 2i+1)`` is a point on a circle turning with angular frequency
``w_i = 10000^(-2i / d_model)``, so moving ``k`` positions on is a rotation by ``k w_i`` in
every pair: ``PE(pos + k) = PE(pos) @ R_k`` for a block-diagonal ``R_k`` that does not depend on
``pos`` (:func:`rotation_matrix`; row vectors, as ``PE`` stores one position per row).

Three interchangeable modules add a position signal to ``x (batch, time, d_model)`` with the
same call, ``positions(x) -> x + P[:time]``, so a chapter can swap them (Vaswani et al. 2017,
Table 3 row E, compare sinusoids with learned embeddings): :class:`SinusoidalPositions`,
:class:`LearnedPositions` and :class:`NoPositions`. :func:`make_positions` builds one by name.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import checks

__all__ = ["positional_encoding", "frequencies", "rotation_matrix", "SinusoidalPositions",
           "LearnedPositions", "NoPositions", "make_positions", "POSITION_KINDS"]

BASE = 10000.0  # the paper's wavelength scale: wavelengths run from 2*pi to 10000 * 2*pi


def _check_d_model(d_model) -> int:
    checks.positive_int(d_model, "d_model")
    if d_model % 2:
        raise ValueError(f"expected an even d_model (the encoding pairs a sine with a cosine "
                         f"column for each frequency), got {d_model}")
    return d_model


def frequencies(d_model: int, base: float = BASE) -> torch.Tensor:
    """The ``d_model / 2`` angular frequencies ``w_i = base^(-2i / d_model)``, ``i = 0, 1, ...``
    (float64, from 1 down to nearly ``1 / base``)."""
    _check_d_model(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return base ** (-two_i / d_model)


def positional_encoding(max_len: int, d_model: int, base: float = BASE,
                        dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The sine/cosine table ``PE`` of shape ``(max_len, d_model)``: row ``pos`` encodes position
    ``pos = 0, 1, ...``; even columns hold sines, odd columns cosines (computed in float64)."""
    checks.positive_int(max_len, "max_len")
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * frequencies(d_model, base)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.to(dtype)


def rotation_matrix(k: int, d_model: int, base: float = BASE,
                    dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The ``(d_model, d_model)`` matrix ``R_k`` with ``PE(pos + k) = PE(pos) @ R_k`` for every
    ``pos`` (``PE(pos)`` a row vector). It is block-diagonal; the block of frequency ``w`` is::

        [[ cos(k w), -sin(k w)],
         [ sin(k w),  cos(k w)]]

    because ``sin(w(pos+k)) = sin(w pos) cos(k w) + cos(w pos) sin(k w)`` and
    ``cos(w(pos+k)) = cos(w pos) cos(k w) - sin(w pos) sin(k w)``. ``k`` may be negative
    (``R_{-k}`` is the transpose, and the inverse, of ``R_k``).
    """
    checks.integer(k, "offset k")
    angles = k * frequencies(d_model, base)
    cos, sin = torch.cos(angles), torch.sin(angles)
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    even = torch.arange(0, d_model, 2)
    R[even, even], R[even, even + 1] = cos, -sin
    R[even + 1, even], R[even + 1, even + 1] = sin, cos
    return R.to(dtype)


def _check_input(x, d_model: int, max_len: int) -> torch.Tensor:
    checks.float_tensor(x, "the embeddings", f"(batch, time, {d_model})", (3,), d_model)
    if x.shape[1] > max_len:
        raise ValueError(f"expected at most max_len = {max_len} positions, got {x.shape[1]}; "
                         "build the positions module with a larger max_len")
    return x


class SinusoidalPositions(nn.Module):
    """``x (batch, time, d_model) -> x + PE[:time]``; no parameters (the table is a buffer that
    is not saved in the state dict, since it can always be recomputed)."""

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        self.d_model, self.max_len = _check_d_model(d_model), checks.positive_int(max_len, "max_len")
        self.register_buffer("table", positional_encoding(max_len, d_model), persistent=False)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _check_input(x, self.d_model, self.max_len)
        return x + self.table[:x.shape[1]].to(x.dtype)


class LearnedPositions(nn.Module):
    """``x (batch, time, d_model) -> x + P[:time]`` with ``P`` a trained ``(max_len, d_model)``
    table, initialised with N(0, 1/2) entries (the mean square of a sine/cosine entry), so it
    starts at the same scale as :class:`SinusoidalPositions`. A position never seen in training
    keeps its random row: unlike the sinusoids, it cannot extrapolate."""

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        self.d_model, self.max_len = checks.positive_ints(d_model=d_model, max_len=max_len)
        self.table = nn.Parameter(torch.empty(max_len, d_model))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.table, std=math.sqrt(0.5))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _check_input(x, self.d_model, self.max_len)
        return x + self.table[:x.shape[1]]


class NoPositions(nn.Module):
    """``x -> x``: the control, with which a Transformer sees its input as a bag of tokens."""

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        self.d_model, self.max_len = checks.positive_ints(d_model=d_model, max_len=max_len)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _check_input(x, self.d_model, self.max_len)


POSITION_KINDS = {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions,
                  "none": NoPositions}


def make_positions(kind: str, d_model: int, max_len: int = 512) -> nn.Module:
    """A positions module by name: ``"sinusoidal"``, ``"learned"`` or ``"none"``."""
    return POSITION_KINDS[checks.one_of(kind, POSITION_KINDS, "positions")](d_model, max_len)
