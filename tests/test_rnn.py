"""RNNScratch: the equations, checked against torch.nn.RNN (outputs, final state, gradients)."""

import pytest
import torch
from torch import nn

from seqbook.rnn import RNNScratch


def _pair(input_size, hidden, nonlinearity, bias=True, seed=0, device="cpu"):
    torch.manual_seed(seed)
    ref = nn.RNN(input_size, hidden, nonlinearity=nonlinearity, batch_first=True, bias=bias).to(device)
    return ref, RNNScratch.from_torch(ref)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("batch,time", [(1, 1), (1, 7), (4, 1), (3, 12)])
@pytest.mark.parametrize("with_h0", [False, True])
def test_matches_torch_outputs_state_and_gradients(nonlinearity, batch, time, with_h0, device):
    ref, mine = _pair(5, 6, nonlinearity, device=device)
    assert mine.W_hh.device.type == device.type
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(batch, time, 5, generator=gen).to(device)
    h0 = torch.randn(batch, 6, generator=gen).to(device) if with_h0 else None
    X1, X2 = X.clone().requires_grad_(), X.clone().requires_grad_()
    out_ref, h_ref = ref(X1, None if h0 is None else h0[None])
    out, h = mine(X2, h0)
    assert out.shape == (batch, time, 6) and h.shape == (batch, 6)
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(h, h_ref[0], atol=1e-5, rtol=1e-5)
    # A loss that weighs every output and the final state differently.
    w = torch.randn(batch, time, 6, generator=gen).to(device)
    ((out_ref * w).sum() + h_ref.pow(2).sum()).backward()
    ((out * w).sum() + h.pow(2).sum()).backward()
    torch.testing.assert_close(mine.W_xh.grad, ref.weight_ih_l0.grad.T, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mine.W_hh.grad, ref.weight_hh_l0.grad.T, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mine.b_h.grad, ref.bias_ih_l0.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mine.b_h.grad, ref.bias_hh_l0.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(X2.grad, X1.grad, atol=1e-5, rtol=1e-5)


def test_step_is_the_equation_and_unroll_feeds_each_state_forward():
    rnn = RNNScratch(3, 4, seed=0)
    x, h = torch.randn(2, 3), torch.randn(2, 4)
    expected = torch.tanh(x @ rnn.W_xh + h @ rnn.W_hh + rnn.b_h)
    torch.testing.assert_close(rnn.step(x, h), expected)
    X = torch.randn(2, 5, 3)
    states = rnn.unroll(X)
    assert len(states) == 5
    # Each recorded state is the very tensor the next step used: a gradient reaches h_1 from h_5.
    g, = torch.autograd.grad(states[-1].sum(), states[0])
    assert g.abs().sum() > 0
    out, hT = rnn(X)
    torch.testing.assert_close(out[:, 2], states[2])
    torch.testing.assert_close(hT, states[-1])


def test_relu_and_bias_free_copies():
    ref, mine = _pair(4, 5, "relu", bias=False)
    assert mine.nonlinearity == "relu" and torch.all(mine.b_h == 0)
    X = torch.randn(2, 6, 4)
    torch.testing.assert_close(mine(X)[0], ref(X)[0], atol=1e-5, rtol=1e-5)


def test_seed_gives_the_same_weights():
    a, b, c = RNNScratch(3, 4, seed=7), RNNScratch(3, 4, seed=7), RNNScratch(3, 4, seed=8)
    assert torch.equal(a.W_hh, b.W_hh) and not torch.equal(a.W_hh, c.W_hh)
    assert a.W_hh.abs().max() <= 0.5  # uniform in [-1/sqrt(4), 1/sqrt(4)]


def test_bad_input_gets_clear_messages():
    rnn = RNNScratch(8, 4)
    with pytest.raises(ValueError, match=r"expected input of shape \(batch, time, 8\), got \(3, 8\)"):
        rnn(torch.randn(3, 8))
    with pytest.raises(ValueError, match=r"expected input of shape \(batch, time, 8\)"):
        rnn(torch.randn(3, 2, 5))
    with pytest.raises(TypeError, match="floating-point"):
        rnn(torch.zeros(3, 2, 8, dtype=torch.int64))
    with pytest.raises(TypeError, match=r"torch.Tensor of shape \(batch, time, 8\), got list"):
        rnn([[[0.0] * 8]])
    with pytest.raises(ValueError, match=r"initial state h0 of shape \(batch, hidden\) = \(3, 4\)"):
        rnn(torch.randn(3, 2, 8), torch.zeros(1, 3, 4))
    with pytest.raises(ValueError, match="length 0"):
        rnn(torch.randn(3, 0, 8))
    with pytest.raises(ValueError, match="nonlinearity as one of 'tanh', 'relu'"):
        RNNScratch(8, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="positive integer hidden_size"):
        RNNScratch(8, 0)


def test_from_torch_refuses_what_it_cannot_copy():
    with pytest.raises(ValueError, match="batch_first=True"):
        RNNScratch.from_torch(nn.RNN(3, 4))
    with pytest.raises(ValueError, match="num_layers=1"):
        RNNScratch.from_torch(nn.RNN(3, 4, num_layers=2, batch_first=True))
    with pytest.raises(TypeError, match="expected an nn.RNN, got LSTM"):
        RNNScratch.from_torch(nn.LSTM(3, 4, batch_first=True))
