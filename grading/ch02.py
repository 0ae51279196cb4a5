"""How chapter 2's exercises are graded (recurrent networks, backpropagation through time).

Each hidden test is a self-contained function: its parameters name the notebook variables it
reads, and it computes its own reference answer (never from ``seqbook.exercises``).
"""

from seqbook.authoring.grader import GradingSpec

spec = GradingSpec(
    # the ReLU exercise may call the decay table's decay_curve, on its inputs X_decay
    setup=["X_decay", "decay_curve"],
    # the sampling exercise ends with samples of the chapter's trained language model
    experiments=["lm", "PREFIX", "vocab"],
)

spec.auto("ch2-ex-vanishing", written=1)


@spec.hidden("ch2-ex-vanishing", points=1)
def factor_after_100_steps(after_100):
    right = 2.0 ** -100
    assert abs(float(after_100) - right) < 1e-6 * right, f"{after_100!r} is not the factor after 100 steps"


@spec.hidden("ch2-ex-vanishing", points=1)
def float32_underflows_to_zero(float32_after_150):
    assert float32_after_150 is not None and float(float32_after_150) == 0.0, \
        f"float32 rounds 2^-150 (half the smallest subnormal) to 0, not {float32_after_150!r}"


# written: does the embedding save parameters here, and for which sizes?
spec.auto("ch2-ex-sharing", written=1)


@spec.hidden("ch2-ex-sharing", points=1)
def shared_parameters(shared):
    d, h = 67, 128
    assert int(shared) == shared and int(shared) == d * h + h * h + h, f"{shared!r} is not the count of W_xh, W_hh, b_h"


@spec.hidden("ch2-ex-sharing", points=1)
def unshared_parameters(unshared):
    d, h = 67, 128
    assert int(unshared) == unshared and int(unshared) == 64 * (d * h + h * h + h), f"{unshared!r}: one set per step, 64 steps"


@spec.hidden("ch2-ex-sharing", points=1)
def parameters_with_an_embedding(embedded):
    d, e, h = 67, 64, 128
    assert int(embedded) == embedded and int(embedded) == d * e + e * h + h * h + h, \
        f"{embedded!r} is not the count of the embedding table, W_xh (64 x 128), W_hh and b_h"


@spec.hidden("ch2-ex-sharing", points=1)
def largest_embedding_that_saves(break_even):
    d, h = 67, 128
    right = max(k for k in range(1, d * h) if d * k + k * h < d * h)
    assert int(break_even) == break_even and int(break_even) == right, \
        f"{break_even!r} is not the largest size k with 67 k + k 128 < 67 x 128"


spec.auto("ch2-ex-step-jacobian", written=1)


@spec.hidden("ch2-ex-step-jacobian", points=1)
def jacobian_of_a_tanh_step(step_jacobian):
    import torch
    from seqbook.rnn import RNNScratch
    rnn = RNNScratch(4, 6, nonlinearity="tanh", seed=21).double()
    gen = torch.Generator().manual_seed(21)
    x, h = torch.randn(4, generator=gen, dtype=torch.float64), torch.randn(6, generator=gen, dtype=torch.float64)
    step = lambda hh: torch.tanh(x @ rnn.W_xh + hh @ rnn.W_hh + rnn.b_h)  # noqa: E731
    right = torch.autograd.functional.jacobian(step, h).detach()
    got = torch.as_tensor(step_jacobian(rnn, x, h)).detach().double()
    assert got.shape == right.shape and torch.allclose(got, right, atol=1e-6), \
        "the tanh Jacobian differs from autograd's (entry (j, i) is dh_t[j] / dh_prev[i])"


@spec.hidden("ch2-ex-step-jacobian", points=1)
def jacobian_of_a_relu_step(step_jacobian):
    import torch
    from seqbook.rnn import RNNScratch
    rnn = RNNScratch(4, 6, nonlinearity="relu", seed=22).double()
    gen = torch.Generator().manual_seed(22)
    x, h = torch.randn(4, generator=gen, dtype=torch.float64), torch.randn(6, generator=gen, dtype=torch.float64)
    step = lambda hh: torch.relu(x @ rnn.W_xh + hh @ rnn.W_hh + rnn.b_h)  # noqa: E731
    right = torch.autograd.functional.jacobian(step, h).detach()
    assert 0 < int((right.abs().sum(1) == 0).sum()) < 6, "the test case should have active and inactive units"
    got = torch.as_tensor(step_jacobian(rnn, x, h)).detach().double()
    assert got.shape == right.shape and torch.allclose(got, right, atol=1e-6), \
        "the ReLU Jacobian differs from autograd's: its slope is 1 where a > 0 and 0 elsewhere"


