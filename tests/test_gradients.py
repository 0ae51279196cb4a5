"""Gradient norms through time, and the scale of the recurrent matrix."""

import math

import pytest
import torch

from seqbook.gradients import (effective_memory, fit_exponential, fit_rate, largest_singular_value, loss_gradient_norms,
                               orthogonal_, set_largest_singular_value, set_spectral_radius,
                               spectral_radius, state_jacobian_norms, state_jacobians)
from seqbook.rnn import RNNScratch


def _linear_regime_rnn(scale, hidden=8):
    """A tanh RNN with zero input weights and zero bias: from h0 = 0 the state stays 0, where
    tanh' = 1, so every step's Jacobian is exactly W_hh^T."""
    rnn = RNNScratch(1, hidden, seed=0)
    with torch.no_grad():
        rnn.W_xh.zero_()
        rnn.b_h.zero_()
    orthogonal_(rnn.W_hh, scale, seed=1)
    return rnn


@pytest.mark.parametrize("scale", [0.5, 0.9, 1.2])
def test_jacobian_norms_follow_the_singular_value_exactly_in_the_linear_regime(scale):
    rnn = _linear_regime_rnn(scale)
    states = rnn.unroll(torch.zeros(2, 20, 1))
    norms = state_jacobian_norms(states).flip(0)  # by distance T - t
    expected = torch.tensor([scale ** k for k in range(20)], dtype=norms.dtype)
    torch.testing.assert_close(norms, expected, rtol=1e-4, atol=0)
    assert fit_rate(norms) == pytest.approx(scale, rel=1e-4)


def test_jacobians_match_an_explicit_product():
    rnn = RNNScratch(3, 5, seed=2)
    X = torch.randn(2, 6, 3)
    states = rnn.unroll(X)
    Js = state_jacobians(states)
    assert Js[0].shape == (2, 5, 5)
    # d h_T / d h_{T-1} = diag(tanh'(a_T)) W_hh^T = diag(1 - h_T^2) W_hh^T
    expected = (1 - states[-1] ** 2)[:, :, None] * rnn.W_hh.T[None]
    torch.testing.assert_close(Js[-2], expected.detach(), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(Js[-1], torch.eye(5).expand(2, 5, 5))
    fro = state_jacobian_norms(states, ord="fro", reduce="none")
    assert fro.shape == (2, 6)
    assert math.isclose(float(fro[0, -1]), math.sqrt(5), rel_tol=1e-6)


def test_works_with_cell_states_of_an_lstm_cell():
    cell = torch.nn.LSTMCell(3, 4)
    h = c = torch.zeros(2, 4)
    cells = []
    for x in torch.randn(5, 2, 3):
        h, c = cell(x, (h, c))
        cells.append(c)
    norms = state_jacobian_norms(cells)
    assert norms.shape == (5,) and torch.all(norms > 0)


def test_unused_states_get_zero_and_loss_gradients():
    rnn = RNNScratch(2, 3, seed=0)
    states = rnn.unroll(torch.randn(4, 6, 2))
    norms = state_jacobian_norms(states, target=states[2])
    assert torch.all(norms[3:] == 0) and torch.all(norms[:3] > 0)
    loss = states[-1].sum()
    g = loss_gradient_norms(loss, states, reduce="none")
    assert g.shape == (4, 6)
    # dL/dh_T of sum(h_T) is a vector of ones: norm sqrt(3)
    torch.testing.assert_close(g[:, -1], torch.full((4,), math.sqrt(3)))


def test_bad_states_are_explained():
    rnn = RNNScratch(2, 3)
    out, _ = rnn(torch.randn(1, 4, 2))
    with pytest.raises(TypeError, match="stacked output tensor is not on the gradient path"):
        state_jacobian_norms(out)
    with torch.no_grad():
        states = rnn.unroll(torch.randn(1, 4, 2))
    with pytest.raises(ValueError, match="does not require grad"):
        state_jacobian_norms(states)
    with pytest.raises(ValueError, match="ord as one of 2, 'fro', got 1"):
        state_jacobian_norms(rnn.unroll(torch.randn(1, 4, 2)), ord=1)


def test_setting_the_scale_of_a_matrix():
    W = torch.randn(6, 6, generator=torch.Generator().manual_seed(0))
    set_largest_singular_value(W, 0.7)
    assert largest_singular_value(W) == pytest.approx(0.7, rel=1e-5)
    set_spectral_radius(W, 1.3)
    assert spectral_radius(W) == pytest.approx(1.3, rel=1e-5)
    rnn = RNNScratch(2, 6)
    set_largest_singular_value(rnn.W_hh, 2.0)  # in place, on a parameter
    assert largest_singular_value(rnn.W_hh) == pytest.approx(2.0, rel=1e-5)
    Q = orthogonal_(torch.empty(5, 5), 0.5)
    torch.testing.assert_close(torch.linalg.svdvals(Q), torch.full((5,), 0.5))
    rect = torch.randn(8, 4)
    set_largest_singular_value(rect, 1.0)
    with pytest.raises(ValueError, match="square"):
        set_spectral_radius(rect, 1.0)
    with pytest.raises(ValueError, match="largest singular value >= 0, got -1"):
        set_largest_singular_value(W, -1)
    with pytest.raises(ValueError, match="is 0"):
        set_largest_singular_value(torch.zeros(3, 3), 1.0)


def test_reading_rates_and_memory():
    norms = [0.8 ** k for k in range(30)]
    assert fit_rate(norms) == pytest.approx(0.8)
    c, r = fit_exponential([3 * 0.9 ** k for k in range(10)])
    assert c == pytest.approx(3) and r == pytest.approx(0.9)
    assert fit_rate([0.5 ** k if k != 3 else 0.0 for k in range(8)]) == pytest.approx(0.5)  # zeros skipped
    assert fit_rate([1.0, 5.0] + [0.5 ** k for k in range(10)], skip=2) == pytest.approx(0.5)
    # 0.8^k >= 0.01 for k <= 20, first below at 21
    assert effective_memory(norms, 0.01) == 21
    assert effective_memory([1.0, 0.9, 0.8], 0.01) == 3  # never below: a lower bound
    with pytest.raises(ValueError, match=r"fraction in \(0, 1\)"):
        effective_memory(norms, 2)
    with pytest.raises(ValueError, match="at least two"):
        fit_rate([1.0])


def test_tiny_gradients_do_not_underflow_in_the_norm():
    # Entries of 1e-25 are ordinary float32 numbers, but their squares (1e-50) are not: a norm
    # computed in float32 reads 0. The measured norm must be the true one, sqrt(16) * 1e-25.
    h = torch.ones(3, 16, requires_grad=True)
    states = [h * 1.0]
    loss = (states[0] * 1e-25).sum()
    assert torch.autograd.grad(loss, states, retain_graph=True)[0].norm() == 0  # the trap
    norms = loss_gradient_norms(loss, states)
    assert norms.dtype == torch.float32
    torch.testing.assert_close(norms, torch.tensor([4e-25]), rtol=1e-5, atol=0)
    # The same for a Jacobian whose entries are all tiny: target = 1e-25 * state.
    jac = state_jacobian_norms(states, target=states[0] * 1e-25, ord="fro")
    torch.testing.assert_close(jac, torch.tensor([4e-25]), rtol=1e-5, atol=0)
