"""Chapter 6's checkers accept right answers, name typical mistakes, and never raise."""

import math

import numpy as np
import torch

from seqbook.exercises.ch06 import (HAND_K, HAND_Q, check_attention, check_causal_weights,
                                    check_layer_parameters, check_pre_norm_layer,
                                    check_rotation, check_score_variance, hand_weights)
from seqbook.positions import rotation_matrix
from seqbook.transformer import EncoderLayer


def _verdict(v, passed, *words):
    assert bool(v) is passed, v.message
    for w in words:
        assert w in v.message, v.message


# -- the variance of q . k -------------------------------------------------------------------------
def test_score_variance(capsys):
    _verdict(check_score_variance(64, 1), True, "64 and 1")
    assert "✅" in capsys.readouterr().out
    _verdict(check_score_variance(torch.tensor(64.0), "1.0"), True)
    _verdict(check_score_variance(8, 1), False, "standard deviation")
    _verdict(check_score_variance(1, 1), False, "ONE product")
    _verdict(check_score_variance(1 / 64, 1), False, "too small")
    _verdict(check_score_variance(64, 8), False, "c^2")
    _verdict(check_score_variance(64, 1 / 8), False, "once too often")
    _verdict(check_score_variance(50, 1), False, "not it")
    _verdict(check_score_variance(..., 1), False, "placeholder")
    _verdict(check_score_variance("sixty-four", 1), False, "text")


