"""Checkers for the exercises of chapter 2 (recurrent networks, backpropagation through time).

Every right answer is computed here from the exercise's data, never typed in, and each checker
tries the usual mistakes first, so that a wrong answer gets a hint that names the mistake.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from ..gradients import fit_rate, orthogonal_, state_jacobian_norms
from ..rnn import RNNScratch
from ..seeding import generator
from .core import Wrong, call, checker, close, match_typical, number, require_function

# -- the data of the exercises (the chapter's exercise texts state these numbers) --------
DIAGONAL, BPTT_STEPS, FLOAT32_STEPS = 0.5, 100, 150   # W_hh = 0.5 I, gradients through 100 / 150 steps
SHARING = dict(input_size=67, hidden_size=128, steps=64,  # one-hot characters, 128 units, 64 steps
               embedding_dim=64)                         # or a 64-dimensional embedding in front
DECAY = dict(scale=0.8, fraction=1e-6)                 # orthogonal W_hh scaled by 0.8; when below 1e-6?

__all__ = ["check_vanishing_gradient", "check_parameter_counts", "check_step_jacobian",
           "check_clip_by_global_norm", "check_decay_steps", "check_decay_measurement",
           "check_bptt", "check_sampler", "check_relu_rates", "RELU", "relu_decay_rates",
           "SAMPLING_PREFIX", "DIAGONAL", "BPTT_STEPS",
           "FLOAT32_STEPS", "SHARING", "DECAY", "DECAY_UNROLL", "BPTT_CASES"]


# -- exercise: the classic 0.5^100, and what float32 does with 0.5^150 -----------------------
@checker
def check_vanishing_gradient(after_100, float32_after_150) -> str:
    """``after_100``: the factor left of a gradient after 100 steps back through W_hh = 0.5 I
    (in the linear regime, tanh' = 1); ``float32_after_150``: what float32 gives for 0.5^150."""
    d, n, m = DIAGONAL, BPTT_STEPS, FLOAT32_STEPS
    value = number(after_100, "the factor after 100 steps", example="0.5 ** 100")
    match_typical(value, d ** n, [
        (d * n, f"that is 0.5 x 100. Each step multiplies by 0.5, so 100 steps multiply by 0.5^{n}."),
        (d ** (n - 1), f"that is 0.5^{n - 1}: {n} steps back means {n} Jacobians in the product."),
        (d ** (n + 1), f"that is 0.5^{n + 1}: {n} steps back means {n} Jacobians, not {n + 1}."),
        (n * math.log10(d), "that is the base-10 logarithm of the answer; give the factor itself."),
        (1 - d ** n, "that is how much is lost; the question asks what is left."),
    ], rel=1e-3, abs_=0.0, otherwise=f"Multiply the gradient by the Jacobian 0.5 I once per step, {n} times.")
    got = number(float32_after_150, "the float32 value of 0.5^150", example="0.0")
    exact = d ** m
    if got == 0.0:
        return (f"0.5^{n} = {d ** n:.4g}, and in float32 0.5^{m} = 2^-{m} is exactly 0: it is half of the "
                "smallest positive float32 (2^-149, about 1.4e-45), a tie that rounds to the even "
                "neighbour, 0. In backpropagation the factor multiplies dL/dh_T one step at a time, so "
                "where the gradient underflows depends on the size of dL/dh_T; once it does, it "
                "is not small but exactly 0.")
    if close(got, exact, rel=1e-3, abs_=0.0):
        raise Wrong(f"{got:.4g} is the exact value of 0.5^{m}, but float32 cannot hold it. Try "
                    f"torch.tensor(0.5) ** {m}, and compare with the smallest positive float32, 2^-149.")
    if close(got, 2.0 ** -149, rel=1e-3, abs_=0.0):
        raise Wrong("2^-149 is the smallest positive (subnormal) float32. 2^-150 lies exactly halfway "
                    "between it and 0: which way does a tie round?")
    if close(got, float(np.finfo(np.float32).tiny), rel=1e-3, abs_=0.0):
        raise Wrong("that is the smallest *normal* float32 (2^-126). Below it come the subnormals, down "
                    "to 2^-149; 2^-150 is smaller still.")
    raise Wrong(f"{got:.4g} is not what float32 gives for 0.5^{m}. Compute torch.tensor(0.5) ** {m}.")


# -- exercise: how many parameters does sharing across time save? ---------------------------
@checker
def check_parameter_counts(shared, unshared, embedded=None, break_even=None) -> str:
    """Parameters of one RNN layer (W_xh, W_hh, b_h) shared over all steps, and of the
    counterfactual with its own W_xh, W_hh and b_h at every one of the ``steps`` steps.
    ``embedded`` (optional): the embedding table and the shared layer together, when an
    ``embedding_dim``-dimensional embedding replaces the one-hot inputs. ``break_even``
    (optional, after ``embedded``): the largest embedding size that saves parameters."""
    d, h, T = SHARING["input_size"], SHARING["hidden_size"], SHARING["steps"]
    right = d * h + h * h + h
    value = number(shared, "the shared parameter count", example="10 * 20 + 30")
    match_typical(value, right, [
        (d * h + h * h, "you left out the bias b_h (one number per hidden unit)."),
        (h * h + h, "you left out the input weights W_xh (input_size x hidden_size)."),
        (d * h + h, "you left out the recurrent weights W_hh (hidden_size x hidden_size)."),
        (d * h + h * h + 2 * h, "that counts two biases, as torch.nn.RNN stores them; the equation has one, "
                                "b_h (PyTorch's two only ever appear as their sum)."),
    ], rel=1e-9, abs_=0.0, otherwise="Count the entries of W_xh, W_hh and b_h.")
    value = number(unshared, "the unshared parameter count", example="64 * 1000")
    match_typical(value, T * right, [
        (T * (d * h + h * h), "you left out the bias of each step."),
        (T * h * h + d * h + h, "only W_hh is repeated there; unshared means every step has its own "
                                "W_xh, W_hh and b_h."),
        (right ** T, "copies add up, they do not multiply: T steps with their own weights have T times as many."),
    ], rel=1e-9, abs_=0.0, otherwise=f"Each of the {T} steps has its own copy of all {right} parameters.")
    verdict = (f"{right} shared against {T * right} unshared: {T} times fewer at {T} steps; "
               f"the shared count is the same for any length.")
    if embedded is None:
        return verdict
    e = SHARING["embedding_dim"]
    with_embedding = d * e + e * h + h * h + h
    value = number(embedded, "the parameter count with an embedding", example="67 * 64 + 64 * 128")
    match_typical(value, with_embedding, [
        (e * h + h * h + h, "you left out the embedding table itself (vocabulary x embedding_dim)."),
        (d * e + d * h + h * h + h, "W_xh now reads the embedding, not the one-hot vector: it is "
                                    "embedding_dim x hidden_size."),
        (d * e + e * h + h * h + 2 * h, "that counts two biases, as torch.nn.RNN stores them; the equation "
                                        "has one, b_h."),
        (d * e + e * h + h * h, "you left out the bias b_h."),
        (d * e, "that is the embedding table alone; add the layer's W_xh, W_hh and b_h."),
    ], rel=1e-9, abs_=0.0, otherwise="Count the embedding table, then W_xh (now embedding_dim x hidden_size), "
                                     "W_hh and b_h.")
    verdict = (f"{verdict} With the embedding: {with_embedding}, {with_embedding - right} more than "
               f"with one-hot inputs.")
    if break_even is None:
        return verdict
    return f"{verdict} {_check_break_even(break_even, d, h, e)}"


def _check_break_even(break_even, d: int, h: int, e: int) -> str:
    """The largest embedding size ``k`` whose table and W_xh (d k + k h) are fewer than the
    one-hot W_xh's d h entries."""
    largest = (d * h - 1) // (d + h)
    value = number(break_even, "the largest embedding size that saves parameters", example="40")
    if value != int(value) or value < 1:
        raise Wrong(f"{value:g} is not an embedding size: expected a positive whole number.")
    value = int(value)
    if value == largest:
        return (f"{largest} is right: {d} x {largest} + {largest} x {h} = {largest * (d + h):,} "
                f"entries, fewer than the one-hot W_xh's {d * h:,}.")
    if value == largest + 1:
        raise Wrong(f"at {value} the table and W_xh have {d} x {value} + {value} x {h} = "
                    f"{value * (d + h):,} entries, more than the one-hot W_xh's {d * h:,}: "
                    f"{d * h:,} / {d + h} is not a whole number; round it down.")
    if value == e:
        raise Wrong(f"{e} is the embedding size of this exercise, which costs parameters. Find the "
                    f"largest size k with {d} k + k {h} < {d} x {h}.")
    if value == d:
        raise Wrong(f"an embedding as wide as the vocabulary ({d}) only adds its table. Find the "
                    f"largest size k with {d} k + k {h} < {d} x {h}.")
    raise Wrong(f"{value} is not it. An embedding of size k replaces the one-hot W_xh ({d} x {h} "
                f"entries) by a table and a W_xh with {d} k + k {h}: find the largest k for which "
                f"that is fewer.")


# -- exercise: the Jacobian of one step --------------------------------------------------------
def _step_points(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    for nonlinearity in ("tanh", "relu"):
        rnn = RNNScratch(3, 5, nonlinearity=nonlinearity, seed=seed)
        for _ in range(2):
            x = torch.randn(3, generator=gen)
            h = torch.randn(5, generator=gen)
            yield rnn, x, h


def _true_jacobian(rnn, x, h):
    return torch.autograd.functional.jacobian(lambda hh: rnn.step(x[None], hh[None])[0], h).detach()


@checker
def check_step_jacobian(step_jacobian) -> str:
    """``step_jacobian(rnn, x_t, h_prev)`` -> the (hidden, hidden) matrix d h_t / d h_{t-1} for one
    example (``x_t`` of shape (input,), ``h_prev`` of shape (hidden,)), for tanh and ReLU."""
    require_function(step_jacobian)
    for rnn, x, h in _step_points():
        with torch.no_grad():
            got = call(step_jacobian, rnn, x.clone(), h.clone())
        if not isinstance(got, torch.Tensor):
            raise Wrong(f"expected a tensor of shape (5, 5), got {type(got).__name__}.")
        got = got.detach()
        if tuple(got.shape) != (5, 5):
            raise Wrong(f"expected a (hidden, hidden) = (5, 5) matrix for one example, got shape {tuple(got.shape)}.")
        right = _true_jacobian(rnn, x, h)
        if torch.allclose(got.float(), right, atol=1e-5, rtol=1e-4):
            continue
        W = rnn.W_hh.detach()
        a = (x @ rnn.W_xh + h @ rnn.W_hh + rnn.b_h).detach()
        tanh_prime = 1 - torch.tanh(a) ** 2
        hints = [
            (right.T, "that is the transpose. With row vectors, h_t = phi(x_t W_xh + h_{t-1} W_hh + b), so "
                      "d h_t[j] / d h_{t-1}[i] = phi'(a_j) W_hh[i, j]: the Jacobian is diag(phi'(a)) W_hh^T."),
            (W.T, "that is W_hh^T alone: the nonlinearity's slope phi'(a_t) must scale each row."),
            (W, "that is W_hh alone: the Jacobian is diag(phi'(a_t)) W_hh^T, with the slope of the nonlinearity."),
            (torch.diag(1 - h ** 2) @ W.T, "phi' must be taken at the new pre-activation a_t = x_t W_xh + "
                                           "h_{t-1} W_hh + b, not at h_{t-1}."),
            (torch.diag(1 - a ** 2) @ W.T, "tanh'(a) = 1 - tanh(a)^2, not 1 - a^2."),
        ]
        if rnn.nonlinearity == "relu":
            hints.append((torch.diag(tanh_prime) @ W.T, "that is tanh's slope, but this RNN uses ReLU: "
                                                        "read rnn.nonlinearity (ReLU's slope is 1 where a > 0, else 0)."))
        for wrong, hint in hints:
            if torch.allclose(got.float(), wrong.float(), atol=1e-5, rtol=1e-4):
                raise Wrong(hint)
        raise Wrong(f"for a {rnn.nonlinearity} RNN the matrix differs from autograd's Jacobian by up to "
                    f"{float((got.float() - right).abs().max()):.3g}. It should be diag(phi'(a_t)) W_hh^T.")
    return "the Jacobian d h_t / d h_{t-1} = diag(phi'(a_t)) W_hh^T matches autograd for tanh and ReLU."


# -- exercise: clipping by global norm ---------------------------------------------------------
def _reference_clip(grads, max_norm):
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
    scale = min(1.0, max_norm / float(norm)) if norm > 0 else 1.0
    return [g * scale for g in grads]


def _cases():
    gen = torch.Generator().manual_seed(0)
    big = [torch.randn(4, 3, generator=gen) * 3, torch.randn(3, generator=gen) * 3]  # norm about 11
    small = [g / 100 for g in big]                                                  # norm about 0.11
    lopsided = [torch.tensor([30.0, 40.0]), torch.tensor([0.3, 0.4])]              # one large, one small
    zero = [torch.zeros(4, 3), torch.zeros(3)]                                      # norm 0
    return [(big, 1.0), (small, 1.0), (lopsided, 5.0), (zero, 1.0)]


@checker
def check_clip_by_global_norm(clip) -> str:
    """``clip(grads, max_norm)`` -> a new list of tensors: all of ``grads`` scaled together so that
    their global norm is at most ``max_norm``."""
    require_function(clip)
    zero_hint = ("for gradients that are all zero (global norm 0) the result should be those "
                 "zeros, unchanged; max_norm / norm divides by zero there, so handle a norm of 0 "
                 "on its own.")
    for grads, max_norm in _cases():
        try:
            got = call(clip, [g.clone() for g in grads], max_norm)
        except ZeroDivisionError:
            if all(not g.any() for g in grads):
                raise Wrong(zero_hint) from None
            raise
        if got is None:
            raise Wrong("your function returned None: return the list of clipped gradients.")
        if isinstance(got, torch.Tensor) or not isinstance(got, (list, tuple)) or len(got) != len(grads):
            raise Wrong(f"expected a list of {len(grads)} tensors (one per gradient), got {type(got).__name__}.")
        if not all(isinstance(g, torch.Tensor) and g.shape == r.shape for g, r in zip(got, grads)):
            raise Wrong("expected each returned gradient to be a tensor of the same shape as the one passed in.")
        right = _reference_clip(grads, max_norm)
        if all(torch.allclose(g.double(), r.double(), rtol=1e-4, atol=1e-6) for g, r in zip(got, right)):
            continue
        norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))
        if norm == 0:
            raise Wrong(zero_hint)
        per_tensor = [g * min(1.0, max_norm / float(g.norm())) for g in grads]
        if all(torch.allclose(g.double(), r.double(), rtol=1e-4, atol=1e-6) for g, r in zip(got, per_tensor)):
            raise Wrong("you clipped each tensor on its own. Clipping by *global* norm measures all "
                        "gradients together, sqrt(sum of every squared entry), and scales them all by the "
                        "same factor, so the direction of the whole gradient is kept.")
        if all(torch.allclose(g.double(), r.clamp(-max_norm, max_norm).double()) for g, r in zip(got, grads)):
            raise Wrong("you clamped each entry to [-max_norm, max_norm]; that changes the gradient's direction. "
                        "Rescale the whole gradient instead.")
        always = [g * (max_norm / norm) for g in grads]
        if norm < max_norm and all(torch.allclose(g.double(), r.double(), rtol=1e-4) for g, r in zip(got, always)):
            raise Wrong(f"you scaled a gradient of norm {norm:.3g} up to {max_norm}: clipping only ever "
                        "shrinks; below the threshold the gradient is left as it is.")
        raise Wrong(f"for gradients of global norm {norm:.3g} and max_norm={max_norm} the result differs from "
                    "grads * min(1, max_norm / norm).")
    return "all gradients scaled by min(1, max_norm / global norm): direction kept, length capped."