spec.auto("ch2-ex-bptt", written=1)


@spec.hidden("ch2-ex-bptt", points=1)
def bptt_of_one_step(bptt):
    import torch
    from seqbook.rnn import RNNScratch
    rnn = RNNScratch(2, 3, seed=40).double()
    gen = torch.Generator().manual_seed(40)
    X, dL = torch.randn(2, 1, 2, generator=gen, dtype=torch.float64), torch.randn(2, 1, 3, generator=gen, dtype=torch.float64)
    loss = (rnn(X)[0] * dL).sum()
    right = torch.autograd.grad(loss, [rnn.W_xh, rnn.W_hh, rnn.b_h])
    with torch.no_grad():
        got = bptt(rnn, X, dL)
    assert len(got) == 3 and all(torch.allclose(torch.as_tensor(g).double(), r, atol=1e-8) for g, r in zip(got, right)), \
        "with a single step (no recurrence yet) the gradients differ from autograd's"


@spec.hidden("ch2-ex-bptt", points=2)
def bptt_through_many_steps(bptt):
    import torch
    from seqbook.rnn import RNNScratch
    rnn = RNNScratch(3, 5, seed=41).double()
    gen = torch.Generator().manual_seed(41)
    X, dL = torch.randn(4, 12, 3, generator=gen, dtype=torch.float64), torch.randn(4, 12, 5, generator=gen, dtype=torch.float64)
    loss = (rnn(X)[0] * dL).sum()
    right = torch.autograd.grad(loss, [rnn.W_xh, rnn.W_hh, rnn.b_h])
    with torch.no_grad():
        got = bptt(rnn, X, dL)
    for name, g, r in zip(("dW_xh", "dW_hh", "db_h"), got, right):
        g = torch.as_tensor(g).double()
        assert g.shape == r.shape and torch.allclose(g, r, atol=1e-8), f"over 12 steps your {name} differs from autograd's"


spec.auto("ch2-ex-clipping", written=1)


@spec.hidden("ch2-ex-clipping", points=2)
def clipping_keeps_the_direction(clip):
    import torch
    gen = torch.Generator().manual_seed(50)
    grads = [torch.randn(5, 2, generator=gen) * 4, torch.randn(7, generator=gen), torch.randn(1, generator=gen) * 10]
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
    out = clip([g.clone() for g in grads], 2.5)
    assert len(out) == 3, f"expected 3 tensors back, got {len(out)}"
    for g, o in zip(grads, out):
        assert torch.allclose(torch.as_tensor(o).double(), g.double() * 2.5 / norm, atol=1e-6), \
            "every gradient must be scaled by the same factor max_norm / global norm"


@spec.hidden("ch2-ex-clipping", points=1)
def small_and_zero_gradients_stay(clip):
    import torch
    small = [torch.full((3,), 0.01), torch.full((2, 2), -0.02)]
    for grads in (small, [torch.zeros(3), torch.zeros(2, 2)]):
        out = clip([g.clone() for g in grads], 1.0)
        assert all(torch.equal(torch.as_tensor(o), g) for o, g in zip(out, grads)), \
            "gradients whose global norm is already at most max_norm (or zero) must come back unchanged"


spec.auto("ch2-ex-decay-steps")


@spec.hidden("ch2-ex-decay-steps", points=1)
def decay_steps_by_hand(steps_below):
    import math
    right = next(k for k in range(1, 1000) if 0.8 ** k < 1e-6)
    assert math.isclose(float(steps_below), right), f"{steps_below!r}: 0.8^k first falls below 1e-6 at another k"


