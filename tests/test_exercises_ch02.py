"""Chapter 2's checkers: right answers pass, typical wrong ones get their hint, junk never raises."""

import itertools
import math

import numpy as np
import pytest
import torch

from seqbook.exercises.ch02 import (DECAY, DECAY_UNROLL, SHARING, check_bptt, check_clip_by_global_norm,
                                    check_decay_measurement, check_decay_steps,
                                    check_parameter_counts, check_relu_rates, check_step_jacobian,
                                    check_vanishing_gradient, relu_decay_rates)


def _fails_with(verdict, text):
    assert not verdict, verdict.message
    assert text in verdict.message, verdict.message


# -- 0.5^100 and float32 ----------------------------------------------------------------------
def test_vanishing_right_answers(capsys):
    assert check_vanishing_gradient(0.5 ** 100, float(torch.tensor(0.5) ** 150))
    assert check_vanishing_gradient(torch.tensor(0.5, dtype=torch.float64) ** 100, 0.0)
    assert "✅" in capsys.readouterr().out


@pytest.mark.parametrize("a100,a150,hint", [
    (50, 0.0, "0.5 x 100"),
    (0.5 ** 99, 0.0, "100 Jacobians"),
    (100 * math.log10(0.5), 0.0, "logarithm"),
    (1 - 0.5 ** 100, 0.0, "what is left"),
    (0.5 ** 100, 0.5 ** 150, "exact value"),
    (0.5 ** 100, 2.0 ** -149, "tie"),
    (0.5 ** 100, float(np.finfo(np.float32).tiny), "normal"),
    (0.5 ** 100, 1e-10, "not what float32 gives"),
    (0.5 ** 100, "zero", "as a Python number"),
])
def test_vanishing_typical_mistakes(a100, a150, hint):
    _fails_with(check_vanishing_gradient(a100, a150), hint)


def test_vanishing_junk():
    _fails_with(check_vanishing_gradient(..., 0.0), "placeholder")
    _fails_with(check_vanishing_gradient(0.5 ** 100, float("nan")), "got nan")
    _fails_with(check_vanishing_gradient([1, 2], 0.0), "expected")


# -- parameter sharing ---------------------------------------------------------------------------
def test_parameter_counts():
    d, h, T = SHARING["input_size"], SHARING["hidden_size"], SHARING["steps"]
    n = d * h + h * h + h
    assert check_parameter_counts(n, T * n)
    # the ratio is T's, the shared count is the one that does not depend on the length
    assert f"{T} times fewer at {T} steps" in check_parameter_counts(n, T * n).message
    _fails_with(check_parameter_counts(n - h, T * n), "bias")
    _fails_with(check_parameter_counts(n + h, T * n), "two biases")
    _fails_with(check_parameter_counts(n, T * h * h + d * h + h), "only W_hh")
    _fails_with(check_parameter_counts(n, n), "not it")
    _fails_with(check_parameter_counts(..., ...), "placeholder")


def test_parameter_counts_with_an_embedding():
    d, h, T, e = (SHARING[k] for k in ("input_size", "hidden_size", "steps", "embedding_dim"))
    n = d * h + h * h + h
    right = d * e + e * h + h * h + h
    verdict = check_parameter_counts(n, T * n, right)
    assert verdict and str(right) in verdict.message and str(right - n) in verdict.message
    assert right == 28_992 and right - n == 3_904   # the numbers of the solution's text
    _fails_with(check_parameter_counts(n, T * n, e * h + h * h + h), "embedding table itself")
    _fails_with(check_parameter_counts(n, T * n, d * e + d * h + h * h + h), "embedding_dim x hidden_size")
    _fails_with(check_parameter_counts(n, T * n, right + h), "two biases")
    _fails_with(check_parameter_counts(n, T * n, right - h), "bias b_h")
    _fails_with(check_parameter_counts(n, T * n, d * e), "embedding table alone")
    _fails_with(check_parameter_counts(n, T * n, n), "not it")
    # the first two answers are checked first; junk in the third gets a clear message
    _fails_with(check_parameter_counts(n - h, T * n, right), "bias")
    _fails_with(check_parameter_counts(n, T * n, ...), "placeholder")
    _fails_with(check_parameter_counts(n, T * n, "many"), "as a Python number")
    _fails_with(check_parameter_counts(n, T * n, [right]), "expected")


