"""Chapter 5's checkers accept right answers, name typical mistakes, and never raise."""

import torch

from seqbook.alignment import alignment_error_rate
from seqbook.attention import masked_softmax
from seqbook.exercises.ch05 import (AER_PREDICTED, AER_SURE, BY_HAND_KEYS, BY_HAND_QUERY, BY_HAND_VALUES,
                                    COST_BATCH, COST_PADDED_SOURCE, COST_PADDED_TARGET, COST_SOURCE_LEN,
                                    COST_TARGET_LEN, SIZES_D_H, check_aer, check_attention_cost,
                                    check_general_sizes, check_general_attention,
                                    check_local_window, general_attention_reference,
                                    check_masked_softmax, check_weights_and_context, local_window_reference)


def _verdict(v, passed, *words):
    assert bool(v) is passed, v.message
    for w in words:
        assert w in v.message, v.message


# -- weights and context by hand -----------------------------------------------------------------
def test_weights_and_context(capsys):
    q, K, V = (torch.tensor(x) for x in (BY_HAND_QUERY, BY_HAND_KEYS, BY_HAND_VALUES))
    scores = K @ q
    a = torch.exp(scores) / torch.exp(scores).sum()     # written out, not the checker's softmax
    c = (a[:, None] * V).sum(0)
    _verdict(check_weights_and_context(a, c), True, "weights")
    assert "✅" in capsys.readouterr().out
    _verdict(check_weights_and_context(a.tolist(), [float(x) for x in c]), True)
    _verdict(check_weights_and_context(scores, c), False, "scores")
    _verdict(check_weights_and_context(torch.exp(scores), c), False, "sum")
    _verdict(check_weights_and_context(torch.nn.functional.one_hot(scores.argmax(), 3), c), False, "hard")
    _verdict(check_weights_and_context([1 / 3] * 3, c), False, "ignore the query")
    _verdict(check_weights_and_context(a, a @ K), False, "keys")
    _verdict(check_weights_and_context(a, V.mean(0)), False, "average")
    _verdict(check_weights_and_context(a, V[int(scores.argmax())]), False, "best key")
    _verdict(check_weights_and_context(a, [0.0, 0.0]), False, "context")
    _verdict(check_weights_and_context(..., c), False, "placeholder")
    _verdict(check_weights_and_context(a, [1.0, 2.0, 3.0]), False, "2 numbers")
    _verdict(check_weights_and_context("abc", c), False, "expected")


# -- masked softmax from valid lengths ------------------------------------------------------------
def _mask(scores, lengths, shift=0):
    return torch.arange(scores.shape[-1])[None, :] < (lengths[:, None] + shift)


def test_masked_softmax():
    def right(scores, lengths):
        blocked = torch.arange(scores.shape[-1])[None, None, :] >= lengths[:, None, None]
        return torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)

    def library(scores, lengths):
        return masked_softmax(scores, _mask(scores, lengths))

    def ignores_lengths(scores, lengths):
        return torch.softmax(scores, -1)

    def inverted(scores, lengths):
        return masked_softmax(scores, ~_mask(scores, lengths))

    def one_too_many(scores, lengths):
        return masked_softmax(scores, _mask(scores, lengths, 1))

    def zeroed_after(scores, lengths):
        return torch.softmax(scores, -1) * _mask(scores, lengths)[:, None, :]

    def naive_exp(scores, lengths):
        e = torch.exp(scores) * _mask(scores, lengths)[:, None, :]
        return e / e.sum(-1, keepdim=True)

    def small_not_zero(scores, lengths):
        return torch.softmax(scores.masked_fill(~_mask(scores, lengths)[:, None, :], -20.0), dim=-1)

    _verdict(check_masked_softmax(right), True, "exactly 0")
    _verdict(check_masked_softmax(library), True)
    _verdict(check_masked_softmax(ignores_lengths), False, "ignored")
    _verdict(check_masked_softmax(inverted), False, "wrong way round")
    _verdict(check_masked_softmax(one_too_many), False, "one key too many")
    _verdict(check_masked_softmax(zeroed_after), False, "sum to 1")
    _verdict(check_masked_softmax(naive_exp), False, "nan")
    _verdict(check_masked_softmax(small_not_zero), False, "exactly 0")
    _verdict(check_masked_softmax(lambda s, n: s[..., :2]), False, "shape")
    _verdict(check_masked_softmax(lambda s, n: 1 / 0), False, "ZeroDivisionError")
    _verdict(check_masked_softmax(None), False, "placeholder")

    def stub_body_only_dots(scores, lengths):
        ...

    def stub_raises(scores, lengths):
        raise NotImplementedError

    _verdict(check_masked_softmax(stub_body_only_dots), False, "placeholder")
    _verdict(check_masked_softmax(stub_raises), False, "placeholder")
    _verdict(check_masked_softmax(3), False, "function")