# -- exercise: predict how many steps until the gradient falls below a fraction --------------
@checker
def check_decay_steps(answer) -> str:
    """``answer``: the first number of steps k for which ``scale**k < fraction`` (orthogonal
    W_hh times ``scale``, linear regime), with :data:`DECAY`."""
    s, f = DECAY["scale"], DECAY["fraction"]
    exact = math.log(f) / math.log(s)
    right = math.floor(exact) + 1
    value = number(answer, "a whole number of steps", example="10")
    if close(value, exact, rel=1e-3) and value != right:
        raise Wrong(f"{value:.4g} solves 0.8^k = 1e-6 exactly; steps are whole, so give the first whole k "
                    "for which the norm is below 1e-6.")
    return match_typical(value, right, [
        (right - 1, f"at k = {right - 1}, 0.8^k = {s ** (right - 1):.3g} is still above {f:g}."),
        (math.log(f) / math.log10(s), "that mixes logarithm bases: use ln on both sides (or log10 on both)."),
        (math.log10(f) / math.log(s), "that mixes logarithm bases: use ln on both sides (or log10 on both)."),
        (f / (1 - s), "the norm shrinks by a factor 0.8 per step, geometrically, not by a fixed amount."),
    ], rel=1e-6, abs_=0.0, otherwise="Solve 0.8^k < 1e-6 for k with logarithms, then take the first whole k.")


