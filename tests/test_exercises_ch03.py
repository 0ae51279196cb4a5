"""Chapter 3's checkers accept right answers, name typical mistakes, and never raise."""

import math

import pytest
import torch

from seqbook.exercises.ch03 import (check_bidirectional, check_chung_update, check_coupled_step,
                                    check_memory_steps,
                                    check_parameter_counts, check_peephole_step, peephole_reference)
from seqbook.gated import LSTMScratch


def _verdict(v, passed, *words):
    assert bool(v) is passed, v.message
    for w in words:
        assert w in v.message, v.message


# -- parameter counts --------------------------------------------------------------------------
def test_parameter_counts(capsys):
    lstm, gru = torch.nn.LSTM(3, 5), torch.nn.GRU(3, 5)
    right = (sum(p.numel() for p in lstm.parameters()), sum(p.numel() for p in gru.parameters()))
    _verdict(check_parameter_counts(*right), True, "200", "150")
    assert "✅" in capsys.readouterr().out
    _verdict(check_parameter_counts(180, 150), False, "one bias")
    _verdict(check_parameter_counts(150, 200), False, "other layer")
    _verdict(check_parameter_counts(50, 150), False, "plain RNN")
    _verdict(check_parameter_counts(200, 120), False, "biases")
    _verdict(check_parameter_counts(200, 105), False, "leaves out")
    _verdict(check_parameter_counts(201, 150), False, "not it")
    _verdict(check_parameter_counts(..., 150), False, "placeholder")
    _verdict(check_parameter_counts("200", 150), True)  # numeric text is read as the number
    _verdict(check_parameter_counts("two hundred", 150), False, "text")


# -- memory steps -------------------------------------------------------------------------------
def test_memory_steps():
    _verdict(check_memory_steps(7, 15, 95), True, "7, 15 and 95", "0.9526^94 = 1.04%", "0.99%")
    _verdict(check_memory_steps(7, 15, 94), False, "round up")
    _verdict(check_memory_steps(torch.tensor(7), 15.0, 95), True)
    _verdict(check_memory_steps(6, 15, 95), False, "round up")
    _verdict(check_memory_steps(7, 14.71, 95), False, "round up")
    _verdict(check_memory_steps(7, 7, 95), False, "answer for b_f = 0")
    _verdict(check_memory_steps(7, 15, 1 / (1 + math.exp(-3))), False, "forget gate's value")
    _verdict(check_memory_steps(7, 15, 50), False, "not it")
    _verdict(check_memory_steps(7, None, 95), False, "placeholder")
    # the hint names the forget gate's bias as the chapter writes it (not "B", capitalised)
    assert str(check_memory_steps(6, 15, 95)).startswith("Not yet. b_f = 0: ")


# -- coupled gates ------------------------------------------------------------------------------
def _gates(lstm, x, h, c):
    pre = x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh
    a_i, a_f, a_g, a_o = pre.chunk(4, dim=-1)
    return torch.sigmoid(a_i), torch.sigmoid(a_f), torch.tanh(a_g), torch.sigmoid(a_o)


def right_coupled(lstm, x, h, c):
    _, f, g, o = _gates(lstm, x, h, c)
    c = f * c + (1 - f) * g
    return o * torch.tanh(c), c


def test_coupled_step_right_and_wrong():
    _verdict(check_coupled_step(right_coupled), True, "matches")

    def plain(lstm, x, h, c):
        h, c, _ = lstm.step(x, h, c)
        return h, c

    def swapped(lstm, x, h, c):
        return right_coupled(lstm, x, h, c)[::-1]

    def i_is_f(lstm, x, h, c):
        _, f, g, o = _gates(lstm, x, h, c)
        c = f * c + f * g
        return o * torch.tanh(c), c

    def reversed_roles(lstm, x, h, c):
        _, f, g, o = _gates(lstm, x, h, c)
        c = (1 - f) * c + f * g
        return o * torch.tanh(c), c

    def no_output_gate(lstm, x, h, c):
        _, c = right_coupled(lstm, x, h, c)
        return torch.tanh(c), c

    def no_tanh(lstm, x, h, c):
        _, f, g, o = _gates(lstm, x, h, c)
        c = f * c + (1 - f) * g
        return o * c, c

    def stub(lstm, x, h, c):
        raise NotImplementedError

    def crashes(lstm, x, h, c):
        return lstm.no_such_thing

    _verdict(check_coupled_step(plain), False, "ordinary LSTM")
    _verdict(check_coupled_step(swapped), False, "swapped")
    _verdict(check_coupled_step(i_is_f), False, "i = f")
    _verdict(check_coupled_step(reversed_roles), False, "reversed")
    _verdict(check_coupled_step(no_output_gate), False, "output gate")
    _verdict(check_coupled_step(no_tanh), False, "tanh")
    _verdict(check_coupled_step(lambda lstm, x, h, c: h), False, "pair")
    _verdict(check_coupled_step(lambda lstm, x, h, c: (h[0], c)), False, "shape")
    _verdict(check_coupled_step(stub), False, "placeholder")
    _verdict(check_coupled_step(crashes), False, "AttributeError")
    _verdict(check_coupled_step(42), False, "expected a function")