# -- general score and masked weights, batched -------------------------------------------------------
def test_general_attention():
    def right(queries, keys, W, mask):
        scores = queries @ (keys @ W.T).transpose(1, 2)           # q_i . (W k_j), written out
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ keys, weights

    def no_mask(queries, keys, W, mask):
        weights = torch.softmax(queries @ (keys @ W.T).transpose(1, 2), dim=-1)
        return weights @ keys, weights

    def inverted(queries, keys, W, mask):
        return right(queries, keys, W, ~mask)

    def transposed_W(queries, keys, W, mask):
        return right(queries, keys, W.T, mask)

    def dot_score(queries, keys, W, mask):
        return right(queries, keys, torch.eye(W.shape[0], W.shape[1]), mask)

    def scaled(queries, keys, W, mask):
        return right(queries, keys, W / W.shape[0] ** 0.5, mask)

    def softmax_over_queries(queries, keys, W, mask):
        weights = torch.softmax(queries @ (keys @ W.T).transpose(1, 2), dim=1)
        return weights @ keys, weights

    def scores_as_weights(queries, keys, W, mask):
        scores = queries @ (keys @ W.T).transpose(1, 2)
        return scores @ keys, scores

    def zeroed_after(queries, keys, W, mask):
        weights = torch.softmax(queries @ (keys @ W.T).transpose(1, 2), dim=-1) * mask[:, None, :]
        return weights @ keys, weights

    def projected_values(queries, keys, W, mask):
        _, weights = right(queries, keys, W, mask)
        return weights @ (keys @ W.T), weights

    def swapped(queries, keys, W, mask):
        return tuple(reversed(right(queries, keys, W, mask)))

    gen = torch.Generator().manual_seed(1)
    q, k, W = torch.randn(2, 3, 4, generator=gen), torch.randn(2, 5, 6, generator=gen), torch.randn(4, 6)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    for got, ref in zip(right(q, k, W, mask), general_attention_reference(q, k, W, mask)):
        assert torch.allclose(got, ref, atol=1e-5)
    _verdict(check_general_attention(right), True, "q^T W k")
    _verdict(check_general_attention(general_attention_reference), True)
    _verdict(check_general_attention(no_mask), False, "mask is ignored")
    _verdict(check_general_attention(inverted), False, "wrong way round")
    _verdict(check_general_attention(transposed_W), False, "W^T")
    _verdict(check_general_attention(dot_score), False, "dot score")
    _verdict(check_general_attention(scaled), False, "not scaled")
    _verdict(check_general_attention(softmax_over_queries), False, "over the queries")
    _verdict(check_general_attention(scores_as_weights), False, "scores")
    _verdict(check_general_attention(zeroed_after), False, "sum to 1")
    _verdict(check_general_attention(projected_values), False, "projected keys")
    _verdict(check_general_attention(swapped), False, "shape")
    _verdict(check_general_attention(lambda q, k, W, m: right(q, k, W, m)[1]), False, "two tensors")
    _verdict(check_general_attention(lambda q, k, W, m: (None, None)), False, "as a tensor")
    _verdict(check_general_attention(lambda q, k, W, m: ...), False, "placeholder")
    _verdict(check_general_attention(None), False, "placeholder")
    _verdict(check_general_attention("f"), False, "function")


# -- AER by hand -----------------------------------------------------------------------------------
def test_aer():
    a, s = set(AER_PREDICTED), set(AER_SURE)
    hits = len(a & s)
    right = 1 - 2 * hits / (len(a) + len(s))
    assert abs(right - alignment_error_rate(a, s)) < 1e-12
    _verdict(check_aer(right), True, "precision")
    _verdict(check_aer(round(right, 3)), True)
    _verdict(check_aer(str(right)), True)
    _verdict(check_aer(1 - hits / len(a)), False, "precision")
    _verdict(check_aer(1 - hits / len(s)), False, "recall")
    _verdict(check_aer(2 * hits / (len(a) + len(s))), False, "F1")
    _verdict(check_aer(1 - hits / len(a | s)), False, "Jaccard")
    _verdict(check_aer(0.5), False, "not it")
    _verdict(check_aer(...), False, "placeholder")
    _verdict(check_aer("a lot"), False, "text")