DECAY_UNROLL = 80   # the exercise unrolls over 80 steps of zero input


@checker
def check_decay_measurement(norms) -> str:
    """``norms``: the measured curve ``||dh_T/dh_t||`` ordered by distance ``k = T - t``
    (``state_jacobian_norms(states).flip(0)``), for :data:`DECAY` over ``DECAY_UNROLL`` steps. In
    the linear regime it must be ``scale**k`` at every k; the verdict reports the first k below
    ``fraction``."""
    s, f, steps = DECAY["scale"], DECAY["fraction"], DECAY_UNROLL
    if norms is None or norms is Ellipsis:
        raise NotImplementedError
    if isinstance(norms, (int, float)) or (hasattr(norms, "numel") and norms.numel() == 1):
        raise Wrong("expected the measured curve of norms (a 1-d tensor, one norm per distance k), "
                    "not a single number: pass state_jacobian_norms(states).flip(0).")
    try:
        curve = torch.as_tensor(norms, dtype=torch.float64).detach().cpu()
    except (TypeError, ValueError, RuntimeError):
        raise Wrong(f"expected a 1-d tensor of norms, got {type(norms).__name__}.") from None
    if curve.dim() != 1:
        raise Wrong(f"expected a 1-d tensor of norms (one per distance k), got shape {tuple(curve.shape)}: "
                    "state_jacobian_norms averages over the batch by default (reduce='mean').")
    if curve.numel() != steps:
        raise Wrong(f"expected {steps} norms, one per state of an unroll over {steps} steps, "
                    f"got {curve.numel()}.")
    if not bool(torch.isfinite(curve).all()) or not bool((curve > 0).all()):
        raise Wrong("every norm should be positive and finite; check the unroll.")
    expected = s ** torch.arange(steps, dtype=torch.float64)
    if torch.allclose(curve.flip(0), expected, rtol=1e-3, atol=0.0):
        raise Wrong("the curve runs the wrong way: index t of state_jacobian_norms is the state h_t, "
                    "so .flip(0) orders it by distance T - t.")
    if not close(float(curve[0]), 1.0, rel=1e-3, abs_=0.0):
        raise Wrong(f"at distance 0 the norm should be 1 (d h_T / d h_T is the identity), got "
                    f"{float(curve[0]):.4g}.")
    rate = float(curve[1] / curve[0])
    if not torch.allclose(curve, expected, rtol=1e-3, atol=0.0):
        if close(rate, s, rel=1e-3, abs_=0.0):
            raise Wrong(f"the first step shrinks by {s}, but later steps do not: is the state staying at 0 "
                        "(W_xh and b_h zeroed, zero input)? Away from 0, tanh' < 1 bends the curve.")
        raise Wrong(f"one step back the norm is {rate:.4g}, not {s}: make W_hh with "
                    f"orthogonal_(rnn.W_hh, {s}, seed=0), and zero W_xh and b_h.")
    first = int((curve < f * curve[0]).nonzero()[0, 0])
    return (f"the measured curve is {s}^k at every k, and it first falls below {f:g} at k = {first}, "
            "as the hand calculation says.")