# -- bidirectional ------------------------------------------------------------------------------
def right_bi(fwd, bwd, X):
    return torch.cat([fwd(X)[0], bwd(X.flip(1))[0].flip(1)], dim=-1)


def test_bidirectional_right_and_wrong():
    _verdict(check_bidirectional(right_bi), True, "whole sentence")
    _verdict(check_bidirectional(lambda f, b, X: torch.cat([f(X)[0], b(X.flip(1))[0]], -1)), False, "Flip it back")
    _verdict(check_bidirectional(lambda f, b, X: torch.cat([f(X)[0], b(X)[0]], -1)), False, "X.flip(1)")
    _verdict(check_bidirectional(lambda f, b, X: torch.cat([b(X.flip(1))[0].flip(1), f(X)[0]], -1)), False,
             "swapped")
    _verdict(check_bidirectional(lambda f, b, X: torch.cat([f(X)[0], f(X)[0]], -1)), False, "both halves")
    _verdict(check_bidirectional(lambda f, b, X: (right_bi(f, b, X), None)), False, "not a pair")
    _verdict(check_bidirectional(lambda f, b, X: f(X)[0]), False, "shape")
    _verdict(check_bidirectional(lambda f, b, X: right_bi(f, b, X) + 1), False, "differ")
    _verdict(check_bidirectional(None), False, "placeholder")


@pytest.mark.parametrize("junk", [None, ..., "text", [1, 2], {"a": 1}, float("nan"), 1e300])
def test_checkers_never_raise(junk):
    for check in (check_coupled_step, check_bidirectional, check_peephole_step):
        assert not check(junk)
    assert not check_parameter_counts(junk, junk)
    assert not check_memory_steps(junk, junk, junk)


# -- peephole LSTM --------------------------------------------------------------------------------
def right_peephole(lstm, peep, x, h, c):
    pre = x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh
    a_i, a_f, a_g, a_o = pre.chunk(4, dim=-1)
    i = torch.sigmoid(a_i + peep["i"] * c)
    f = torch.sigmoid(a_f + peep["f"] * c)
    c = f * c + i * torch.tanh(a_g)
    o = torch.sigmoid(a_o + peep["o"] * c)
    return o * torch.tanh(c), c


def _peephole_variant(old_cell_for_o=False, no_o_peephole=False, outside=False, no_input_peepholes=False):
    def step(lstm, peep, x, h, c):
        pre = x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh
        a_i, a_f, a_g, a_o = pre.chunk(4, dim=-1)
        pi, pf = (0 * peep["i"], 0 * peep["f"]) if no_input_peepholes else (peep["i"], peep["f"])
        if outside:
            i, f = torch.sigmoid(a_i) + pi * c, torch.sigmoid(a_f) + pf * c
        else:
            i, f = torch.sigmoid(a_i + pi * c), torch.sigmoid(a_f + pf * c)
        c_new = f * c + i * torch.tanh(a_g)
        seen = c if old_cell_for_o else c_new
        o = torch.sigmoid(a_o + (0 if no_o_peephole else peep["o"] * seen))
        return o * torch.tanh(c_new), c_new
    return step


def test_peephole_reference_reduces_to_the_lstm_without_peepholes():
    torch.manual_seed(0)
    lstm = LSTMScratch(3, 4)
    x, h, c = torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 4)
    zero = {k: torch.zeros(4) for k in "ifo"}
    h_ref, c_ref, _ = lstm.step(x, h, c)
    h_new, c_new = peephole_reference(lstm, zero, x, h, c)
    torch.testing.assert_close((h_new, c_new), (h_ref, c_ref))