# -- cost ------------------------------------------------------------------------------------------
def test_attention_cost():
    n, m = COST_SOURCE_LEN, COST_TARGET_LEN
    padded = COST_BATCH * COST_PADDED_SOURCE * COST_PADDED_TARGET
    _verdict(check_attention_cost(m * n, padded, 2 * n), True, f"{m * n}")
    _verdict(check_attention_cost(m + n, padded, 2 * n), False, "product")
    _verdict(check_attention_cost(m * n + 1, padded, 2 * n), False, "pairs")
    _verdict(check_attention_cost(m * n, COST_BATCH * m * n, 2 * n), False, "padded")
    _verdict(check_attention_cost(m * n, COST_PADDED_SOURCE * COST_PADDED_TARGET, 2 * n), False, "one sentence")
    _verdict(check_attention_cost(m * n, padded + 1, 2 * n), False, "not it")
    _verdict(check_attention_cost(m * n, padded, n), False, "one direction")
    _verdict(check_attention_cost(m * n, padded, 3 * n), False, "not it")
    _verdict(check_attention_cost(..., padded, 2 * n), False, "placeholder")


# -- local window ----------------------------------------------------------------------------------
def test_local_window():
    def right(weights, width):
        m, n = weights.shape
        out = torch.zeros_like(weights)
        for i in range(m):
            p = round(i * (n - 1) / max(m - 1, 1))
            lo, hi = max(0, p - width), min(n, p + width + 1)
            total = weights[i, lo:hi].sum()
            if total > 0:
                out[i, lo:hi] = weights[i, lo:hi] / total
            else:
                out[i, p] = 1.0
        return out

    def unnormalised(weights, width):
        return right(weights, width) * weights[:, :].sum(-1, keepdim=True) * 0 + \
            weights * (right(weights, width) > 0)

    def wrong_centre(weights, width):
        m, n = weights.shape
        out = torch.zeros_like(weights)
        for i in range(m):
            p = min(i, n - 1)                  # the identity diagonal, not the stretched one
            lo, hi = max(0, p - width), min(n, p + width + 1)
            out[i, lo:hi] = weights[i, lo:hi] / weights[i, lo:hi].sum()
        return out

    w = torch.softmax(torch.randn(4, 6), -1)
    assert torch.allclose(right(w, 1), local_window_reference(w, 1))
    _verdict(check_local_window(right), True, "window")
    _verdict(check_local_window(local_window_reference), True)
    _verdict(check_local_window(lambda w, k: w), False, "differ")
    _verdict(check_local_window(unnormalised), False, "sum to 1")
    _verdict(check_local_window(wrong_centre), False, "centre")
    _verdict(check_local_window(lambda w, k: w[:2]), False, "expected a")
    _verdict(check_local_window(...), False, "placeholder")
    _verdict(check_local_window(lambda w, d: None), False, "placeholder")

    def stub_raises(weights, width):
        raise NotImplementedError

    _verdict(check_local_window(stub_raises), False, "placeholder")


def test_general_sizes():
    d = SIZES_D_H
    _verdict(check_general_sizes((d, 2 * d), 2 * d * d), True, f"{2 * d * d:,}")
    _verdict(check_general_sizes([d, 2 * d], float(2 * d * d)), True)
    _verdict(check_general_sizes(torch.zeros(d, 2 * d), torch.tensor(2 * d * d)), True)
    _verdict(check_general_sizes((2 * d, d), 2 * d * d), False, "transposed")
    _verdict(check_general_sizes((d, d), d * d), False, "square")
    _verdict(check_general_sizes((d, 2 * d), d * d), False, "square matrix")
    _verdict(check_general_sizes((d, 2 * d), 2 * d * d + d), False, "bias")
    _verdict(check_general_sizes((d, 3 * d), 3 * d * d), False, "not it")
    _verdict(check_general_sizes((d, 2 * d), 7), False, "not the number")
    _verdict(check_general_sizes(..., ...), False, "placeholder")
    _verdict(check_general_sizes(128, 8192), False, "pair")
    _verdict(check_general_sizes(("a", "b"), 8192), False, "number of rows")
    _verdict(check_general_sizes((0, 128), 0), False, "positive")
    _verdict(check_general_sizes((d, 2 * d), "many"), False, "text")
