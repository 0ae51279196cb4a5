"""Checkers for the exercises of chapter 6 (the Transformer).

Right answers are computed here from the exercise's data (never typed in), and each checker
tries the usual mistakes first so that a wrong answer gets a hint that names the mistake.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..multihead import MultiHeadAttention, scaled_dot_product_attention
from ..positions import positional_encoding, rotation_matrix
from ..seeding import seeded
from ..transformer import EncoderLayer
from ..translation import PAD
from .core import Wrong, checker, close, number, require_function

# -- the data of the exercises (the chapter's exercise text states them) --------------------------
VARIANCE_D_K = 64                                     # Var(q . k) for d_k = 64 unit-variance entries
LAYER_SIZES = dict(d_model=512, num_heads=8, d_ff=2048)   # the paper's base encoder layer
# the compute-by-hand example: three tokens, d_k = 4, causal self-attention
HAND_Q = [[2.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]]
HAND_K = [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
CACHE_STEPS = 20                                      # the key/value cache exercise decodes m = 20 tokens

__all__ = ["check_score_variance", "check_rotation", "check_attention", "check_layer_parameters",
           "check_causal_weights", "check_pre_norm_layer", "check_cache_counts", "check_kv_cache",
           "check_smoothed_loss", "smoothed_loss_reference",
           "hand_weights", "cache_score_counts", "VARIANCE_D_K", "LAYER_SIZES", "HAND_Q", "HAND_K",
           "CACHE_STEPS"]


def _as_tensor(value, shape: tuple, what: str) -> torch.Tensor:
    """A tensor, array or nested list of the given shape, as float64."""
    if value is None or value is Ellipsis:
        raise NotImplementedError
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().double()
    else:
        try:
            tensor = torch.as_tensor(np.asarray(value, dtype=np.float64))
        except (TypeError, ValueError):
            raise Wrong(f"expected {what} as a tensor, array or nested list of numbers of shape "
                        f"{shape}, got {type(value).__name__}.") from None
    if tuple(tensor.shape) != tuple(shape):
        raise Wrong(f"expected {what} of shape {tuple(shape)}, got {tuple(tensor.shape)}.")
    if not torch.isfinite(tensor).all():
        raise Wrong(f"{what} holds NaN or infinite entries (a row blocked everywhere, or "
                    "-inf that was never removed?).")
    return tensor


def _same(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-5) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=tol,
                                                      rtol=tol))


# -- exercise: why divide by sqrt(d_k) -------------------------------------------------------
@checker
def check_score_variance(var_unscaled, var_scaled) -> str:
    """The variance of ``q . k`` for ``d_k = VARIANCE_D_K`` independent N(0, 1) entries, and of
    ``q . k / sqrt(d_k)``."""
    d_k = VARIANCE_D_K
    raw = number(var_unscaled, "the variance of q . k", "64.0")
    scaled = number(var_scaled, "the variance of q . k / sqrt(d_k)", "1.0")
    if not close(raw, d_k):
        if close(raw, math.sqrt(d_k)):
            raise Wrong(f"Var(q . k) = {raw:g} is the standard deviation, sqrt(d_k). The variance of "
                        "a sum of independent terms is the SUM of their variances.")
        if close(raw, 1.0):
            raise Wrong("Var(q . k) = 1 is the variance of ONE product q_i k_i; the dot product "
                        f"adds d_k = {d_k} of them.")
        if close(raw, 1 / d_k) or close(raw, 0.0):
            raise Wrong(f"{raw:g} is too small: each product q_i k_i has variance "
                        "E[q_i^2] E[k_i^2] = 1, and there are d_k of them.")
        raise Wrong(f"Var(q . k) = {raw:g} is not it. Write q . k as a sum of d_k products, find "
                    "the mean and variance of one product, then add.")
    if not close(scaled, 1.0):
        if close(scaled, math.sqrt(d_k)):
            raise Wrong(f"{scaled:g}: dividing a random variable by c divides its variance by c^2, "
                        "not by c. Here c = sqrt(d_k).")
        if close(scaled, 1 / math.sqrt(d_k)) or close(scaled, 1 / d_k):
            raise Wrong(f"{scaled:g} divides once too often: Var(X / c) = Var(X) / c^2 with "
                        f"Var(X) = {d_k} and c = sqrt({d_k}).")
        raise Wrong(f"Var(q . k / sqrt(d_k)) = {scaled:g} is not it: use Var(X / c) = Var(X) / c^2.")
    return (f"{d_k} and 1: whatever d_k is, the scaled scores have unit variance, so the softmax "
            "sees numbers of the same size in a small model and a large one.")


# -- exercise: PE(pos + k) as a linear function of PE(pos) ----------------------------------------
@checker
def check_rotation(rotation) -> str:
    """``rotation(k, d_model) -> (d_model, d_model)`` with ``PE(pos + k) = PE(pos) @ R`` for every
    position (``PE`` rows are positions, as :func:`~seqbook.positions.positional_encoding`)."""
    require_function(rotation)
    d_model = 8
    pe = positional_encoding(60, d_model, dtype=torch.float64)
    for k in (1, 3, 10):
        R = _as_tensor(rotation(k, d_model), (d_model, d_model), f"rotation({k}, {d_model})")
        shifted = pe[:50] @ R
        if _same(shifted, pe[k:k + 50], 1e-6):
            continue
        if k <= 10 and _same(pe[k:k + 50] @ R, pe[:50], 1e-6):
            raise Wrong(f"rotation({k}, ...) moves positions back by {k}: you built R_{{-k}}, which "
                        "is the transpose of R_k. With rows as positions PE(pos + k) = PE(pos) @ R_k, "
                        "so the 2x2 block is [[cos, -sin], [sin, cos]].")
        if _same(R, rotation_matrix(1, d_model)) and k != 1:
            raise Wrong(f"rotation({k}, ...) is R_1: the angle of each block is k times its "
                        "frequency.")
        if _same(shifted[:, :2], pe[k:k + 50, :2], 1e-6):
            raise Wrong(f"the first pair of columns is right for k = {k} but later pairs are not: "
                        "pair i turns with its own frequency w_i = 10000^(-2i / d_model).")
        raise Wrong(f"PE(pos) @ rotation({k}, {d_model}) is not PE(pos + {k}). Expand "
                    "sin(w (pos + k)) and cos(w (pos + k)) with the angle-addition formulas: "
                    "each (sin, cos) column pair mixes only with itself.")
    return ("PE(pos + k) = PE(pos) R_k for every pos, with a block-diagonal rotation that does "
            "not depend on pos: a shift in position is a linear map of the encoding.")


# -- exercise: masked scaled dot-product attention ----------------------------------------------
def _attention_cases():
    gen = torch.Generator().manual_seed(6)
    q = torch.randn(2, 5, 8, generator=gen)
    k = torch.randn(2, 6, 8, generator=gen)
    v = torch.randn(2, 6, 3, generator=gen)
    padding = torch.tensor([[False] * 5 + [True], [False] * 4 + [True] * 2])
    x = torch.randn(2, 5, 8, generator=gen)
    return [("no mask", (q, k, v), {}),
            ("padding mask", (q, k, v), {"key_padding_mask": padding}),
            ("causal mask", (x, x, x), {"causal": True})]


@checker
def check_attention(attention) -> str:
    """``attention(q, k, v, key_padding_mask=None, causal=False) -> (output, weights)`` for
    ``q (batch, queries, d_k)``, ``k (batch, keys, d_k)``, ``v (batch, keys, d_v)``; masks True
    = blocked, as in :func:`~seqbook.multihead.scaled_dot_product_attention`."""
    require_function(attention)
    for name, (q, k, v), masks in _attention_cases():
        with torch.no_grad():
            result = attention(q.clone(), k.clone(), v.clone(), **masks)
        if result is None or result is Ellipsis:   # the stub's body is still `...`
            raise NotImplementedError
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise Wrong(f"expected the pair (output, weights), got {type(result).__name__}.")
        n_q, n_k = q.shape[1], k.shape[1]
        out = _as_tensor(result[0], (2, n_q, v.shape[-1]), f"the output ({name})")
        weights = _as_tensor(result[1], (2, n_q, n_k), f"the weights ({name})")
        right_out, right_w = scaled_dot_product_attention(q, k, v, **masks)
        if _same(weights, right_w) and _same(out, right_out):
            continue
        scores = q @ k.transpose(-2, -1)
        if _same(weights, torch.softmax(scores, -1)) or (
                masks and _same(weights, scaled_dot_product_attention(
                    q * math.sqrt(q.shape[-1]), k, v, **masks)[1])):
            raise Wrong(f"{name}: the scores were not divided by sqrt(d_k) = "
                        f"sqrt({q.shape[-1]}).")
        if _same(weights.sum(-2), torch.ones(2, n_k, dtype=torch.float64)):
            raise Wrong(f"{name}: your weights sum to 1 over the queries; the softmax runs over "
                        "the keys (the last axis), so that each query's weights sum to 1.")
        if "key_padding_mask" in masks:
            inverted = scaled_dot_product_attention(q, k, v, key_padding_mask=~masks[
                "key_padding_mask"])[1]
            if _same(weights, inverted):
                raise Wrong(f"{name}: the mask is read the wrong way round. True marks a padding "
                            "key, one that must get weight 0.")
            if _same(weights, torch.softmax(scores / math.sqrt(8), -1)):
                raise Wrong(f"{name}: the padding keys still get weight: set their scores to "
                            "-inf before the softmax.")
        if masks.get("causal"):
            if _same(weights, torch.softmax(scores / math.sqrt(8), -1)):
                raise Wrong(f"{name}: causal=True was ignored: query i may not see keys j > i.")
            below = torch.ones(n_q, n_k, dtype=torch.bool).tril(-1)
            if _same(weights, scaled_dot_product_attention(q, k, v, attn_mask=below)[1]):
                raise Wrong(f"{name}: the triangle is the wrong way round: query i may look at "
                            "keys 0..i (itself and the PAST), blocked are the keys j > i.")
        zeroed = torch.softmax(torch.where(right_w == 0, torch.zeros(()),
                                           scores / math.sqrt(8)), -1)
        if masks and _same(weights, zeroed):
            raise Wrong(f"{name}: blocked scores were set to 0, but exp(0) = 1 still gives them "
                        "weight. Set them to -inf (masked_fill(mask, float('-inf'))).")
        if _same(weights, right_w):
            raise Wrong(f"{name}: the weights are right but the output is not weights @ v.")
        raise Wrong(f"{name}: the weights differ from softmax(q k^T / sqrt(d_k)) with blocked "
                    "pairs at -inf.")
    return ("your attention equals seqbook's (and PyTorch's) with no mask, a padding mask and a "
            "causal mask.")


# -- exercise: count the parameters of an encoder layer -----------------------------------------
def layer_parameter_counts(d_model: int, num_heads: int, d_ff: int) -> tuple[int, int]:
    """(multi-head attention, whole encoder layer) parameter counts."""
    attention = 4 * (d_model * d_model + d_model)
    ffn = d_model * d_ff + d_ff + d_ff * d_model + d_model
    return attention, attention + ffn + 2 * 2 * d_model


@checker
def check_layer_parameters(attention_params, layer_params) -> str:
    """The parameters of a multi-head attention layer and of a whole (post-norm) encoder layer
    with :data:`LAYER_SIZES`, biases everywhere, as ``nn.TransformerEncoderLayer``."""
    d, h, d_ff = LAYER_SIZES["d_model"], LAYER_SIZES["num_heads"], LAYER_SIZES["d_ff"]
    att = number(attention_params, "the attention layer's number of parameters", "1050624")
    layer = number(layer_params, "the encoder layer's number of parameters", "3152384")
    right_att, right_layer = layer_parameter_counts(d, h, d_ff)
    d_k = d // h
    if att != right_att:
        if att == 4 * d * d:
            raise Wrong(f"attention: {att:g} forgets the biases (one of {d} per projection).")
        if att == 3 * (d * d + d):
            raise Wrong(f"attention: {att:g} counts W_Q, W_K and W_V but not the output "
                        "projection W_O.")
        if att in (h * 4 * (d * d + d), h * 3 * (d * d + d) + d * d + d):
            raise Wrong(f"attention: {att:g} gives every head full d_model x d_model "
                        f"projections. Each head projects to d_k = {d_k} dimensions, so the "
                        f"{h} heads together have one {d} x {d} matrix per role.")
        if att == h * 4 * (d_k * d_k + d_k):
            raise Wrong(f"attention: {att:g} uses d_k x d_k matrices; each head maps all "
                        f"d_model = {d} inputs to d_k = {d_k} outputs.")
        raise Wrong(f"attention: {att:g} is not it. Count W_Q, W_K, W_V and W_O, each "
                    f"{d} x {d} with a bias of {d}.")
    ffn = d * d_ff + d_ff + d_ff * d + d
    if layer != right_layer:
        if layer == right_layer - 4 * d:
            raise Wrong(f"layer: {layer:g} forgets the two LayerNorms, each with a gain and a "
                        f"bias of {d}.")
        if layer == right_layer - 2 * d:
            raise Wrong(f"layer: {layer:g} gives each LayerNorm {d} parameters; each has a gain "
                        "AND a bias vector.")
        if layer == right_att + ffn - d_ff - d:
            raise Wrong(f"layer: {layer:g}: the feed-forward network's two biases ({d_ff} and "
                        f"{d}) and the LayerNorms are missing.")
        if layer in (right_att + 2 * d * d_ff + 4 * d, right_att + 2 * d * d_ff):
            raise Wrong(f"layer: {layer:g} forgets the feed-forward network's biases ({d_ff} "
                        f"and {d}).")
        if layer == ffn or layer == ffn + 4 * d:
            raise Wrong(f"layer: {layer:g} leaves out the attention sublayer.")
        raise Wrong(f"layer: {layer:g} is not it. Add the attention, the feed-forward network "
                    f"(W_1 {d} x {d_ff} and W_2 {d_ff} x {d}, with biases) and two LayerNorms.")
    return (f"{right_att:,} and {right_layer:,}: the feed-forward network holds two thirds of "
            "the layer, and the number of heads does not change the count.")


# -- exercise: causal attention weights by hand --------------------------------------------------
def hand_weights() -> torch.Tensor:
    """The (3, 3) causal attention weights of :data:`HAND_Q`, :data:`HAND_K`."""
    q = torch.tensor(HAND_Q, dtype=torch.float64)
    k = torch.tensor(HAND_K, dtype=torch.float64)
    return scaled_dot_product_attention(q[None], k[None], k[None], causal=True)[1][0]


@checker
def check_causal_weights(weights) -> str:
    """The 3 x 3 causal attention weights (row = query, column = key) of the example."""
    w = _as_tensor(weights, (3, 3), "the weights")
    right = hand_weights()
    if _same(w, right, 2e-3):
        return ("right: row 2 is (1, e^2) / (1 + e^2) over its two keys, row 3 is (e, e, e^2) / "
                "(2e + e^2), and every entry above the diagonal is 0.")
    q = torch.tensor(HAND_Q, dtype=torch.float64)
    k = torch.tensor(HAND_K, dtype=torch.float64)
    scores = q @ k.T
    if _same(w, right.T, 2e-3):
        raise Wrong("that is the transpose: one ROW per query, whose entries (over the keys it "
                    "may see) sum to 1.")
    if _same(w, torch.softmax(scores / 2, -1), 2e-3):
        raise Wrong("no mask: in causal attention query i sees only keys 1..i, so the entries "
                    "above the diagonal are 0.")
    unscaled = scores.masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), float("-inf"))
    if _same(w, torch.softmax(unscaled, -1), 2e-3):
        raise Wrong("the scores were not divided by sqrt(d_k) = 2.")
    lower = scores.masked_fill(torch.ones(3, 3, dtype=torch.bool).tril(-1), float("-inf"))
    if _same(w, torch.softmax(lower / 2, -1), 2e-3):
        raise Wrong("the mask is the wrong way round: query i may look back (keys j <= i), not "
                    "ahead.")
    if not torch.allclose(w.sum(-1), torch.ones(3, dtype=torch.float64), atol=2e-3):
        raise Wrong(f"each row must sum to 1 (a softmax); yours sum to "
                    f"{[round(x, 3) for x in w.sum(-1).tolist()]}.")
    raise Wrong("not yet: compute the scores q_i . k_j, divide by 2, block j > i, and take the "
                "softmax of each row over the keys that are left.")


# -- exercise: a pre-norm encoder layer ----------------------------------------------------------
@checker
def check_pre_norm_layer(pre_norm_forward) -> str:
    """``pre_norm_forward(layer, x) -> (batch, time, d_model)``: the pre-norm encoder layer,
    ``x + SelfAttn(LN1(x))`` then ``+ FFN(LN2(.))``, with ``layer``'s modules (an
    :class:`~seqbook.transformer.EncoderLayer`, no mask, dropout off)."""
    require_function(pre_norm_forward)
    with seeded(11):  # the same case every time, without touching the reader's random stream
        layer = EncoderLayer(16, 4, 32, dropout=0.0)
        with torch.no_grad():
            for norm in (layer.norm1, layer.norm2):   # non-trivial gains and biases
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)
        x = 3 * torch.randn(2, 7, 16)
        pre = EncoderLayer(16, 4, 32, dropout=0.0, norm_first=True)  # (its weights: layer's)
    layer.eval()
    pre.load_state_dict(layer.state_dict())
    pre.eval()
    with torch.no_grad():
        right = pre(x)
        post = layer(x)
        out = _as_tensor(pre_norm_forward(layer, x.clone()), (2, 7, 16), "the output")
        if _same(out, right, 1e-4):
            return ("right: the residual path x -> x + ... -> output never passes through a "
                    "LayerNorm inside the layers (a pre-norm stack adds one at the very end), "
                    "which is what lets deep pre-norm stacks train without warm-up.")
        if _same(out, post, 1e-4):
            raise Wrong("that is the post-norm layer, LN(x + Sublayer(x)). Pre-norm normalises "
                        "the sublayer's INPUT and adds its output to x unnormalised.")
        if _same(out, layer.norm2(right), 1e-4) or _same(out, torch.nn.functional.layer_norm(
                right, (16,)), 1e-4):
            raise Wrong("a LayerNorm was applied to the layer's output; in pre-norm the output "
                        "is the raw residual sum (the stack adds one final LayerNorm).")
        h = layer.norm1(x)
        first = layer.norm1(x) + layer.self_attn(h, h, h)[0]
        if _same(out, first + layer.ffn(layer.norm2(first)), 1e-4):
            raise Wrong("the residual adds the NORMALISED input LN(x); it must add x itself, so "
                        "that an un-normalised path runs from input to output.")
    raise Wrong("the output differs from y = x + SelfAttn(LN1(x)), out = y + FFN(LN2(y)) "
                "(self-attention with query = key = value = LN1(x)).")


# -- exercise: a key/value cache for incremental decoding ----------------------------------------
def cache_score_counts(m: int) -> tuple[int, int]:
    """Query-key scores one causal self-attention head computes to decode ``m`` tokens: without a
    cache (step t recomputes its t x t matrix, masked entries included) and with one (t scores)."""
    return sum(t * t for t in range(1, m + 1)), sum(range(1, m + 1))


@checker
def check_cache_counts(without_cache, with_cache) -> str:
    """The two counts of :func:`cache_score_counts` for ``m = CACHE_STEPS``."""
    m = CACHE_STEPS
    right_without, right_with = cache_score_counts(m)
    without = number(without_cache, "the number of scores without a cache", str(right_without))
    with_ = number(with_cache, "the number of scores with a cache", str(right_with))
    if without == right_with and with_ == right_without:
        raise Wrong("the two counts are swapped: without a cache every step recomputes the "
                    "whole t x t matrix, so that is the larger number.")
    if without != right_without:
        if without == m * m:
            raise Wrong(f"{without:g} = {m} x {m} is the last step alone; without a cache EVERY "
                        "step t recomputes its t x t scores: add them up over t = 1..m.")
        if without == m * (m + 1) * (m + 2) / 6:
            raise Wrong(f"{without:g} counts only the scores the causal mask keeps; the masked "
                        "entries of each t x t matrix are computed too (and then set to -inf).")
        raise Wrong(f"{without:g} is not it: step t runs attention over t positions, which is a "
                    "t x t matrix of scores; sum t^2 over t = 1..m.")
    if with_ != right_with:
        if with_ == m:
            raise Wrong(f"{with_:g} counts one score per step; the new query is scored against "
                        "every cached key, t of them at step t.")
        if with_ == m * (m + 1):
            raise Wrong(f"{with_:g} is twice too many: 1 + 2 + ... + m = m(m + 1) / 2.")
        raise Wrong(f"{with_:g} is not it: with a cache, step t scores ONE new query against the "
                    "t keys seen so far.")
    return (f"{right_without:,} against {right_with:,}: the cache turns a cost that grows as "
            "m^3 / 3 into one that grows as m^2 / 2.")


def _cached_reference(attn: MultiHeadAttention, x_new: torch.Tensor, cache: dict, *, scale=True,
                      keep=True, project=True) -> torch.Tensor:
    """The right cached step (all defaults), or a typical mistake (a default switched off)."""
    q = attn._split(attn.q_proj(x_new))
    k, v = attn._split(attn.k_proj(x_new)), attn._split(attn.v_proj(x_new))
    if cache and keep:
        k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
    cache["k"], cache["v"] = k, v
    scores = q @ k.transpose(-2, -1) / (math.sqrt(attn.d_k) if scale else 1.0)
    heads = torch.softmax(scores, dim=-1) @ v
    concat = heads.transpose(1, 2).reshape(x_new.shape[0], 1, attn.d_model)
    return attn.out_proj(concat) if project else concat


@checker
def check_kv_cache(cached_self_attention) -> str:
    """``cached_self_attention(attn, x_new, cache) -> (batch, 1, d_model)`` for a
    :class:`~seqbook.multihead.MultiHeadAttention`: one decoding step of causal self-attention
    that appends the new position's key and value to ``cache`` (``"k"``, ``"v"``: (batch,
    heads, t, d_k)) and equals the last row of ``attn(x, x, x, causal=True)`` over the prefix."""
    require_function(cached_self_attention)
    with seeded(17):                           # a fixed case, the reader's stream untouched
        attn = MultiHeadAttention(16, 4, dropout=0.0)
        x = torch.randn(2, 6, 16)
    attn.eval()
    cache: dict = {}
    mistakes = {name: {} for name in ("scale", "keep", "project")}
    with torch.no_grad():
        for t in range(1, x.shape[1] + 1):
            x_new = x[:, t - 1:t]
            result = cached_self_attention(attn, x_new.clone(), cache)
            if result is None or result is Ellipsis:
                raise NotImplementedError
            out = _as_tensor(result, (2, 1, 16), f"the output at step {t}")
            full = attn(x[:, :t], x[:, :t], x[:, :t], causal=True)[0][:, -1:]
            wrong = {name: _cached_reference(attn, x_new, store, **{name: False})
                     for name, store in mistakes.items()}
            if not _same(out, full, 1e-5):
                if _same(out, wrong["scale"], 1e-5):
                    raise Wrong(f"step {t}: the scores were not divided by sqrt(d_k) = "
                                f"sqrt({attn.d_k}).")
                if _same(out, wrong["keep"], 1e-5):
                    raise Wrong(f"step {t}: the new position attends only to itself: append its "
                                "key and value to the cache (torch.cat along the time axis, "
                                "dim=2) instead of replacing what was there.")
                if _same(out, wrong["project"], 1e-5):
                    raise Wrong(f"step {t}: the heads are concatenated but not mixed: apply "
                                "attn.out_proj (W_O) at the end.")
                if t == 1:
                    raise Wrong("step 1 already differs from attn(x, x, x, causal=True)[0][:, -1:]: "
                                "project x_new with attn.q_proj, k_proj and v_proj, split the "
                                "heads with attn._split, and attend.")
                raise Wrong(f"step {t} differs from the last row of causal self-attention over "
                            f"the first {t} positions: the new query must be scored against "
                            "the keys of every position so far, its own included.")
            if not isinstance(cache, dict) or set(cache) != {"k", "v"}:
                raise Wrong(f"after step {t} the cache should hold exactly the keys 'k' and 'v', "
                            f"got {sorted(cache) if isinstance(cache, dict) else cache!r}.")
            for name in ("k", "v"):
                _as_tensor(cache[name], (2, 4, t, 4), f"cache['{name}'] after {t} steps "
                           "(batch, heads, t, d_k)")
    return ("every step equals the last row of full causal self-attention, and each step computed "
            "one new query, key and value instead of re-running the whole prefix.")


# -- exercise: the label-smoothed loss, padding ignored -----------------------------------------
def smoothed_loss_reference(logits: torch.Tensor, targets: torch.Tensor, epsilon: float) -> torch.Tensor:
    """PyTorch's answer: cross-entropy with ``label_smoothing=epsilon``, the ``PAD`` positions
    ignored, mean over the others. logits (batch, time, n_vocab), targets (batch, time)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), targets.reshape(-1),
                           label_smoothing=epsilon, ignore_index=PAD)