def test_parameter_counts_break_even_embedding_size():
    d, h, T, e = (SHARING[k] for k in ("input_size", "hidden_size", "steps", "embedding_dim"))
    n, right = d * h + h * h + h, d * e + e * h + h * h + h
    verdict = check_parameter_counts(n, T * n, right, 43)
    assert verdict and "43 is right" in verdict.message and "8,385" in verdict.message
    # 43 is the largest size that saves; 44 is the first that costs (the solution's text)
    assert d * 43 + 43 * h < d * h < d * 44 + 44 * h
    _fails_with(check_parameter_counts(n, T * n, right, 44), "round it down")
    _fails_with(check_parameter_counts(n, T * n, right, 64), "costs parameters")
    _fails_with(check_parameter_counts(n, T * n, right, 67), "only adds its table")
    _fails_with(check_parameter_counts(n, T * n, right, 20), "not it")
    _fails_with(check_parameter_counts(n, T * n, right, 43.5), "whole number")
    _fails_with(check_parameter_counts(n, T * n, right, 0), "positive whole number")
    _fails_with(check_parameter_counts(n, T * n, right, ...), "placeholder")
    # the embedded count is checked first
    _fails_with(check_parameter_counts(n, T * n, right - h, 43), "bias b_h")


# -- the Jacobian of one step -------------------------------------------------------------------
def right_jacobian(rnn, x, h):
    a = x @ rnn.W_xh + h @ rnn.W_hh + rnn.b_h
    slope = 1 - torch.tanh(a) ** 2 if rnn.nonlinearity == "tanh" else (a > 0).to(a.dtype)
    return torch.diag(slope) @ rnn.W_hh.T


def test_step_jacobian_right():
    assert check_step_jacobian(right_jacobian)
    # autograd is a right answer too
    assert check_step_jacobian(lambda rnn, x, h: torch.autograd.functional.jacobian(
        lambda hh: rnn.step(x[None], hh[None])[0], h))


@pytest.mark.parametrize("wrong,hint", [
    (lambda rnn, x, h: right_jacobian(rnn, x, h).T, "transpose"),
    (lambda rnn, x, h: rnn.W_hh.T, "alone"),
    (lambda rnn, x, h: rnn.W_hh, "alone"),
    (lambda rnn, x, h: torch.diag(1 - h ** 2) @ rnn.W_hh.T, "not at h_{t-1}"),
    (lambda rnn, x, h: torch.diag(1 - (x @ rnn.W_xh + h @ rnn.W_hh + rnn.b_h) ** 2) @ rnn.W_hh.T, "1 - a^2"),
    (lambda rnn, x, h: torch.diag(1 - torch.tanh(x @ rnn.W_xh + h @ rnn.W_hh + rnn.b_h) ** 2) @ rnn.W_hh.T,
     "uses ReLU"),
    (lambda rnn, x, h: torch.zeros(5), "(5, 5)"),
    (lambda rnn, x, h: torch.zeros(5, 5), "differs from autograd"),
    (lambda rnn, x, h: "matrix", "expected a tensor"),
    (lambda rnn, x, h: 1 / 0, "ZeroDivisionError"),
    ("not a function", "expected a function"),
    (..., "placeholder"),
])
def test_step_jacobian_mistakes(wrong, hint):
    _fails_with(check_step_jacobian(wrong), hint)


def test_step_jacobian_stub():
    def stub(rnn, x, h):
        raise NotImplementedError
    _fails_with(check_step_jacobian(stub), "placeholder")