# -- exercise: ReLU instead of tanh in the decay measurement -----------------------------------
# the set-up of the chapter's decay table: RNNScratch(16, 64, seed=0), W_hh = s x orthogonal
# (seed 1), inputs torch.randn(8, 60, 16) from generator(2)
RELU = dict(scales=(0.5, 1.0, 2.0), input_size=16, hidden_size=64, batch=8, steps=60)


def relu_decay_rates(nonlinearity: str = "relu", scales=RELU["scales"]) -> dict[float, float]:
    """The fitted per-step rate of ``||dh_T/dh_t||`` for each scale, in the decay table's set-up."""
    return dict(_decay_rates(nonlinearity, tuple(scales)))


@functools.lru_cache(maxsize=None)
def _decay_rates(nonlinearity: str, scales: tuple) -> tuple:
    # fixed seeds and no training: the same for every call, so a checker called once per attempt
    # measures each network once
    X = torch.randn(RELU["batch"], RELU["steps"], RELU["input_size"], generator=generator(2))
    rates = []
    for s in scales:
        rnn = RNNScratch(RELU["input_size"], RELU["hidden_size"], nonlinearity=nonlinearity, seed=0)
        orthogonal_(rnn.W_hh, s, seed=1)
        rates.append((s, fit_rate(state_jacobian_norms(rnn.unroll(X)).flip(0))))
    return tuple(rates)


