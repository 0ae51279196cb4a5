"""How chapter 3's exercises are graded (LSTM and GRU, bidirectional and stacked RNNs).

Each hidden test is a self-contained function: its parameters name the notebook variables it
reads, and it computes its own reference answer (never from ``seqbook.exercises``).
"""

from seqbook.authoring.grader import GradingSpec

spec = GradingSpec()

spec.auto("ch3-ex-count-params", written=1)


@spec.hidden("ch3-ex-count-params", points=1)
def lstm_parameters(lstm_params):
    d, h = 3, 5
    assert int(lstm_params) == lstm_params and int(lstm_params) == 4 * (h * d + h * h + 2 * h), \
        f"{lstm_params!r} is not the number of parameters of nn.LSTM(3, 5)"


@spec.hidden("ch3-ex-count-params", points=1)
def gru_parameters(gru_params):
    d, h = 3, 5
    assert int(gru_params) == gru_params and int(gru_params) == 3 * (h * d + h * h + 2 * h), \
        f"{gru_params!r} is not the number of parameters of nn.GRU(3, 5)"


spec.auto("ch3-ex-cell-jacobian", written=3,
          note="the written part: when the LSTM's three extra terms (b) are small, and the RNN comparison (c)")


@spec.hidden("ch3-ex-cell-jacobian", points=2)
def gru_jacobian_on_a_new_step(gru_jacobian):
    import torch
    from seqbook.gated import GRUScratch
    gen = torch.Generator().manual_seed(62)
    gru = GRUScratch(5, 3)
    with torch.no_grad():
        for p in gru.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x, h = torch.randn(5, generator=gen), torch.randn(3, generator=gen)
    right = torch.autograd.functional.jacobian(lambda prev: gru.step(x[None], prev[None])[0][0], h)
    with torch.no_grad():
        J = gru_jacobian(gru, x, h)
    assert isinstance(J, torch.Tensor) and tuple(J.shape) == (3, 3), "expected a (3, 3) tensor"
    assert torch.allclose(J, right, atol=1e-4), "not dh_t/dh_{t-1} of this GRU step"


@spec.hidden("ch3-ex-cell-jacobian", points=2)
def lstm_cell_jacobian_on_a_new_step(lstm_cell_jacobian):
    import torch
    from seqbook.gated import LSTMScratch
    gen = torch.Generator().manual_seed(63)
    lstm = LSTMScratch(2, 5)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x, c, o = torch.randn(2, generator=gen), 2 * torch.randn(5, generator=gen), torch.rand(5, generator=gen)
    right = torch.autograd.functional.jacobian(
        lambda prev: lstm.step(x[None], (o * torch.tanh(prev))[None], prev[None])[1][0], c)
    with torch.no_grad():
        J = lstm_cell_jacobian(lstm, x, c, o)
    assert isinstance(J, torch.Tensor) and tuple(J.shape) == (5, 5), "expected a (5, 5) tensor"
    assert torch.allclose(J, right, atol=1e-4), "not dc_t/dc_{t-1} of this LSTM step"

spec.auto("ch3-ex-forget-memory", written=2)


@spec.hidden("ch3-ex-forget-memory", points=2)
def steps_to_one_percent(k_bias0, k_bias1, k_bias3):
    import math
    for b, k in ((0, k_bias0), (1, k_bias1), (3, k_bias3)):
        f = 1 / (1 + math.exp(-b))
        right = next(n for n in range(1, 10_000) if f ** n < 0.01)
        assert k is not None and k is not Ellipsis and int(k) == right, f"for b_f = {b}: {k!r} steps is not it"


spec.auto("ch3-ex-gru-conventions", written=3,
          note="the written part: the relabelling argued, and the reset-gate conditions (W_hn diagonal and b_hn = 0)")


@spec.hidden("ch3-ex-gru-conventions", points=1)
def chung_update_on_a_new_gru(chung_update_weights):
    import torch
    from seqbook.gated import GRUScratch
    gen = torch.Generator().manual_seed(64)
    gru = GRUScratch(2, 5)
    with torch.no_grad():
        for p in gru.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x, h = torch.randn(6, 2, generator=gen), torch.randn(6, 5, generator=gen)
    z_rows = slice(5, 10)
    given = (gru.weight_ih[z_rows], gru.weight_hh[z_rows], gru.bias_ih[z_rows], gru.bias_hh[z_rows])
    with torch.no_grad():
        W_iz, W_hz, b_iz, b_hz = chung_update_weights(*(t.detach().clone() for t in given))
        right, gates = gru.step(x, h)
        z_chung = torch.sigmoid(x @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
        chung = (1 - z_chung) * h + z_chung * gates["n"]
    assert torch.allclose(chung, right, atol=1e-5), \
        "with these update-gate weights Chung et al.'s form does not compute PyTorch's GRU step"

spec.auto("ch3-ex-coupled", written=1)


@spec.hidden("ch3-ex-coupled", points=2)
def coupled_step_on_a_new_cell(coupled_step):
    import torch
    from seqbook.gated import LSTMScratch
    gen = torch.Generator().manual_seed(60)
    lstm = LSTMScratch(5, 3)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x, h, c = (torch.randn(4, n, generator=gen) for n in (5, 3, 3))
    pre = x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh
    f, g, o = torch.sigmoid(pre[:, 3:6]), torch.tanh(pre[:, 6:9]), torch.sigmoid(pre[:, 9:12])
    c_right = f * c + (1 - f) * g
    with torch.no_grad():
        h_new, c_new = coupled_step(lstm, x, h, c)
    assert torch.allclose(c_new, c_right.detach(), atol=1e-5), "the new cell is not f * c + (1 - f) * g"
    assert torch.allclose(h_new, (o * torch.tanh(c_right)).detach(), atol=1e-5), "the new state is not o * tanh(c_new)"


@spec.hidden("ch3-ex-coupled", points=1)
def coupled_step_ignores_the_input_gate(coupled_step):
    import torch
    from seqbook.gated import LSTMScratch
    gen = torch.Generator().manual_seed(61)
    lstm = LSTMScratch(2, 3)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x, h, c = (torch.randn(1, n, generator=gen) for n in (2, 3, 3))
    with torch.no_grad():
        before = [t.clone() for t in coupled_step(lstm, x, h, c)]
        lstm.weight_ih[:3].mul_(-7.0)
        lstm.bias_hh[:3].add_(5.0)
        after = coupled_step(lstm, x, h, c)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(after, before)), \
        "changing the input-gate block changed the result: the coupled cell uses 1 - f instead"