def _smoothing_cases():
    gen = torch.Generator().manual_seed(12)
    cases = []
    for (batch, time, n_vocab, lengths, eps) in ((3, 6, 9, (6, 4, 2), 0.1), (2, 5, 7, (5, 1), 0.3)):
        logits = 3 * torch.randn(batch, time, n_vocab, generator=gen)
        targets = torch.randint(1, n_vocab, (batch, time), generator=gen)
        targets[torch.arange(time)[None, :] >= torch.tensor(lengths)[:, None]] = PAD   # right padding
        cases.append((logits, targets, eps))
    return cases


def _smoothing_mistakes(logits, targets, eps) -> list[tuple[float, str]]:
    """(the value a typical mistake gives, its hint)."""
    flat, flat_targets = logits.reshape(-1, logits.shape[-1]).double(), targets.reshape(-1)
    log_p = F.log_softmax(flat, -1)
    real = flat_targets != PAD
    nll = -log_p[real].gather(1, flat_targets[real, None])[:, 0]
    n_vocab = flat.shape[-1]
    others = (-log_p[real].sum(1) - nll) / (n_vocab - 1)
    uniform = -log_p[real].mean(1)
    return [
        (float(F.cross_entropy(flat, flat_targets, ignore_index=PAD)),
         "that is the plain cross-entropy: epsilon is ignored. The target gives the right token "
         "1 - epsilon and spreads epsilon evenly over the vocabulary."),
        (float(F.cross_entropy(flat, flat_targets, label_smoothing=eps)),
         f"the padding is counted: positions whose target is PAD ({PAD}) must be left out of the mean."),
        (float(((1 - eps) * nll + eps * others).mean()),
         "epsilon is spread over the n_vocab - 1 *other* tokens; PyTorch (and the paper's recipe here) "
         "spreads it over all n_vocab tokens, the right one included, so the right one gets "
         "1 - epsilon + epsilon / n_vocab."),
        (float((eps * nll + (1 - eps) * uniform).mean()),
         "epsilon and 1 - epsilon are swapped: the right token's share is the large one, 1 - epsilon."),
        (float(((1 - eps) * nll + eps * uniform).sum()),
         "that is the sum over the real positions; the loss is their mean."),
    ]