@checker
def check_relu_rates(rates) -> str:
    """``rates``: a dict from each scale s of ``RELU["scales"]`` to the fitted rate of the ReLU
    network, measured as in the chapter's decay table."""
    if rates is None or rates is Ellipsis:
        raise NotImplementedError
    if not isinstance(rates, dict):
        raise Wrong(f"expected a dict from the scale s to the fitted rate, got {type(rates).__name__}.")
    missing = [s for s in RELU["scales"] if s not in rates]
    if missing:
        raise Wrong(f"expected a rate for each of s = {', '.join(map(str, RELU['scales']))}; "
                    f"missing {', '.join(map(str, missing))}.")
    got = {s: number(rates[s], f"the rate at s = {s}", example="0.5") for s in RELU["scales"]}
    right, tanh = relu_decay_rates("relu"), relu_decay_rates("tanh")
    if all(close(got[s], right[s], rel=0.0, abs_=0.01) for s in got):
        return ("ReLU: " + ", ".join(f"{right[s]:.3f} at s = {s}" for s in right)
                + "; tanh: " + ", ".join(f"{tanh[s]:.3f}" for s in tanh) + ".")
    if all(close(got[s], tanh[s], rel=0.0, abs_=0.01) for s in got):
        raise Wrong("these are tanh's rates: build the RNNScratch with nonlinearity='relu'.")
    if all(got[s] > 0 and close(1 / got[s], right[s], rel=0.0, abs_=0.01) for s in got):
        raise Wrong("these are 1 / rate: the curve runs the wrong way. state_jacobian_norms is indexed "
                    "by t; .flip(0) orders it by distance T - t.")
    wrong = [s for s in got if not close(got[s], right[s], rel=0.0, abs_=0.01)]
    raise Wrong(f"the rate at s = {wrong[0]} is not it ({got[wrong[0]]:.4g}). Use the decay table's set-up: "
                "RNNScratch(16, 64, nonlinearity='relu', seed=0), orthogonal_(rnn.W_hh, s, seed=1), "
                "the inputs X_decay, and fit_rate of the curve ordered by distance.")


# -- exercise: backpropagation through time by hand ---------------------------------------------
BPTT_CASES = [dict(batch=2, steps=6, input_size=3, hidden_size=4, seed=0),
              dict(batch=3, steps=9, input_size=3, hidden_size=4, seed=1)]