# -- clipping ------------------------------------------------------------------------------------
def right_clip(grads, max_norm):
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    return [g * min(1.0, max_norm / float(norm)) if norm > 0 else g for g in grads]


def _no_zero_guard(grads, max_norm):
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    return [g * min(1.0, max_norm / float(norm)) for g in grads]


def _tensor_division(grads, max_norm):
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    return [g / norm * torch.clamp(norm, max=max_norm) for g in grads]  # 0 / 0 = nan at norm 0


def test_clip_right():
    assert check_clip_by_global_norm(right_clip)

    def with_torch(grads, max_norm):
        params = [torch.zeros_like(g, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        torch.nn.utils.clip_grad_norm_(params, max_norm)
        return [p.grad for p in params]
    assert check_clip_by_global_norm(with_torch)


def _in_place_only(grads, max_norm):
    right_clip(grads, max_norm)


@pytest.mark.parametrize("wrong,hint", [
    (lambda grads, m: [g * min(1.0, m / float(g.norm())) for g in grads], "each tensor on its own"),
    (lambda grads, m: [g.clamp(-m, m) for g in grads], "clamped"),
    (lambda grads, m: [g * (m / float(torch.sqrt(sum((x ** 2).sum() for x in grads)))) for g in grads],
     "only ever shrinks"),
    (_in_place_only, "returned None"),
    (lambda grads, m: torch.cat([g.flatten() for g in grads]), "list of 2 tensors"),
    (lambda grads, m: [g.flatten() for g in grads], "same shape"),
    (lambda grads, m: [g * 0.5 for g in grads], "differs"),
    (..., "placeholder"),
    (_no_zero_guard, "norm of 0"),
    (_tensor_division, "norm of 0"),
])
def test_clip_mistakes(wrong, hint):
    _fails_with(check_clip_by_global_norm(wrong), hint)


# -- decay steps ---------------------------------------------------------------------------------
def test_decay_steps():
    k = math.ceil(math.log(DECAY["fraction"]) / math.log(DECAY["scale"]))
    assert DECAY["scale"] ** k < DECAY["fraction"] <= DECAY["scale"] ** (k - 1)
    assert check_decay_steps(k)
    assert check_decay_steps(np.int64(k))
    _fails_with(check_decay_steps(math.log(1e-6) / math.log(0.8)), "whole")
    _fails_with(check_decay_steps(k - 1), "still above")
    _fails_with(check_decay_steps(math.log(1e-6) / math.log10(0.8)), "bases")
    _fails_with(check_decay_steps(10), "Solve")
    _fails_with(check_decay_steps("sixty"), "as a Python number")
    assert check_decay_steps(str(k))  # text that reads as a number is taken as one
    _fails_with(check_decay_steps(None), "placeholder")


def _decay_curve(scale=DECAY["scale"], zero_input=True, steps=DECAY_UNROLL):
    from seqbook.gradients import orthogonal_, state_jacobian_norms
    from seqbook.rnn import RNNScratch
    rnn = RNNScratch(1, 32, seed=0)
    with torch.no_grad():
        if zero_input:
            rnn.W_xh.zero_()
            rnn.b_h.zero_()
    orthogonal_(rnn.W_hh, scale, seed=0)
    X = torch.zeros(1, steps, 1) if zero_input else torch.randn(1, steps, 1, generator=torch.Generator().manual_seed(0))
    return state_jacobian_norms(rnn.unroll(X))


def test_decay_measurement():
    k = math.ceil(math.log(DECAY["fraction"]) / math.log(DECAY["scale"]))
    curve = _decay_curve().flip(0)
    verdict = check_decay_measurement(curve)
    assert verdict and f"k = {k}" in verdict.message
    assert check_decay_measurement(curve.tolist())           # a list of floats is a curve too
    _fails_with(check_decay_measurement(k), "not a single number")
    _fails_with(check_decay_measurement(torch.tensor(float(k))), "not a single number")
    _fails_with(check_decay_measurement(_decay_curve()), "wrong way")
    _fails_with(check_decay_measurement(curve[:40]), f"expected {DECAY_UNROLL} norms")
    _fails_with(check_decay_measurement(curve[None]), "1-d")
    _fails_with(check_decay_measurement(_decay_curve(scale=0.9).flip(0)), "not 0.8")
    _fails_with(check_decay_measurement(None), "placeholder")
    # a state away from 0 (random input, biases kept): tanh' < 1 bends the curve
    bent = _decay_curve(zero_input=False).flip(0)
    assert not check_decay_measurement(bent)
    # the typed answer alone cannot pass: a fake curve that merely crosses 1e-6 at k fails
    fake = torch.ones(DECAY_UNROLL); fake[k:] = 1e-7
    assert not check_decay_measurement(fake)


# -- backpropagation through time by hand ----------------------------------------------------------
def right_bptt(rnn, X, dL_dh):
    batch, steps, _ = X.shape
    h = X.new_zeros(batch, rnn.hidden_size)
    previous, slopes = [], []
    for t in range(steps):
        previous.append(h)
        h = torch.tanh(X[:, t] @ rnn.W_xh + h @ rnn.W_hh + rnn.b_h)
        slopes.append(1 - h ** 2)
    dW_xh, dW_hh, db_h = (torch.zeros_like(p) for p in (rnn.W_xh, rnn.W_hh, rnn.b_h))
    delta_next = torch.zeros_like(h)
    for t in reversed(range(steps)):
        delta = (dL_dh[:, t] + delta_next @ rnn.W_hh.T) * slopes[t]
        dW_xh += X[:, t].T @ delta
        dW_hh += previous[t].T @ delta
        db_h += delta.sum(0)
        delta_next = delta
    return dW_xh, dW_hh, db_h


def _variant(**changes):
    """right_bptt with one typical mistake."""
    def bptt(rnn, X, dL_dh):
        batch, steps, _ = X.shape
        h = X.new_zeros(batch, rnn.hidden_size)
        previous, states, pre = [], [], []
        for t in range(steps):
            previous.append(h)
            a = X[:, t] @ rnn.W_xh + h @ rnn.W_hh + rnn.b_h
            h = torch.tanh(a)
            states.append(h)
            pre.append(a)
        grads = [torch.zeros_like(p) for p in (rnn.W_xh, rnn.W_hh, rnn.b_h)]
        delta_next = torch.zeros_like(h)
        W_back = rnn.W_hh if changes.get("untransposed") else rnn.W_hh.T
        for t in reversed(range(steps)):
            g = dL_dh[:, t] + (0 if changes.get("no_recurrence") else delta_next @ W_back)
            slope = (1.0 if changes.get("no_slope") else 1 - pre[t] ** 2 if changes.get("slope_of_a")
                     else 1 - states[t] ** 2)
            delta = g * slope
            grads[0] += X[:, t].T @ delta
            grads[1] += (states[t] if changes.get("h_t") else previous[t]).T @ delta
            grads[2] = grads[2] + (delta if changes.get("bias_per_example") else delta.sum(0))
            delta_next = delta
        if changes.get("transposed"):
            grads[1] = grads[1].T
        if changes.get("average"):
            grads = [g / batch for g in grads]
        if changes.get("pytorch_layout"):
            grads[0] = grads[0].T
        return tuple(grads)
    return bptt


def _with_autograd(rnn, X, dL_dh):
    outputs, _ = rnn(X)
    return torch.autograd.grad((outputs * dL_dh).sum(), [rnn.W_xh, rnn.W_hh, rnn.b_h])


def test_bptt_right():
    assert check_bptt(right_bptt)
    # the reference inside the checker is autograd, and the checker's own recursion agrees with it
    from seqbook.exercises.ch02 import BPTT_CASES, _autograd_bptt, _bptt_case, _bptt_variant
    for case in BPTT_CASES:
        rnn, X, dL_dh = _bptt_case(**case)
        for a, b in zip(_autograd_bptt(rnn, X, dL_dh), _bptt_variant(rnn, X, dL_dh)):
            assert torch.allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("wrong,hint", [
    (_variant(no_recurrence=True), "carry delta backwards"),
    (_variant(untransposed=True), "not W_hh:"),
    (_variant(no_slope=True), "slope of tanh"),
    (_variant(slope_of_a=True), "not 1 - a_t^2"),
    (_variant(h_t=True), "previous state h_{t-1}"),
    (_variant(transposed=True), "transposed"),
    (_variant(average=True), "average"),
    (_variant(bias_per_example=True), "sum the bias gradient over the batch"),
    (_variant(pytorch_layout=True), "not PyTorch's transposed one"),
    (_with_autograd, "torch.no_grad()"),
    (lambda rnn, X, d: None, "returned None"),
    (lambda rnn, X, d: torch.zeros(3), "tuple of three tensors"),
    (lambda rnn, X, d: (1.0, 2.0, 3.0), "three tensors, got float"),
    (lambda rnn, X, d: tuple(torch.zeros_like(p) for p in (rnn.W_xh, rnn.W_hh, rnn.b_h)), "differ"),
    (lambda rnn, X, d: X[5], "IndexError"),
    ("bptt", "expected a function"),
    (..., "placeholder"),
])
def test_bptt_mistakes(wrong, hint):
    _fails_with(check_bptt(wrong), hint)


def test_bptt_stub():
    def stub(rnn, X, dL_dh):
        raise NotImplementedError
    _fails_with(check_bptt(stub), "placeholder")


# -- sampling with a temperature ----------------------------------------------------------------
from seqbook.exercises.ch02 import check_sampler  # noqa: E402


def right_sampler(model, prefix, length, temperature, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        logits, state = model(torch.tensor([prefix]))
        out = []
        for _ in range(length):
            probs = torch.softmax(logits[0, -1] / temperature, dim=-1)
            token = int(torch.multinomial(probs, 1, generator=g))
            out.append(token)
            logits, state = model(torch.tensor([[token]]), state)
    return out


def rerun_sampler(model, prefix, length, temperature, seed):
    """Right too, only slower: the whole history is fed again at every step."""
    g = torch.Generator().manual_seed(seed)
    ids = list(prefix)
    with torch.no_grad():
        for _ in range(length):
            logits, _ = model(torch.tensor([ids]))
            ids.append(int(torch.multinomial(torch.softmax(logits[0, -1] / temperature, -1), 1, generator=g)))
    return ids[len(prefix):]


def numpy_sampler(model, prefix, length, temperature, seed):
    """Right, with another random generator: only the frequency test can tell."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        logits, state = model(torch.tensor([prefix]))
        out = []
        for _ in range(length):
            p = torch.softmax(logits[0, -1].double() / temperature, -1).numpy()
            token = int(rng.choice(len(p), p=p / p.sum()))
            out.append(token)
            logits, state = model(torch.tensor([[token]]), state)
    return out


@pytest.mark.parametrize("func", [right_sampler, rerun_sampler, numpy_sampler])
def test_sampler_right_answers(func, capsys):
    v = check_sampler(func)
    capsys.readouterr()
    assert v, v.message


def _variant(mistake):
    def sampler(model, prefix, length, temperature, seed):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            logits, state = model(torch.tensor([prefix]))
            out, last = [], prefix[-1]
            for _ in range(length):
                z = logits[0, -1]
                z = z if mistake == "ignores tau" else z * temperature if mistake == "times tau" else z / temperature
                probs = torch.softmax(z, -1)
                token = int(probs.argmax()) if mistake == "greedy" else int(torch.multinomial(probs, 1, generator=g))
                out.append(token)
                fed = last if mistake == "prefix again" else token
                logits, state = model(torch.tensor([[fed]]), None if mistake == "no state" else state)
        return out
    return sampler


_unseeded_calls = itertools.count(1)


def _unseeded(model, prefix, length, temperature, seed):
    # ignores the seed: each call draws with another one. A fixed sequence of seeds, not the
    # global RNG, so that the verdict is the same on every run (the global RNG made it flaky)
    return right_sampler(model, prefix, length, temperature, 1000 * next(_unseeded_calls))


def _uniform(model, prefix, length, temperature, seed):
    g = torch.Generator().manual_seed(seed)
    return [int(t) for t in torch.randint(5, (length,), generator=g)]


@pytest.mark.parametrize("func, hint", [
    (_variant("ignores tau"), "divide the logits by it"),
    (_variant("times tau"), "you multiplied the logits"),
    (_variant("greedy"), "most likely id"),
    (_variant("prefix again"), "not the last id of the prefix"),
    (_variant("no state"), "pass the state"),
    (_unseeded, "the same seed gave different ids"),
    (_uniform, "expected [3, 4, 0, 1, 2, 3]"),
    (lambda m, p, n, t, s: right_sampler(m, p, n, t, s)[:-1], "expected 6 sampled ids"),
    (lambda m, p, n, t, s: list(p) + right_sampler(m, p, n, t, s), "expected 6 sampled ids"),
    (lambda m, p, n, t, s: None, "returned None"),
])
def test_sampler_recognises_typical_mistakes(func, hint, capsys):
    v = check_sampler(func)
    capsys.readouterr()
    assert not v and hint in v.message, v.message


def test_sampler_frequency_test_catches_a_wrong_distribution(capsys):
    def skewed(model, prefix, length, temperature, seed):   # a different generator, wrong probabilities
        rng = np.random.default_rng(seed)
        return [int(rng.choice(5, p=[0.4, 0.15, 0.15, 0.15, 0.15])) for _ in range(length)] \
            if length < 6 else right_sampler(model, prefix, length, temperature, seed)
    v = check_sampler(skewed)
    capsys.readouterr()
    assert not v and "came first" in v.message, v.message


@pytest.mark.parametrize("junk", [None, ..., "hello", 3, [1, 2]])
def test_sampler_never_raises_on_junk(junk, capsys):
    assert not check_sampler(junk)
    capsys.readouterr()


def test_sampler_stub(capsys):
    def stub(model, prefix, length, temperature, seed):
        raise NotImplementedError
    v = check_sampler(stub)
    capsys.readouterr()
    assert not v and "placeholder" in v.message, v.message


def test_sampler_reports_a_crash_in_the_students_code(capsys):
    def crashes(model, prefix, length, temperature, seed):
        return model(prefix)            # a list, not a tensor of ids
    v = check_sampler(crashes)
    capsys.readouterr()
    assert not v and "your code raised" in v.message, v.message


# -- ReLU instead of tanh ---------------------------------------------------------------------
def test_relu_rates():
    relu, tanh = relu_decay_rates("relu"), relu_decay_rates("tanh")
    # the solution's claims: ReLU decays faster below 1 and grows faster at s = 2
    assert relu[0.5] < tanh[0.5] and relu[1.0] < tanh[1.0] and relu[2.0] > tanh[2.0] > 1
    assert check_relu_rates(relu)
    assert check_relu_rates({s: float(r) + 0.005 for s, r in relu.items()})   # float32 noise
    _fails_with(check_relu_rates(tanh), "tanh's rates")
    _fails_with(check_relu_rates({s: 1 / r for s, r in relu.items()}), "wrong way")
    _fails_with(check_relu_rates({**relu, 2.0: 2.0}), "s = 2.0 is not it")
    _fails_with(check_relu_rates({0.5: relu[0.5]}), "missing 1.0, 2.0")
    _fails_with(check_relu_rates(list(relu.values())), "expected a dict")
    _fails_with(check_relu_rates({**relu, 1.0: "fast"}), "as a Python number")
    _fails_with(check_relu_rates(...), "placeholder")