spec.auto("ch3-ex-bidirectional", written=1)


@spec.hidden("ch3-ex-bidirectional", points=2)
def bidirectional_with_new_layers(bidirectional_outputs):
    import torch
    torch.manual_seed(70)
    fwd, bwd = torch.nn.GRU(3, 4, batch_first=True), torch.nn.GRU(3, 4, batch_first=True)
    X = torch.randn(3, 6, 3)
    with torch.no_grad():
        right = torch.cat([fwd(X)[0], bwd(X.flip(1))[0].flip(1)], dim=-1)
        got = bidirectional_outputs(fwd, bwd, X.clone())
    assert tuple(got.shape) == (3, 6, 8), f"expected outputs of shape (3, 6, 8), got {tuple(got.shape)}"
    assert torch.allclose(got, right, atol=1e-6), "step t must hold fwd's output for x_1..x_t and bwd's for x_T..x_t"


@spec.hidden("ch3-ex-bidirectional", points=1)
def bidirectional_of_one_step(bidirectional_outputs):
    import torch
    torch.manual_seed(71)
    fwd, bwd = torch.nn.RNN(2, 3, batch_first=True), torch.nn.RNN(2, 3, batch_first=True)
    X = torch.randn(2, 1, 2)
    with torch.no_grad():
        got = bidirectional_outputs(fwd, bwd, X)
        right = torch.cat([fwd(X)[0], bwd(X)[0]], dim=-1)
    assert tuple(got.shape) == (2, 1, 6) and torch.allclose(got, right, atol=1e-6), \
        "for a single step the result is the two layers' outputs side by side, fwd's first"


spec.auto("ch3-ex-peephole", written=3)


@spec.hidden("ch3-ex-peephole", points=2)
def peephole_step_on_a_new_cell(peephole_step):
    import torch
    from seqbook.gated import LSTMScratch
    gen = torch.Generator().manual_seed(80)
    lstm = LSTMScratch(3, 5)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    peep = {k: torch.randn(5, generator=gen) for k in "ifo"}
    x, h, c = (torch.randn(2, n, generator=gen) for n in (3, 5, 5))
    with torch.no_grad():
        a_i, a_f, a_g, a_o = (x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh).chunk(4, -1)
        c_right = torch.sigmoid(a_f + peep["f"] * c) * c + torch.sigmoid(a_i + peep["i"] * c) * torch.tanh(a_g)
        h_right = torch.sigmoid(a_o + peep["o"] * c_right) * torch.tanh(c_right)
        h_new, c_new = peephole_step(lstm, peep, x, h, c)
    assert torch.allclose(c_new, c_right, atol=1e-5), "the new cell is wrong: i and f read the old cell c"
    assert torch.allclose(h_new, h_right, atol=1e-5), "the new state is wrong: the output gate reads the new cell"


@spec.hidden("ch3-ex-peephole", points=1)
def zero_peepholes_give_the_lstm(peephole_step):
    import torch
    from seqbook.gated import LSTMScratch
    gen = torch.Generator().manual_seed(81)
    lstm = LSTMScratch(2, 4)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x, h, c = (torch.randn(3, n, generator=gen) for n in (2, 4, 4))
    with torch.no_grad():
        a_i, a_f, a_g, a_o = (x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh).chunk(4, -1)
        c_right = torch.sigmoid(a_f) * c + torch.sigmoid(a_i) * torch.tanh(a_g)
        h_new, c_new = peephole_step(lstm, {k: torch.zeros(4) for k in "ifo"}, x, h, c)
    assert torch.allclose(c_new, c_right, atol=1e-5) and \
        torch.allclose(h_new, torch.sigmoid(a_o) * torch.tanh(c_right), atol=1e-5), \
        "with all peepholes at zero the step must be the ordinary LSTM step"