def _bptt_case(batch: int, steps: int, input_size: int, hidden_size: int, seed: int):
    """A tanh RNNScratch in float64, inputs X (batch, steps, input) and the direct gradients
    dL_t/dh_t (batch, steps, hidden), all drawn from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    rnn = RNNScratch(input_size, hidden_size, seed=seed).double()
    with torch.no_grad():  # larger weights than the default, so that every term matters
        for p in rnn.parameters():
            p.mul_(2.0)
    X = torch.randn(batch, steps, input_size, generator=gen, dtype=torch.float64)
    dL_dh = torch.randn(batch, steps, hidden_size, generator=gen, dtype=torch.float64)
    return rnn, X, dL_dh


def _autograd_bptt(rnn, X, dL_dh):
    """The right answer: autograd's gradient of L = sum_t <dL_dh[:, t], h_t>."""
    outputs, _ = rnn(X)
    loss = (outputs * dL_dh).sum()
    return [g.detach() for g in torch.autograd.grad(loss, [rnn.W_xh, rnn.W_hh, rnn.b_h])]


def _bptt_variant(rnn, X, dL_dh, mistake: str | None = None):
    """The backward recursions, right (``mistake=None``) or with one typical mistake."""
    W_xh, W_hh, b_h = (p.detach() for p in (rnn.W_xh, rnn.W_hh, rnn.b_h))
    batch, steps, _ = X.shape
    h = X.new_zeros(batch, W_hh.shape[0])
    previous, states, pre = [], [], []
    for t in range(steps):
        previous.append(h)
        a = X[:, t] @ W_xh + h @ W_hh + b_h
        h = torch.tanh(a)
        states.append(h)
        pre.append(a)
    grads = [torch.zeros_like(W_xh), torch.zeros_like(W_hh), torch.zeros_like(b_h)]
    delta_next = torch.zeros_like(h)
    for t in reversed(range(steps)):
        back = delta_next @ (W_hh if mistake == "W_hh not transposed" else W_hh.T)
        g = dL_dh[:, t] + (0 if mistake == "no recurrence" else back)
        slope = {"no slope": 1.0, "slope of a": 1 - pre[t] ** 2}.get(mistake, 1 - states[t] ** 2)
        delta = g * slope
        grads[0] += X[:, t].T @ delta
        grads[1] += (states[t] if mistake == "h_t not h_{t-1}" else previous[t]).T @ delta
        grads[2] += delta.sum(0)
        delta_next = delta
    return grads


_BPTT_HINTS = {
    "no recurrence": "the gradient stops at each step's own loss. g_t = dL_t/dh_t + delta_{t+1} W_hh^T: "
                     "h_t also affects every later loss through a_{t+1}, so carry delta backwards from t = T.",
    "W_hh not transposed": "the recurrence sends delta_{t+1} back through W_hh^T, not W_hh: with row vectors "
                           "a_{t+1} = ... + h_t W_hh, so dL/dh_t = delta_{t+1} W_hh^T.",
    "no slope": "delta_t = g_t * tanh'(a_t): the slope of tanh, 1 - h_t^2, is missing.",
    "slope of a": "tanh'(a) = 1 - tanh(a)^2 = 1 - h_t^2, not 1 - a_t^2.",
    "h_t not h_{t-1}": "dL/dW_hh = sum_t h_{t-1}^T delta_t: a_t is computed from the previous state h_{t-1} "
                       "(h_0 = 0), not from h_t.",
}


def _as_three(got):
    if got is None:
        raise Wrong("your function returned None: return the tuple (dW_xh, dW_hh, db_h).")
    if isinstance(got, torch.Tensor) or not isinstance(got, (tuple, list)) or len(got) != 3:
        raise Wrong(f"expected a tuple of three tensors (dW_xh, dW_hh, db_h), got {type(got).__name__}"
                    + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else "") + ".")
    if not all(isinstance(g, torch.Tensor) for g in got):
        raise Wrong("expected (dW_xh, dW_hh, db_h) to be three tensors, got "
                    f"{', '.join(type(g).__name__ for g in got)}.")
    return [g.detach() for g in got]


def _all_close(got, want) -> bool:
    return all(g.shape == w.shape and torch.allclose(g.double(), w, rtol=1e-4, atol=1e-6)
               for g, w in zip(got, want))