@spec.hidden("ch2-ex-decay-steps", points=1)
def decay_curve_measured(measured_norms):
    import torch
    curve = torch.as_tensor(measured_norms, dtype=torch.float64).detach().cpu()
    assert curve.dim() == 1 and curve.numel() == 80, \
        f"expected the 80 measured norms ordered by distance, got shape {tuple(curve.shape)}"
    expected = 0.8 ** torch.arange(80, dtype=torch.float64)
    assert torch.allclose(curve, expected, rtol=1e-3, atol=0.0), \
        "the measured curve should be 0.8^k at every distance k (linear regime, ordered by distance)"
    right = next(k for k in range(1, 1000) if 0.8 ** k < 1e-6)
    assert int((curve < 1e-6 * curve[0]).nonzero()[0, 0]) == right


# written: why ReLU decays faster below 1 and grows faster at s = 2
spec.auto("ch2-ex-relu", written=1)


@spec.hidden("ch2-ex-relu", points=1)
def relu_rates_measured(relu_rates):
    import torch
    from seqbook import gradients, seeding
    from seqbook import rnn as recurrent
    inputs = torch.randn(8, 60, 16, generator=seeding.generator(2))
    for scale in (0.5, 1.0, 2.0):
        net = recurrent.RNNScratch(16, 64, nonlinearity="relu", seed=0)
        gradients.orthogonal_(net.W_hh, scale, seed=1)
        right = gradients.fit_rate(gradients.state_jacobian_norms(net.unroll(inputs)).flip(0))
        assert abs(float(relu_rates[scale]) - right) < 0.01, \
            f"{relu_rates[scale]!r} is not the ReLU rate at s = {scale}"


spec.auto("ch2-ex-sampling", written=2,
          note="the written part: the samples of the trained model at 0.5 and 1.5, and what changes. "
               "The graded notebook has no trained model: run that part in the chapter's notebook.")


@spec.hidden("ch2-ex-sampling", points=1)
def sampler_feeds_each_draw_back(sample_text):
    import torch
    from seqbook.lm import RecurrentLM
    from seqbook.rnn import RNNScratch
    model = RecurrentLM(4, RNNScratch(4, 4, seed=0))       # says (t + 3) mod 4 after t, almost surely
    with torch.no_grad():
        model.layer.W_xh.copy_(3 * torch.eye(4))
        model.layer.W_hh.zero_()
        model.layer.b_h.zero_()
        model.output.weight.copy_(40 * torch.roll(torch.eye(4), 3, dims=0))
        model.output.bias.zero_()
    got = [int(t) for t in sample_text(model.eval(), [0], 5, 1.0, 11)]
    assert got == [3, 2, 1, 0, 3], f"after [0] a model that says t + 3 (mod 4) should give [3, 2, 1, 0, 3], got {got}"


@spec.hidden("ch2-ex-sampling", points=2)
def sampler_follows_softmax_of_logits_over_temperature(sample_text):
    import math
    import torch
    from seqbook.lm import RecurrentLM
    from seqbook.rnn import RNNScratch
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(23)
        model = RecurrentLM(3, RNNScratch(3, 5, seed=23)).eval()
    with torch.no_grad():
        logits, _ = model(torch.tensor([[2, 0, 1]]))
    for temperature in (0.4, 2.5):
        p = torch.softmax(logits[0, -1] / temperature, dim=-1).tolist()
        firsts = [int(sample_text(model, [2, 0, 1], 1, temperature, seed)[0]) for seed in range(500, 2000)]
        for token, q in enumerate(p):
            share = firsts.count(token) / len(firsts)
            assert abs(share - q) < 5 * math.sqrt(q * (1 - q) / len(firsts)) + 1e-3, \
                f"at temperature {temperature}, id {token} came first {share:.1%} of the time, expected {q:.1%}"


@spec.hidden("ch2-ex-sampling", points=1)
def sampler_is_reproducible(sample_text):
    import torch
    from seqbook.lm import RecurrentLM
    from seqbook.rnn import RNNScratch
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(4)
        model = RecurrentLM(6, RNNScratch(6, 8, seed=4)).eval()
    runs = [[int(t) for t in sample_text(model, [1, 5], 12, 1.0, 99)] for _ in range(3)]
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) == 12, "the same seed must give the same 12 ids"


spec.manual("ch2-ex-bound", points=3)
spec.manual("ch2-ex-truncation", points=3)
