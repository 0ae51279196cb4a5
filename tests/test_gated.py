"""The scratch LSTM and GRU against PyTorch's: outputs, final states and parameter gradients."""

import pytest
import torch
from torch import nn

from seqbook.gated import (CoupledLSTMScratch, GRUScratch, LSTMScratch, count_parameters, memory_init,
                           set_forget_bias, set_gate_bias)
from seqbook.gradients import state_jacobian_norms


def _pair(kind, input_size=3, hidden=5, seed=0, device="cpu"):
    torch.manual_seed(seed)
    ref = (nn.LSTM if kind == "lstm" else nn.GRU)(input_size, hidden, batch_first=True).to(device)
    scratch = (LSTMScratch if kind == "lstm" else GRUScratch).from_torch(ref)
    return ref, scratch


def _grads(module):
    return {name: p.grad.clone() for name, p in module.named_parameters()}


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("with_state", [False, True])
def test_outputs_states_and_gradients_match_torch(kind, with_state, device):
    ref, scratch = _pair(kind, device=device)
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(4, 9, 3, generator=gen).to(device)
    if with_state:
        h0, c0 = torch.randn(4, 5, generator=gen).to(device), torch.randn(4, 5, generator=gen).to(device)
        ref_state = (h0[None], c0[None]) if kind == "lstm" else h0[None]
        state = (h0, c0) if kind == "lstm" else h0
    else:
        ref_state = state = None
    out_ref, fin_ref = ref(X, ref_state)
    out, fin = scratch(X, state)
    assert out.shape == (4, 9, 5)
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-5)
    if kind == "lstm":
        torch.testing.assert_close(fin[0], fin_ref[0][0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(fin[1], fin_ref[1][0], atol=1e-5, rtol=1e-5)
    else:
        torch.testing.assert_close(fin, fin_ref[0], atol=1e-5, rtol=1e-5)
    # A loss that touches the outputs and the final cell state, so every path is exercised.
    weights = torch.randn(9, 5, generator=gen).to(device)
    extra_ref = fin_ref[1][0].sum() if kind == "lstm" else 0
    extra = fin[1].sum() if kind == "lstm" else 0
    ((out_ref * weights).sum() + extra_ref).backward()
    ((out * weights).sum() + extra).backward()
    g_ref, g = _grads(ref), _grads(scratch)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        torch.testing.assert_close(g[name], g_ref[name + "_l0"], atol=1e-5, rtol=1e-5)


def test_scratch_gru_is_not_the_reset_before_product_form():
    """PyTorch's GRU puts the reset gate on W_hn h + b_hn; putting it on h gives other numbers."""
    ref, scratch = _pair("gru")
    X = torch.randn(2, 6, 3)
    h = torch.zeros(2, 5)
    W_in, W_hn = scratch.block(scratch.weight_ih, "n"), scratch.block(scratch.weight_hh, "n")
    b_in, b_hn = scratch.block(scratch.bias_ih, "n"), scratch.block(scratch.bias_hh, "n")
    outs = []
    with torch.no_grad():
        for t in range(6):
            _, gates = scratch.step(X[:, t], h)
            r, z = gates["r"], gates["z"]
            n = torch.tanh(X[:, t] @ W_in.T + b_in + (r * h) @ W_hn.T + b_hn)
            h = (1 - z) * n + z * h
            outs.append(h)
        assert (torch.stack(outs, 1) - ref(X)[0]).abs().max() > 1e-3


def test_trace_records_graph_nodes_for_gradient_measurement():
    torch.manual_seed(0)
    lstm = LSTMScratch(2, 4)
    trace = lstm.run(torch.randn(3, 12, 2))
    assert len(trace.states["c"]) == 12 and set(trace.gates) == {"i", "f", "g", "o"}
    assert trace.gate_matrix("f").shape == (4, 12)
    # dC_T/dC_{T-1} for an isolated step is diag(f_T) plus the paths through the gates.
    norms = state_jacobian_norms(trace.states["c"])
    assert norms.shape == (12,) and torch.isclose(norms[-1], torch.tensor(1.0))
    assert (norms[:-1] < 1.5).all() and norms[0] < norms[-2]
    with pytest.raises(KeyError, match="unknown gate"):
        trace.gate_matrix("z")


def test_forget_bias_lengthens_the_cell_memory():
    torch.manual_seed(0)
    X = torch.randn(8, 40, 2)
    lasting = {}
    for bias in (0.0, 3.0):
        torch.manual_seed(1)
        lstm = set_forget_bias(LSTMScratch(2, 8), bias)
        norms = state_jacobian_norms(lstm.run(X).states["c"])
        lasting[bias] = float(norms[0])
    assert lasting[3.0] > 100 * lasting[0.0]


def test_set_gate_bias_and_memory_init_on_torch_and_scratch():
    lstm = nn.LSTM(2, 3, batch_first=True)
    memory_init(lstm, 2.0)
    assert torch.allclose((lstm.bias_ih_l0 + lstm.bias_hh_l0)[3:6], torch.full((3,), 2.0))
    assert torch.allclose((lstm.bias_ih_l0 + lstm.bias_hh_l0)[0:3], torch.full((3,), -2.0))
    gru = memory_init(GRUScratch(2, 3), 1.5)
    assert torch.allclose(gru.block(gru.bias_ih + gru.bias_hh, "z"), torch.full((3,), 1.5))
    with pytest.raises(TypeError, match="no forget gate"):
        set_forget_bias(gru, 1.0)
    with pytest.raises(ValueError, match="the gate as one of 'i', 'f', 'g', 'o', got 'z'"):
        set_gate_bias(lstm, "z", 1.0)
    with pytest.raises(TypeError, match="LSTM or GRU"):
        memory_init(nn.RNN(2, 3), 1.0)


def test_parameter_counts_match_torch():
    for I, H in ((3, 5), (10, 7)):
        assert count_parameters(LSTMScratch(I, H)) == count_parameters(nn.LSTM(I, H)) == 4 * (H * I + H * H + 2 * H)
        assert count_parameters(GRUScratch(I, H)) == count_parameters(nn.GRU(I, H)) == 3 * (H * I + H * H + 2 * H)


def test_coupled_lstm_ties_input_to_forget_gate():
    torch.manual_seed(0)
    cifg = CoupledLSTMScratch.from_torch(nn.LSTM(2, 3, batch_first=True))
    trace = cifg.run(torch.randn(2, 5, 2))
    for i, f in zip(trace.gates["i"], trace.gates["f"]):
        torch.testing.assert_close(i, 1 - f)
    plain = LSTMScratch.from_torch(nn.LSTM(2, 3, batch_first=True))
    assert not torch.allclose(plain(torch.ones(1, 3, 2))[0], cifg(torch.ones(1, 3, 2))[0])


def test_bad_input_gets_clear_errors():
    lstm, gru = LSTMScratch(8, 4), GRUScratch(8, 4)
    with pytest.raises(ValueError, match=r"expected input of shape \(batch, time, 8\), got \(3, 8\)"):
        lstm(torch.zeros(3, 8))
    with pytest.raises(TypeError, match="floating-point"):
        gru(torch.zeros(2, 3, 8, dtype=torch.int64))
    with pytest.raises(TypeError, match="torch.Tensor"):
        lstm([[1.0] * 8])
    with pytest.raises(TypeError, match="pair"):
        lstm(torch.zeros(2, 3, 8), torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"c of shape \(batch, hidden\) = \(2, 4\)"):
        lstm(torch.zeros(2, 3, 8), (torch.zeros(2, 4), torch.zeros(3, 4)))
    with pytest.raises(ValueError, match=r"h of shape \(batch, hidden\) = \(2, 4\)"):
        gru(torch.zeros(2, 3, 8), torch.zeros(1, 2, 4))
    with pytest.raises(TypeError, match="LSTM state"):
        gru(torch.zeros(2, 3, 8), (torch.zeros(2, 4), torch.zeros(2, 4)))
    with pytest.raises(ValueError, match="positive integer hidden_size"):
        LSTMScratch(3, 0)
    with pytest.raises(TypeError, match="expected an nn.GRU"):
        GRUScratch.from_torch(nn.LSTM(2, 3, batch_first=True))
    with pytest.raises(ValueError, match="num_layers=1.*batch_first=True"):
        LSTMScratch.from_torch(nn.LSTM(2, 3, num_layers=2))


def test_works_with_the_chapter_2_language_model():
    from seqbook.lm import RecurrentLM

    torch.manual_seed(0)
    lm = RecurrentLM(11, LSTMScratch(6, 8), embedding_dim=6)
    tokens = torch.randint(0, 11, (2, 7))
    logits, (h, c) = lm(tokens)
    assert logits.shape == (2, 7, 11) and h.shape == c.shape == (2, 8)
    logits2, _ = lm(tokens[:, 4:], (h.detach(), c.detach()))
    assert logits2.shape == (2, 3, 11)