@checker
def check_bptt(bptt) -> str:
    """``bptt(rnn, X, dL_dh)`` -> ``(dW_xh, dW_hh, db_h)`` for a tanh :class:`RNNScratch` started from
    h_0 = 0, where ``dL_dh[:, t]`` is the direct gradient dL_t/dh_t, computed from the recursions
    (the checker calls it under ``torch.no_grad()``, so autograd cannot do the work)."""
    require_function(bptt)
    names = ("dW_xh", "dW_hh", "db_h")
    for case in BPTT_CASES:
        rnn, X, dL_dh = _bptt_case(**case)
        right = _autograd_bptt(rnn, X, dL_dh)
        try:
            with torch.no_grad():
                got = call(bptt, rnn, X.clone(), dL_dh.clone())
        except RuntimeError as e:
            if "does not require grad" in str(e) or "grad_fn" in str(e):
                raise Wrong("the checker runs your function under torch.no_grad(), so autograd has no "
                            "graph to differentiate: compute the gradients with the two recursions "
                            "g_t = dL_t/dh_t + delta_{t+1} W_hh^T and delta_t = g_t * tanh'(a_t).") from None
            raise
        got = _as_three(got)
        for name, g, w in zip(names, got, right):
            if g.shape != w.shape:
                like = {"dW_xh": "rnn.W_xh", "dW_hh": "rnn.W_hh", "db_h": "rnn.b_h"}[name]
                extra = (" (sum the bias gradient over the batch too)" if name == "db_h" and g.dim() == 2
                         else " (the book's layout, not PyTorch's transposed one)" if g.shape == w.T.shape
                         else "")
                raise Wrong(f"expected {name} of shape {tuple(w.shape)}, like {like}, got "
                            f"{tuple(g.shape)}{extra}.")
        if _all_close(got, right):
            continue
        for mistake, hint in _BPTT_HINTS.items():
            if _all_close(got, _bptt_variant(rnn, X, dL_dh, mistake)):
                raise Wrong(hint)
        if _all_close([got[0], got[1].T, got[2]], right):
            raise Wrong("dW_hh comes out transposed: with row vectors the gradient of h_{t-1} W_hh "
                        "is the sum of h_{t-1}^T delta_t (previous state as a column, delta as a row).")
        if _all_close([g * X.shape[0] for g in got], right) or _all_close(
                [g * X.shape[0] * X.shape[1] for g in got], right):
            raise Wrong("your gradients are an average; L is the sum of the per-step losses over "
                        "the batch and the steps, so sum the outer products, do not average them.")
        wrong = [name for name, g, w in zip(names, got, right)
                 if not torch.allclose(g.double(), w, rtol=1e-4, atol=1e-6)]
        raise Wrong(f"for a batch of {case['batch']} sequences of {case['steps']} steps, "
                    f"{', '.join(wrong)} differ{'s' if len(wrong) == 1 else ''} from autograd's "
                    f"(largest difference {max(float((g.double() - w).abs().max()) for g, w in zip(got, right)):.3g}). "
                    "Go backwards from t = T with delta_{T+1} = 0: g_t = dL_t/dh_t + delta_{t+1} W_hh^T, "
                    "delta_t = g_t * (1 - h_t^2), and add x_t^T delta_t, h_{t-1}^T delta_t and delta_t "
                    "(summed over the batch) to the three gradients.")
    return ("your backward pass matches autograd's gradients of W_xh, W_hh and b_h: "
            "backpropagation through time is these two recursions and three sums.")


# -- exercise: sampling from the recurrent language model with a temperature -----------------
SAMPLING_PREFIX = [1, 2]
SAMPLING_DRAWS = 1500        # seeds of the frequency test


def _sampling_model():
    """A tiny RecurrentLM whose next-token distribution depends on the whole history: 5 tokens,
    one-hot inputs, 6 tanh units, weights enlarged so that the distributions are far from uniform
    (but not so far that a greedy or a stateless sampler could pass for the right one)."""
    from ..lm import RecurrentLM
    from ..seeding import seeded

    with seeded(0):  # the same model every time, without touching the reader's random stream
        model = RecurrentLM(5, RNNScratch(5, 6, seed=0))
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1.5)
    return model.eval()


def _shift_model(vocab: int = 5):
    """A RecurrentLM that (almost surely) says ``(t + 1) mod vocab`` after the token ``t``."""
    from ..lm import RecurrentLM

    model = RecurrentLM(vocab, RNNScratch(vocab, vocab, seed=0))
    with torch.no_grad():
        model.layer.W_xh.copy_(3 * torch.eye(vocab))
        model.layer.W_hh.zero_()
        model.layer.b_h.zero_()
        model.output.weight.copy_(40 * torch.roll(torch.eye(vocab), 1, dims=0))
        model.output.bias.zero_()
    return model.eval()


@torch.no_grad()
def _reference_sample(model, prefix, length, temperature, seed, mistake: str | None = None) -> list[int]:
    """The exercise's answer (``mistake=None``), or what a typical mistake produces, drawing with
    ``torch.multinomial`` from a generator seeded with ``seed``."""
    g = torch.Generator().manual_seed(seed)
    logits, state = model(torch.tensor([prefix]))
    last, out = prefix[-1], []
    for _ in range(length):
        scaled = {"no temperature": logits[0, -1], "times temperature": logits[0, -1] * temperature}.get(
            mistake, logits[0, -1] / temperature)
        probs = torch.softmax(scaled, dim=-1)
        token = int(probs.argmax()) if mistake == "greedy" else int(torch.multinomial(probs, 1, generator=g))
        out.append(token)
        fed = last if mistake == "feeds the prefix" else token
        logits, state = model(torch.tensor([[fed]]), None if mistake == "no state" else state)
    return out