@checker
def check_smoothed_loss(smoothed_loss) -> str:
    """``smoothed_loss(logits (batch, time, n_vocab), targets (batch, time), epsilon)``, a scalar,
    must equal ``F.cross_entropy(..., label_smoothing=epsilon, ignore_index=PAD)``."""
    require_function(smoothed_loss)
    for logits, targets, eps in _smoothing_cases():
        out = smoothed_loss(logits.clone(), targets.clone(), eps)
        if out is None or out is Ellipsis:
            raise NotImplementedError
        value = number(out, "the loss (one number, a scalar tensor)")
        right = float(smoothed_loss_reference(logits, targets, eps))
        if close(value, right, rel=1e-4):
            continue
        for wrong, hint in _smoothing_mistakes(logits, targets, eps):
            if close(value, wrong, rel=1e-4) and not close(wrong, right, rel=1e-4):
                raise Wrong(hint)
        raise Wrong(f"the loss is {value:.5f}, PyTorch's is {right:.5f}: per real position it is "
                    "(1 - epsilon) (-log p[y]) + epsilon (mean over v of -log p[v]), then the mean "
                    "over the positions that are not PAD.")
    return ("equal to F.cross_entropy(label_smoothing=epsilon, ignore_index=PAD), on two batches "
            "with padding.")