def test_peephole_step_right_and_wrong():
    _verdict(check_peephole_step(right_peephole), True, "matches the peephole LSTM")

    def plain(lstm, peep, x, h, c):
        h, c, _ = lstm.step(x, h, c)
        return h, c

    _verdict(check_peephole_step(plain), False, "ordinary LSTM step")
    _verdict(check_peephole_step(lambda *a: right_peephole(*a)[::-1]), False, "swapped")
    _verdict(check_peephole_step(_peephole_variant(old_cell_for_o=True)), False, "OLD cell")
    _verdict(check_peephole_step(_peephole_variant(no_o_peephole=True)), False, "no peephole")
    _verdict(check_peephole_step(_peephole_variant(outside=True)), False, "inside the sigmoid")
    _verdict(check_peephole_step(_peephole_variant(no_input_peepholes=True)), False, "old cell")
    _verdict(check_peephole_step(lambda *a: right_peephole(*a)[0]), False, "pair")
    _verdict(check_peephole_step(lambda lstm, peep, x, h, c: (h[0], c)), False, "shape")
    _verdict(check_peephole_step(lambda lstm, peep, x, h, c: peep["g"]), False, "KeyError")

    def stub(lstm, peep, x, h, c):
        raise NotImplementedError

    _verdict(check_peephole_step(stub), False, "placeholder")
    _verdict(check_peephole_step("peephole"), False, "expected a function")


# -- the GRU's Jacobian ----------------------------------------------------------------------------
def _gru_terms(gru, x, h):
    from seqbook.exercises.ch03 import gru_jacobian_terms
    return gru_jacobian_terms(gru, x, h)


def right_gru_jacobian(gru, x, h):
    return sum(_gru_terms(gru, x, h).values())


def test_gru_jacobian_right_and_wrong():
    from seqbook.exercises.ch03 import check_gru_jacobian

    _verdict(check_gru_jacobian(right_gru_jacobian), True, "matches autograd")
    _verdict(check_gru_jacobian(lambda g, x, h: right_gru_jacobian(g, x, h).T), False, "transpose")
    _verdict(check_gru_jacobian(lambda g, x, h: _gru_terms(g, x, h)["direct"]), False,
             "only the direct term")
    for name, words in (("z", "update gate"), ("n", "W_hn"), ("r", "reset gate")):
        def missing(g, x, h, name=name):
            return right_gru_jacobian(g, x, h) - _gru_terms(g, x, h)[name]
        _verdict(check_gru_jacobian(missing), False, "missing", words)

    def wrong_sign(g, x, h):
        t = _gru_terms(g, x, h)
        return t["direct"] - t["z"] + t["n"] + t["r"]
    _verdict(check_gru_jacobian(wrong_sign), False, "wrong sign")
    _verdict(check_gru_jacobian(lambda g, x, h: torch.zeros(4, 4)), False, "not the Jacobian")
    _verdict(check_gru_jacobian(lambda g, x, h: torch.zeros(3, 4)), False, "shape (4, 4)")
    _verdict(check_gru_jacobian(lambda g, x, h: [[0.0] * 4] * 4), False, "torch.Tensor")
    _verdict(check_gru_jacobian(None), False, "placeholder")
    _verdict(check_gru_jacobian(42), False, "expected a function")


def test_gru_jacobian_terms_sum_to_autograd():
    from seqbook.exercises.ch03 import _jacobian_case
    gru, x, h = _jacobian_case(5)
    auto = torch.autograd.functional.jacobian(lambda p: gru.step(x[None], p[None])[0][0], h)
    assert torch.allclose(right_gru_jacobian(gru, x, h), auto, atol=1e-5)
    assert not torch.allclose(_gru_terms(gru, x, h)["r"], torch.zeros(4, 4), atol=1e-3)


# -- the LSTM's cell Jacobian, part (b) ------------------------------------------------------------
def _lstm_parts(lstm, x, c, o):
    """Written out here, not taken from the checker: diag(f) and the three terms via h_{t-1}."""
    h = o * torch.tanh(c)
    a_i, a_f, a_g, _ = (x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T
                        + lstm.bias_hh).chunk(4)
    i, f, g = torch.sigmoid(a_i), torch.sigmoid(a_f), torch.tanh(a_g)
    D = torch.diag(o * (1 - torch.tanh(c) ** 2))
    W = {k: lstm.block(lstm.weight_hh, k) for k in "ifg"}
    return {"direct": torch.diag(f), "f": torch.diag(c * f * (1 - f)) @ W["f"] @ D,
            "i": torch.diag(g * i * (1 - i)) @ W["i"] @ D,
            "g": torch.diag(i * (1 - g ** 2)) @ W["g"] @ D,
            "sigma": torch.diag(i * torch.sigmoid(a_g) * (1 - torch.sigmoid(a_g))) @ W["g"] @ D,
            "W only": [torch.diag(c * f * (1 - f)) @ W["f"], torch.diag(g * i * (1 - i)) @ W["i"],
                       torch.diag(i * (1 - g ** 2)) @ W["g"]]}


