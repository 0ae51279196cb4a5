"""Measuring how gradients travel back through time, and setting the recurrent matrix's scale.

Backpropagation through time multiplies one Jacobian per step::

    dh_T/dh_t = J_T J_{T-1} ... J_{t+1},   J_s = dh_s/dh_{s-1} = diag(phi'(a_s)) W_hh^T

so its norm is bounded by ``(gamma * sigma_max(W_hh)) ** (T - t)``, where ``gamma`` bounds
``|phi'|`` (1 for tanh). The functions here measure those norms with autograd, from the list of
per-step states a forward pass recorded (e.g. :meth:`seqbook.rnn.RNNScratch.unroll`; any list
of tensors that the computation really went through works, such as an LSTM's cell states).
"""

from __future__ import annotations

from typing import Sequence

import torch

from . import checks
from .seeding import generator


def _check_states(states) -> list[torch.Tensor]:
    """The per-step states a forward pass recorded: a non-empty list of (batch, hidden) tensors
    that are nodes of the autograd graph."""
    if isinstance(states, torch.Tensor) or not isinstance(states, (list, tuple)):
        raise TypeError("expected a list of per-step state tensors, each (batch, hidden), "
                        f"got {type(states).__name__} (a stacked output tensor is not on the gradient "
                        "path: record the states themselves, e.g. with RNNScratch.unroll)")
    if not states:
        raise ValueError("expected a non-empty list of per-step state tensors, got an empty one")
    for t, s in enumerate(states):
        checks.float_tensor(s, f"state {t}", "(batch, hidden)", (2,))
        if s.shape[0] != states[0].shape[0]:
            raise ValueError(f"expected every state to have batch size {states[0].shape[0]}, "
                             f"got {s.shape[0]} at step {t}")
        if not s.requires_grad:
            raise ValueError(f"state {t} does not require grad: record the states in a forward pass with "
                             "gradients enabled (not under torch.no_grad()) from parameters or an input "
                             "that require grad")
    return list(states)


def _check_target(states, target) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The checked states, and the target: the last state when ``target`` is None."""
    states = _check_states(states)
    target = states[-1] if target is None else target
    checks.float_tensor(target, "the target", f"({states[0].shape[0]}, out)", (2,))
    if target.shape[0] != states[0].shape[0]:
        raise ValueError(f"expected a target of shape ({states[0].shape[0]}, out), got {tuple(target.shape)}")
    return states, target


def _check_norm_options(ord, reduce) -> None:
    checks.one_of(reduce, ("mean", "none"), "reduce")
    checks.one_of(ord, (2, "fro"), "ord")  # spectral or Frobenius


def state_jacobians(states: Sequence[torch.Tensor],
                    target: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The Jacobians ``d target / d states[t]``, each (batch, out, hidden_t).

    ``target`` (batch, out) defaults to the last state, giving ``dh_T/dh_t``. Every
    row of the Jacobian comes from one backward pass, all of them batched together,
    so memory grows as out * batch * hidden * T. A state the target does not depend
    on gets a zero Jacobian.
    """
    states, target = _check_target(states, target)
    batch, out = target.shape
    # Row i of the identity, copied for every example, selects d target[:, i] / d state.
    rows = torch.eye(out, dtype=target.dtype, device=target.device)
    rows = rows.unsqueeze(1).expand(out, batch, out)
    grads = torch.autograd.grad(target, states, grad_outputs=rows,
                                is_grads_batched=True, retain_graph=True,
                                allow_unused=True)
    jacobians = []
    for s, g in zip(states, grads):
        if g is None:
            g = s.new_zeros(out, batch, s.shape[1])
        jacobians.append(g.transpose(0, 1))
    return jacobians


def state_jacobian_norms(states: Sequence[torch.Tensor],
                         target: torch.Tensor | None = None,
                         ord: int | str = 2, reduce: str = "mean") -> torch.Tensor:
    """``||d target / d states[t]||`` for each ``t``; target defaults to the last state.

    ``ord=2`` is the spectral norm (the largest singular value, the factor by which
    the Jacobian can stretch a gradient), ``"fro"`` the Frobenius norm. Returns shape
    (T,) averaged over the batch with ``reduce="mean"``, or (batch, T) with
    ``reduce="none"``; index ``t`` matches ``states``, so ``.flip(-1)`` orders the
    norms by distance ``T - t`` when the target is the last state.
    """
    _check_norm_options(ord, reduce)
    # In float64: the norm of a float32 matrix whose entries are all tiny can underflow
    # to 0 although no entry does (see loss_gradient_norms).
    Js = state_jacobians(states, target)
    norms = torch.stack([torch.linalg.matrix_norm(J.detach().double(), ord=ord)
                         for J in Js], dim=1).to(Js[0].dtype)
    return norms.mean(0) if reduce == "mean" else norms