# -- the rotation R_k ----------------------------------------------------------------------------
def test_rotation():
    _verdict(check_rotation(lambda k, d: rotation_matrix(k, d)), True, "linear map")
    _verdict(check_rotation(lambda k, d: rotation_matrix(k, d).numpy().tolist()), True)
    _verdict(check_rotation(lambda k, d: rotation_matrix(k, d).T), False, "transpose")
    _verdict(check_rotation(lambda k, d: rotation_matrix(1, d)), False, "k times")

    def one_frequency(k, d):   # every pair turns with the first pair's frequency
        block = rotation_matrix(k, 2)
        return torch.block_diag(*[block] * (d // 2))

    _verdict(check_rotation(one_frequency), False, "own frequency")
    _verdict(check_rotation(lambda k, d: torch.eye(d)), False, "angle-addition")
    _verdict(check_rotation(lambda k, d: torch.eye(d - 1)), False, "shape")
    _verdict(check_rotation(None), False, "placeholder")
    _verdict(check_rotation(42), False, "function")


# -- masked attention ----------------------------------------------------------------------------
def _attention(q, k, v, key_padding_mask=None, causal=False, scale=True, axis=-1,
               fill=float("-inf"), invert=False, wrong_triangle=False):
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    blocked = torch.zeros(scores.shape, dtype=torch.bool)
    if key_padding_mask is not None:
        blocked |= (~key_padding_mask if invert else key_padding_mask)[:, None, :]
    if causal:
        n_q, n_k = scores.shape[-2:]
        triangle = torch.ones(n_q, n_k, dtype=torch.bool)
        blocked |= triangle.tril(-1) if wrong_triangle else triangle.triu(1)
    weights = torch.softmax(scores.masked_fill(blocked, fill), dim=axis)
    return weights @ v, weights


def test_attention_right_and_wrong():
    _verdict(check_attention(_attention), True, "causal mask")
    _verdict(check_attention(lambda *a, **m: _attention(*a, **m, scale=False)), False,
             "sqrt(d_k)")
    _verdict(check_attention(lambda *a, **m: _attention(*a, **m, axis=-2)), False, "keys")
    _verdict(check_attention(lambda *a, **m: _attention(*a, **m, invert=True)), False,
             "wrong way round")
    _verdict(check_attention(lambda *a, **m: _attention(*a, **m, wrong_triangle=True)), False,
             "PAST")
    _verdict(check_attention(lambda *a, **m: _attention(*a, **m, fill=0.0)), False, "exp(0)")
    _verdict(check_attention(lambda q, k, v, **m: _attention(q, k, v)), False, "weight")

    def wrong_output(*a, **m):
        out, w = _attention(*a, **m)
        return out * 2, w

    _verdict(check_attention(wrong_output), False, "weights @ v")
    _verdict(check_attention(lambda *a, **m: _attention(*a, **m)[1]), False, "pair")

    def raises(*a, **m):
        raise RuntimeError("boom")

    _verdict(check_attention(raises), False, "RuntimeError")
    _verdict(check_attention(lambda q, k, v, key_padding_mask=None, causal=False: None), False,
             "placeholder")


# -- parameter counts ------------------------------------------------------------------------------
def test_layer_parameters():
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    attention = sum(p.numel() for p in layer.self_attn.parameters())
    total = sum(p.numel() for p in layer.parameters())
    _verdict(check_layer_parameters(attention, total), True, "1,050,624", "3,152,384")
    _verdict(check_layer_parameters(4 * 512 * 512, total), False, "biases")
    _verdict(check_layer_parameters(3 * (512 * 512 + 512), total), False, "output projection")
    _verdict(check_layer_parameters(8 * attention, total), False, "every head")
    _verdict(check_layer_parameters(8 * 4 * (64 * 64 + 64), total), False, "d_k x d_k")
    _verdict(check_layer_parameters(attention, total - 4 * 512), False, "LayerNorms")
    _verdict(check_layer_parameters(attention, total - 2 * 512), False, "gain")
    _verdict(check_layer_parameters(attention, total - 2048 - 512 - 4 * 512), False,
             "biases")
    _verdict(check_layer_parameters(attention, total - attention), False, "attention sublayer")
    _verdict(check_layer_parameters(attention, total + 1), False, "not it")
    _verdict(check_layer_parameters(attention, ...), False, "placeholder")


# -- causal weights by hand -----------------------------------------------------------------------
def test_causal_weights():
    e = math.e
    by_hand = [[1, 0, 0], [1 / (1 + e ** 2), e ** 2 / (1 + e ** 2), 0],
               [1 / (2 + e), 1 / (2 + e), e / (2 + e)]]
    assert torch.allclose(hand_weights(), torch.tensor(by_hand, dtype=torch.float64))
    _verdict(check_causal_weights(by_hand), True, "above the diagonal")
    _verdict(check_causal_weights(np.round(np.array(by_hand), 3)), True)  # 3 decimals are enough
    _verdict(check_causal_weights(np.array(by_hand).T), False, "transpose")
    q, k = torch.tensor(HAND_Q), torch.tensor(HAND_K)
    scores = q @ k.T
    _verdict(check_causal_weights(torch.softmax(scores / 2, -1)), False, "no mask")
    upper = torch.ones(3, 3, dtype=torch.bool).triu(1)
    _verdict(check_causal_weights(torch.softmax(scores.masked_fill(upper, -math.inf), -1)),
             False, "sqrt(d_k)")
    lower = torch.ones(3, 3, dtype=torch.bool).tril(-1)
    _verdict(check_causal_weights(torch.softmax(scores.masked_fill(lower, -math.inf) / 2, -1)),
             False, "wrong way round")
    _verdict(check_causal_weights(torch.ones(3, 3)), False, "sum to 1")
    _verdict(check_causal_weights(torch.eye(3)), False, "not yet")
    _verdict(check_causal_weights(torch.ones(2, 3)), False, "shape")
    _verdict(check_causal_weights("weights"), False, "expected")
    _verdict(check_causal_weights(...), False, "placeholder")


# -- pre-norm --------------------------------------------------------------------------------------
def test_pre_norm_layer():
    def right(layer, x):
        h = layer.norm1(x)
        x = x + layer.self_attn(h, h, h)[0]
        return x + layer.ffn(layer.norm2(x))

    _verdict(check_pre_norm_layer(right), True, "warm-up")
    _verdict(check_pre_norm_layer(lambda layer, x: layer(x)), False, "post-norm")
    _verdict(check_pre_norm_layer(lambda layer, x: layer.norm2(right(layer, x))), False,
             "output")

    def adds_normalised(layer, x):
        h = layer.norm1(x)
        y = h + layer.self_attn(h, h, h)[0]
        return y + layer.ffn(layer.norm2(y))

    _verdict(check_pre_norm_layer(adds_normalised), False, "x itself")
    _verdict(check_pre_norm_layer(lambda layer, x: x), False, "differs")
    _verdict(check_pre_norm_layer(lambda layer, x: x[0]), False, "shape")
    _verdict(check_pre_norm_layer(...), False, "placeholder")
    # the checker's reference is seqbook's own pre-norm layer
    assert isinstance(EncoderLayer(16, 4, 32, norm_first=True), torch.nn.Module)


# -- the key/value cache --------------------------------------------------------------------------
from seqbook.exercises.ch06 import CACHE_STEPS, cache_score_counts, check_cache_counts, check_kv_cache  # noqa: E402


def test_cache_counts():
    m = CACHE_STEPS
    assert cache_score_counts(m) == (2870, 210) and cache_score_counts(3) == (1 + 4 + 9, 1 + 2 + 3)
    _verdict(check_cache_counts(2870, 210), True, "2,870 against 210")
    _verdict(check_cache_counts(210, 2870), False, "swapped")
    _verdict(check_cache_counts(400, 210), False, "last step alone")
    _verdict(check_cache_counts(1540, 210), False, "masked entries")
    _verdict(check_cache_counts(2800, 210), False, "sum t^2")
    _verdict(check_cache_counts(2870, 20), False, "every cached key")
    _verdict(check_cache_counts(2870, 420), False, "twice too many")
    _verdict(check_cache_counts(2870, 200), False, "ONE new query")
    _verdict(check_cache_counts(..., 210), False, "placeholder")


def _cached(attn, x_new, cache, scale=True, keep=True, project=True, wrong_shape=False):
    q = attn._split(attn.q_proj(x_new))
    k, v = attn._split(attn.k_proj(x_new)), attn._split(attn.v_proj(x_new))
    if cache and keep:
        k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
    cache["k"], cache["v"] = k, (v.transpose(2, 3) if wrong_shape else v)
    weights = torch.softmax(q @ k.transpose(-2, -1) / (math.sqrt(attn.d_k) if scale else 1), dim=-1)
    concat = (weights @ v).transpose(1, 2).reshape(x_new.shape[0], 1, attn.d_model)
    return attn.out_proj(concat) if project else concat


def test_kv_cache_right_and_wrong():
    _verdict(check_kv_cache(_cached), True, "every step equals")
    _verdict(check_kv_cache(lambda a, x, c: _cached(a, x, c, scale=False)), False, "sqrt(d_k)")
    _verdict(check_kv_cache(lambda a, x, c: _cached(a, x, c, keep=False)), False, "append")
    _verdict(check_kv_cache(lambda a, x, c: _cached(a, x, c, project=False)), False, "out_proj")
    _verdict(check_kv_cache(lambda a, x, c: _cached(a, x, c, wrong_shape=True)), False, "(batch, heads, t, d_k)")
    _verdict(check_kv_cache(lambda a, x, c: x), False, "step 1 already differs")
    _verdict(check_kv_cache(lambda a, x, c: _cached(a, x, c)[:, :, :8]), False, "shape (2, 1, 16)")

    def no_cache_kept(attn, x_new, cache):            # right output once, but a cache of its own
        out = _cached(attn, x_new, cache)
        cache["q"] = out
        return out
    _verdict(check_kv_cache(no_cache_kept), False, "exactly the keys 'k' and 'v'")
    _verdict(check_kv_cache(lambda a, x, c: ...), False, "placeholder")
    _verdict(check_kv_cache(lambda a, x, c: 1 / 0), False, "ZeroDivisionError")


# -- the label-smoothed loss ---------------------------------------------------------------------
def test_smoothed_loss():
    import torch.nn.functional as F
    from seqbook.exercises.ch06 import check_smoothed_loss
    from seqbook.translator import smoothed_cross_entropy

    def right(logits, targets, eps):
        log_p = torch.log_softmax(logits, -1)
        real = targets != 0
        nll = -log_p.gather(-1, targets[..., None])[..., 0]
        per_position = (1 - eps) * nll - eps * log_p.mean(-1)
        return per_position[real].mean()

    def plain(logits, targets, eps):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=0)

    def counts_padding(logits, targets, eps):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               label_smoothing=eps)

    def others_only(logits, targets, eps):
        log_p = torch.log_softmax(logits, -1)
        nll = -log_p.gather(-1, targets[..., None])[..., 0]
        others = (-log_p.sum(-1) - nll) / (logits.shape[-1] - 1)
        return ((1 - eps) * nll + eps * others)[targets != 0].mean()

    def summed(logits, targets, eps):
        return right(logits, targets, eps) * (targets != 0).sum()

    _verdict(check_smoothed_loss(right), True, "label_smoothing")
    _verdict(check_smoothed_loss(smoothed_cross_entropy), True)
    _verdict(check_smoothed_loss(lambda l, t, e: float(right(l, t, e))), True)
    _verdict(check_smoothed_loss(plain), False, "epsilon is ignored")
    _verdict(check_smoothed_loss(counts_padding), False, "padding is counted")
    _verdict(check_smoothed_loss(others_only), False, "other")
    _verdict(check_smoothed_loss(lambda l, t, e: right(l, t, 1 - e)), False, "swapped")
    _verdict(check_smoothed_loss(summed), False, "mean")
    _verdict(check_smoothed_loss(lambda l, t, e: torch.tensor(1.0)), False, "PyTorch's is")
    _verdict(check_smoothed_loss(lambda l, t, e: l), False, "one number")
    _verdict(check_smoothed_loss(None), False, "placeholder")
    _verdict(check_smoothed_loss(lambda l, t, e: ...), False, "placeholder")