def right_lstm_jacobian(lstm, x, c, o):
    t = _lstm_parts(lstm, x, c, o)
    return t["direct"] + t["f"] + t["i"] + t["g"]


def test_lstm_cell_jacobian_right_and_wrong():
    from seqbook.exercises.ch03 import check_lstm_cell_jacobian as check

    _verdict(check(right_lstm_jacobian), True, "matches autograd")
    _verdict(check(lambda l, x, c, o: right_lstm_jacobian(l, x, c, o).T), False, "transpose")
    _verdict(check(lambda l, x, c, o: _lstm_parts(l, x, c, o)["direct"]), False,
             "only diag(f_t)", "three terms")
    for name, words in (("f", "forget gate"), ("i", "input gate"), ("g", "candidate")):
        def missing(l, x, c, o, name=name):
            return right_lstm_jacobian(l, x, c, o) - _lstm_parts(l, x, c, o)[name]
        _verdict(check(missing), False, "missing", words)

    def sigma_on_candidate(l, x, c, o):
        t = _lstm_parts(l, x, c, o)
        return t["direct"] + t["f"] + t["i"] + t["sigma"]
    _verdict(check(sigma_on_candidate), False, "tanh'")

    def without_D(l, x, c, o):
        t = _lstm_parts(l, x, c, o)
        return t["direct"] + sum(t["W only"])
    _verdict(check(without_D), False, "dh_{t-1}/dc_{t-1}")
    _verdict(check(lambda l, x, c, o: torch.zeros(4, 4)), False, "not the Jacobian")
    _verdict(check(lambda l, x, c, o: torch.zeros(4)), False, "shape (4, 4)")
    _verdict(check(lambda l, x, c, o: [[0.0] * 4] * 4), False, "torch.Tensor")
    _verdict(check(None), False, "placeholder")
    _verdict(check("jacobian"), False, "expected a function")


def test_lstm_cell_jacobian_terms_sum_to_autograd():
    from seqbook.exercises.ch03 import _lstm_jacobian_case, lstm_cell_jacobian_terms
    lstm, x, c, o = _lstm_jacobian_case(7)
    auto = torch.autograd.functional.jacobian(
        lambda p: lstm.step(x[None], (o * torch.tanh(p))[None], p[None])[1][0], c)
    terms = lstm_cell_jacobian_terms(lstm, x, c, o)
    assert torch.allclose(terms["direct"] + terms["f"] + terms["i"] + terms["g"], auto, atol=1e-5)
    assert torch.allclose(right_lstm_jacobian(lstm, x, c, o), auto, atol=1e-5)
    assert all(not torch.allclose(terms[k], torch.zeros(4, 4), atol=1e-3) for k in "fig")


# -- the two forms of the GRU's update ------------------------------------------------------------
def test_chung_update_right_typical_wrong_and_junk():
    _verdict(check_chung_update(lambda W_iz, W_hz, b_iz, b_hz: (-W_iz, -W_hz, -b_iz, -b_hz)),
             True, "exactly")
    # only the sum of the two biases matters: moving all of it into one is right too
    _verdict(check_chung_update(lambda W_iz, W_hz, b_iz, b_hz: (-W_iz, -W_hz, -(b_iz + b_hz),
                                                                 0 * b_hz)), True)
    _verdict(check_chung_update(lambda *w: w), False, "z' = z")
    _verdict(check_chung_update(lambda W_iz, W_hz, b_iz, b_hz: (-W_iz, -W_hz, b_iz, b_hz)),
             False, "biases negated")
    _verdict(check_chung_update(lambda W_iz, W_hz, b_iz, b_hz: (W_iz, W_hz, -b_iz, -b_hz)),
             False, "weight matrices negated")
    _verdict(check_chung_update(lambda *w: tuple(1 - t for t in w)), False, "sigma(-a)")
    _verdict(check_chung_update(lambda *w: tuple(2 * t for t in w)), False, "does not compute")
    _verdict(check_chung_update(lambda *w: w[:3]), False, "four tensors")
    _verdict(check_chung_update(lambda W_iz, W_hz, b_iz, b_hz: (W_iz.T, W_hz, b_iz, b_hz)),
             False, "shape (4, 3)")
    _verdict(check_chung_update(lambda *w: [t.tolist() for t in w]), False, "torch.Tensor")
    _verdict(check_chung_update("not a function"), False, "function")

    def placeholder(W_iz, W_hz, b_iz, b_hz):
        raise NotImplementedError

    _verdict(check_chung_update(placeholder), False, "placeholder")