def loss_gradient_norms(loss: torch.Tensor, states: Sequence[torch.Tensor], reduce: str = "mean") -> torch.Tensor:
    """``||dL/dh_t||`` (Euclidean norm over the hidden units) for every state ``h_t``.

    ``loss`` is a scalar. This is the gradient the loss actually sends to each step, the sum over
    every path from ``h_t`` to the loss. Shape (T,) with ``reduce="mean"`` (over the batch),
    (batch, T) with ``reduce="none"``."""
    states = _check_states(states)
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"expected a scalar loss tensor, got {checks.describe(loss)}")
    if loss.numel() != 1:
        raise ValueError(f"expected a scalar loss, got shape {tuple(loss.shape)}")
    checks.one_of(reduce, ("mean", "none"), "reduce")
    grads = torch.autograd.grad(loss, states, retain_graph=True, allow_unused=True)
    # The norm squares the entries: in float32, entries below about 1e-23 have squares that
    # underflow, and the norm reads 0 although every entry is non-zero. float64 does not.
    norms = torch.stack([(g if g is not None else torch.zeros_like(s)).detach().double().norm(dim=1)
                         for s, g in zip(states, grads)], dim=1).to(states[0].dtype)
    return norms.mean(0) if reduce == "mean" else norms


# -- the scale of the recurrent matrix -------------------------------------------------------
def _check_matrix(W, square: bool) -> torch.Tensor:
    checks.float_tensor(W, "the weight matrix", "(rows, columns)", (2,))
    if square and W.shape[0] != W.shape[1]:
        raise ValueError(f"expected a square matrix for a spectral radius, got shape {tuple(W.shape)} "
                         "(use the largest singular value for a rectangular one)")
    return W


def largest_singular_value(W: torch.Tensor) -> float:
    """``sigma_max(W)``: the most ``W`` can stretch any vector."""
    return float(torch.linalg.matrix_norm(_check_matrix(W, False).detach().double(), ord=2))


def spectral_radius(W: torch.Tensor) -> float:
    """The largest ``|eigenvalue|`` of a square ``W``: the long-run growth rate of ``W^k``."""
    return float(torch.linalg.eigvals(_check_matrix(W, True).detach().double()).abs().max())


def _rescale(W: torch.Tensor, current: float, value: float, what: str) -> torch.Tensor:
    checks.number(value, f"a finite {what}", at_least=0)
    if current == 0:
        raise ValueError(f"cannot rescale a matrix whose {what} is 0 to {value}")
    with torch.no_grad():
        W.mul_(value / current)
    return W


def set_largest_singular_value(W: torch.Tensor, value: float) -> torch.Tensor:
    """Scale ``W`` in place so that ``sigma_max(W) == value``; returns ``W``."""
    return _rescale(W, largest_singular_value(W), value, "largest singular value")


def set_spectral_radius(W: torch.Tensor, radius: float) -> torch.Tensor:
    """Scale a square ``W`` in place so that its spectral radius is ``radius``; returns ``W``."""
    return _rescale(W, spectral_radius(W), radius, "spectral radius")


def orthogonal_(W: torch.Tensor, scale: float = 1.0, seed: int = 0) -> torch.Tensor:
    """Fill a square ``W`` in place with ``scale`` times a random orthogonal matrix (every singular
    value, and every |eigenvalue|, equal to ``scale``); returns ``W``."""
    _check_matrix(W, True)
    A = torch.randn(W.shape, generator=generator(seed), dtype=torch.float64)
    Q, R = torch.linalg.qr(A)
    Q = Q * torch.sign(torch.diagonal(R))  # makes the draw uniform over orthogonal matrices
    with torch.no_grad():
        W.copy_(scale * Q)
    return W


# -- reading the measurements ------------------------------------------------------------------
def _by_distance(norms) -> torch.Tensor:
    try:
        norms = torch.as_tensor(norms, dtype=torch.float64).detach().cpu()
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"expected a 1-d sequence of norms ordered by distance, got {checks.describe(norms)}") from None
    if norms.dim() != 1 or norms.numel() < 2:
        raise ValueError(f"expected a 1-d sequence of at least two norms ordered by distance, got shape "
                         f"{tuple(norms.shape)}")
    return norms


def fit_exponential(norms_by_distance, skip: int = 0) -> tuple[float, float]:
    """``(c, r)`` of the least-squares fit ``log norm_k ~ log c + k log r``: the curve ``c * r**k``.

    ``norms_by_distance[k]`` is the norm ``k`` steps back; the first ``skip`` distances are left
    out (the start is often a transient). Zero norms (underflow) are left out too."""
    norms = _by_distance(norms_by_distance)
    k = torch.arange(norms.numel(), dtype=torch.float64)
    keep = (k >= skip) & (norms > 0) & torch.isfinite(norms)
    if keep.sum() < 2:
        raise ValueError("expected at least two positive, finite norms to fit a rate")
    x, y = k[keep], norms[keep].log()
    slope = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    intercept = y.mean() - slope * x.mean()
    return float(intercept.exp()), float(slope.exp())


def fit_rate(norms_by_distance, skip: int = 0) -> float:
    """The per-step factor ``r`` of the best fit ``norm_k ~ c * r**k`` (see :func:`fit_exponential`)."""
    return fit_exponential(norms_by_distance, skip)[1]


def effective_memory(norms_by_distance, fraction: float = 0.01) -> int:
    """How many steps back the signal stays at or above ``fraction`` of its value at distance 0:
    the first distance ``k`` where ``norm_k < fraction * norm_0``. If that never happens within
    the measured range, the range's length is returned (a lower bound)."""
    checks.number(fraction, "a fraction", above=0, below=1)
    norms = _by_distance(norms_by_distance)
    if not norms[0] > 0:
        raise ValueError(f"expected a positive norm at distance 0, got {float(norms[0])}")
    below = (norms < fraction * norms[0]).nonzero()
    return int(below[0, 0]) if below.numel() else int(norms.numel())