def _drawn(result, length: int, vocab: int, where: str) -> list[int]:
    if result is None:
        raise Wrong(f"{where} your function returned None: return the list of sampled ids.")
    if isinstance(result, torch.Tensor):
        result = result.flatten().tolist()
    if not isinstance(result, (list, tuple)) or not all(isinstance(t, int) or hasattr(t, "__index__")
                                                        for t in result):
        raise Wrong(f"{where} expected a list of token ids (ints), got {type(result).__name__}.")
    result = [int(t) for t in result]
    if len(result) != length:
        raise Wrong(f"{where} expected {length} sampled ids (without the prefix), got {len(result)}.")
    if not all(0 <= t < vocab for t in result):
        raise Wrong(f"{where} expected ids between 0 and {vocab - 1}, got {result}.")
    return result


@checker
def check_sampler(sample_text) -> str:
    """``sample_text(model, prefix, length, temperature, seed)`` -> ``length`` ids drawn after the
    list ``prefix`` from a RecurrentLM, each from softmax(logits / temperature), the drawn id fed
    back with the state; the same seed gives the same ids."""
    require_function(sample_text)
    shift = _shift_model()
    got = _drawn(call(sample_text, shift, [2], 6, 1.0, 0), 6, 5, "on a model that always says t + 1 after t:")
    if got == [3] * 6:
        raise Wrong("on a model that always says t + 1 after t, after [2] you returned [3, 3, 3, 3, 3, 3]: "
                    "feed each drawn id back into the model, not the last id of the prefix again.")
    if got != [3, 4, 0, 1, 2, 3]:
        raise Wrong(f"on a model that always says t + 1 after t (mod 5), after [2] you returned {got}, "
                    "expected [3, 4, 0, 1, 2, 3].")
    model = _sampling_model()
    where = f"for prefix {SAMPLING_PREFIX}:"
    again = [_drawn(call(sample_text, model, list(SAMPLING_PREFIX), 4, 1.0, seed), 4, 5, where)
             for seed in (0, 0, 1, 2, 3)]
    if again[0] != again[1]:
        raise Wrong("the same seed gave different ids: draw with a generator made from the seed, "
                    "g = torch.Generator().manual_seed(seed), and pass generator=g to torch.multinomial.")
    if len({tuple(a) for a in again}) == 1:
        raise Wrong("four different seeds gave the same ids: draw at random (torch.multinomial) instead of "
                    "taking the most likely id, and seed the generator with the seed you are given.")
    cases = [(temperature, seed) for temperature in (0.5, 2.0) for seed in range(5)]
    answers = [_drawn(call(sample_text, model, list(SAMPLING_PREFIX), 4, t, s), 4, 5, where) for t, s in cases]
    if all(a == _reference_sample(model, SAMPLING_PREFIX, 4, t, s) for a, (t, s) in zip(answers, cases)):
        return ("your sampler draws each id from softmax(logits / temperature) and feeds it back with the "
                "state: the same ids as the reference for every seed tried.")
    for mistake, hint in (
            ("no temperature", "the temperature changes nothing in your samples: divide the logits by it "
                               "before the softmax."),
            ("times temperature", "you multiplied the logits by the temperature; divide them, so that a "
                                  "temperature below 1 sharpens the distribution."),
            ("greedy", "you take the most likely id at every step: draw from the distribution instead."),
            ("feeds the prefix", "feed each drawn id back into the model, not the last id of the prefix again."),
            ("no state", "you feed the drawn id back without the state, so the model forgets the history: "
                         "pass the state the previous call returned."),
    ):
        if all(a == _reference_sample(model, SAMPLING_PREFIX, 4, t, s, mistake) for a, (t, s) in zip(answers, cases)):
            raise Wrong(hint)
    # Another way of drawing, perhaps: then the frequencies must still follow the model.
    with torch.no_grad():
        logits, _ = model(torch.tensor([SAMPLING_PREFIX]))
    for temperature in (0.5, 2.0):
        p = torch.softmax(logits[0, -1] / temperature, dim=-1).tolist()
        firsts = [_drawn(call(sample_text, model, list(SAMPLING_PREFIX), 1, temperature, seed), 1, 5, where)[0]
                  for seed in range(SAMPLING_DRAWS)]
        for token, q in enumerate(p):
            share = firsts.count(token) / SAMPLING_DRAWS
            if abs(share - q) > 5 * math.sqrt(q * (1 - q) / SAMPLING_DRAWS) + 1e-3:
                raise Wrong(f"at temperature {temperature} the id {token} came first {share:.1%} of the time over "
                            f"{SAMPLING_DRAWS} seeds, but softmax(logits / temperature) gives it {q:.1%}.")
    return ("your samples follow softmax(logits / temperature) (your draws differ from torch.multinomial's "
            "with the seeded generator, which is fine).")
