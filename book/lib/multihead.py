"""Scaled dot-product and multi-head attention (Vaswani et al. 2017), equal to PyTorch's.

::

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

with blocked (query, key) pairs given exactly zero weight before ``V`` is mixed. Masks use
PyTorch's ``nn.MultiheadAttention`` convention, **True = blocked**:

- ``key_padding_mask (batch, keys)``: True at padding keys (``src == PAD``, i.e. the opposite of
  ``Batch.src_mask``, which is True at real tokens);
- ``causal=True``: query ``i`` may not look at keys ``j > i`` (:func:`causal_mask`);
- ``attn_mask (queries, keys)``: any other pattern of blocked pairs.

(``torch.nn.functional.scaled_dot_product_attention`` reads a boolean ``attn_mask`` the other way
round, True = may attend; the tests convert between them.) :class:`MultiHeadAttention` has
``from_torch(nn.MultiheadAttention)`` (``batch_first=True``); its parameters come from PyTorch's
global generator (``torch.manual_seed`` fixes them). The layers and the whole model built from
these pieces are in :mod:`seqbook.transformer`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


__all__ = ["causal_mask", "padding_mask", "scaled_dot_product_attention", "MultiHeadAttention",
           "softmax_saturation"]


# -- checks --------------------------------------------------------------------------------
def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"expected a positive integer {name}, got {value!r}")
    return value


def _dropout_p(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"expected a dropout probability in [0, 1), got {value!r}")
    return float(value)


def _shape(x) -> str:
    return str(tuple(x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__


def _check_float(x, expected: str, last: int | None, name: str, dims=(3,)) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected {name} as a torch.Tensor of shape {expected}, got {_shape(x)}")
    if x.dim() not in dims or (last is not None and x.shape[-1] != last):
        raise ValueError(f"expected {name} of shape {expected}, got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"expected a floating-point {name}, got dtype {x.dtype}")
    return x


def _check_mask(mask, shape: tuple, name: str, meaning: str) -> torch.Tensor | None:
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = f"dtype {mask.dtype}" if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"expected {name} as a bool tensor ({meaning}), got {got}")
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"expected {name} of shape {tuple(shape)} ({meaning}), "
                         f"got {tuple(mask.shape)}")
    return mask


# -- masks and attention -------------------------------------------------------------------
def causal_mask(size: int, device=None) -> torch.Tensor:
    """``(size, size)`` bool, True above the diagonal: query ``i`` may not see key ``j > i``."""
    _positive_int(size, "size")
    return torch.ones(size, size, dtype=torch.bool, device=device).triu(1)


def padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """``(batch, max_len)`` bool, True at positions ``>= lengths[b]`` (the padding)."""
    if not isinstance(lengths, torch.Tensor) or lengths.dim() != 1 or lengths.is_floating_point():
        raise ValueError(f"expected lengths as an integer tensor of shape (batch,), got {_shape(lengths)}")
    if len(lengths) and (lengths.min() < 1 or lengths.max() > max_len):
        raise ValueError(f"expected every length between 1 and {max_len}, got {lengths.tolist()}")
    return torch.arange(max_len, device=lengths.device) >= lengths[:, None]


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 key_padding_mask: torch.Tensor | None = None,
                                 causal: bool = False, attn_mask: torch.Tensor | None = None,
                                 dropout_p: float = 0.0):
    """``softmax(q k^T / sqrt(d_k)) v`` with masks (True = blocked, see the module docstring).

    Shapes: ``q (batch, heads, queries, d_k)``, ``k (batch, heads, keys, d_k)``,
    ``v (batch, heads, keys, d_v)``; the ``heads`` axis may be left out (3-D inputs).
    ``key_padding_mask (batch, keys)``, ``attn_mask (queries, keys)``.

    Returns ``(output (batch, heads, queries, d_v), weights (batch, heads, queries, keys))``.
    Blocked pairs get weight exactly 0. A query whose every key is blocked (a row with nothing
    to look at) gets all-zero weights and a zero output instead of the NaN that softmax over
    all ``-inf`` gives. ``dropout_p`` drops weights (and rescales the rest) before they mix
    ``v``; the returned weights are the ones before dropout.
    """
    q = _check_float(q, "(batch, [heads,] queries, d_k)", None, "q", dims=(3, 4))
    d_k = q.shape[-1]
    lead, n_q = tuple(q.shape[:-2]), q.shape[-2]
    k = _check_float(k, f"{lead + ('keys', d_k)}", d_k, "k", dims=(q.dim(),))
    if tuple(k.shape[:-2]) != lead:
        raise ValueError(f"expected k of shape {lead + ('keys', d_k)}, got {tuple(k.shape)}")
    n_k = k.shape[-2]
    v = _check_float(v, f"{lead + (n_k, 'd_v')}", None, "v", dims=(q.dim(),))
    if tuple(v.shape[:-1]) != lead + (n_k,):
        raise ValueError(f"expected v of shape {lead + (n_k, 'd_v')}, got {tuple(v.shape)}")
    blocked = _blocked_pairs(n_q, n_k, lead[0], q.dim(), key_padding_mask, causal, attn_mask,
                             q.device)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    nothing_to_see = None
    if blocked is not None:
        # exp(-inf) = 0: the softmax itself gives a blocked key weight exactly 0.
        scores = scores.masked_fill(blocked, float("-inf"))
        # A row blocked everywhere would be softmax(-inf, ..., -inf) = 0/0 = NaN; such a row
        # is normalised over zeros instead, and its (uniform) weights are then set to 0.
        empty_rows = blocked.all(dim=-1, keepdim=True)
        if empty_rows.any():
            nothing_to_see = empty_rows
            scores = scores.masked_fill(nothing_to_see, 0.0)
    weights = torch.softmax(scores, dim=-1)
    if nothing_to_see is not None:
        weights = weights.masked_fill(nothing_to_see, 0.0)
    # Dropout acts on the weights that mix v; the weights returned are the ones before it.
    mixing = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return mixing @ v, weights


def _blocked_pairs(n_q, n_k, batch, dims, key_padding_mask, causal, attn_mask, device):
    """All masks as one bool tensor, True = blocked, that broadcasts against the scores
    ``(batch, [heads,] queries, keys)``; None when nothing is blocked."""
    blocked = None
    if causal:
        blocked = causal_mask(max(n_q, n_k), device)[:n_q, :n_k]
    if _check_mask(attn_mask, (n_q, n_k), "attn_mask", "True = blocked pair") is not None:
        blocked = attn_mask if blocked is None else blocked | attn_mask
    if _check_mask(key_padding_mask, (batch, n_k), "key_padding_mask",
                   "True = padding key") is not None:
        per_batch = key_padding_mask.view((batch,) + (1,) * (dims - 2) + (n_k,))
        blocked = per_batch if blocked is None else blocked | per_batch
    return blocked if blocked is not None and blocked.any() else None


def softmax_saturation(d_k: int, num_keys: int = 16, samples: int = 2000, seed: int = 0) -> dict:
    """Why the scores are divided by ``sqrt(d_k)``, measured: ``q`` and ``num_keys`` keys with
    independent N(0, 1) entries, ``samples`` times.

    Returns ``{"variance": var(q . k)`` (``d_k`` in theory: a sum of ``d_k`` products of
    variance 1), ``"max_weight_unscaled"`` and ``"max_weight_scaled"``: the mean largest
    softmax weight without and with the scale (near 1 when the softmax saturates into a
    one-hot, whose gradient is nearly 0), ``"grad_norm_unscaled"`` / ``"grad_norm_scaled"``:
    the mean Frobenius norm of the softmax's Jacobian ``diag(p) - p p^T``}.
    """
    for value, name in ((d_k, "d_k"), (num_keys, "num_keys"), (samples, "samples")):
        _positive_int(value, name)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, 1, d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(samples, num_keys, d_k, generator=gen, dtype=torch.float64)
    scores = (q * k).sum(-1)  # (samples, num_keys)
    result = {"variance": scores.var().item()}
    for name, s in (("unscaled", scores), ("scaled", scores / math.sqrt(d_k))):
        p = torch.softmax(s, dim=-1)
        jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]
        result[f"max_weight_{name}"] = p.max(dim=-1).values.mean().item()
        result[f"grad_norm_{name}"] = jacobian.flatten(1).norm(dim=-1).mean().item()
    return result


class MultiHeadAttention(nn.Module):
    """``num_heads`` attentions side by side, each in its own ``d_k = d_model / num_heads``
    subspace: ``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O`` with
    ``head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i)``.

    ``forward(query (batch, queries, d_model), key (batch, keys, d_model), value (batch, keys,
    d_model), key_padding_mask=None, causal=False, attn_mask=None)`` returns
    ``(output (batch, queries, d_model), weights (batch, heads, queries, keys))``.
    Self-attention passes the same tensor three times; cross-attention passes the decoder's
    states as ``query`` and the encoder's output as ``key`` and ``value``.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        _positive_int(d_model, "d_model"), _positive_int(num_heads, "num_heads")
        if d_model % num_heads:
            raise ValueError(f"expected d_model divisible by num_heads, got {d_model} and {num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.dropout = _dropout_p(dropout)
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, d_model) for _ in range(3))
        self.out_proj = nn.Linear(d_model, d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """As ``nn.MultiheadAttention``: Xavier-uniform projections (the bound computed over
        the stacked ``(3 d_model, d_model)`` in-projection), zero biases."""
        bound = math.sqrt(6 / (4 * self.d_model))
        for lin in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.uniform_(lin.weight, -bound, bound)
            nn.init.zeros_(lin.bias)
        self.out_proj.reset_parameters()
        nn.init.zeros_(self.out_proj.bias)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}, dropout={self.dropout}"

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "MultiHeadAttention":
        """A copy of a batch-first ``nn.MultiheadAttention`` with biases, equal key/value size
        and no ``add_bias_kv`` / ``add_zero_attn``."""
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"expected an nn.MultiheadAttention, got {type(module).__name__}")
        problems = [what for what, bad in (
            ("batch_first=True", not module.batch_first),
            ("kdim = vdim = embed_dim", not module._qkv_same_embed_dim),
            ("bias=True", module.in_proj_bias is None),
            ("add_bias_kv=False", module.bias_k is not None),
            ("add_zero_attn=False", module.add_zero_attn)) if bad]
        if problems:
            raise ValueError(f"expected a module built with {', '.join(problems)}")
        mha = cls(module.embed_dim, module.num_heads, module.dropout)
        mha = mha.to(device=module.in_proj_weight.device, dtype=module.in_proj_weight.dtype)
        with torch.no_grad():
            for lin, w, b in zip((mha.q_proj, mha.k_proj, mha.v_proj),
                                 module.in_proj_weight.chunk(3), module.in_proj_bias.chunk(3)):
                lin.weight.copy_(w)
                lin.bias.copy_(b)
            mha.out_proj.weight.copy_(module.out_proj.weight)
            mha.out_proj.bias.copy_(module.out_proj.bias)
        return mha

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, time, d_model) -> (batch, heads, time, d_k)``."""
        return x.view(x.shape[0], x.shape[1], self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, key_padding_mask=None, causal: bool = False,
                attn_mask=None):
        d = self.d_model
        query = _check_float(query, f"(batch, queries, {d})", d, "query")
        key = _check_float(key, f"(batch, keys, {d})", d, "key")
        value = _check_float(value, f"(batch, keys, {d})", d, "value")
        if key.shape[0] != query.shape[0] or value.shape[:2] != key.shape[:2]:
            batch = query.shape[0]
            raise ValueError(f"expected key and value of shape ({batch}, keys, {d}), "
                             f"got {tuple(key.shape)} and {tuple(value.shape)}")
        q = self._split(self.q_proj(query))
        k = self._split(self.k_proj(key))
        v = self._split(self.v_proj(value))
        dropout = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(
            q, k, v, key_padding_mask, causal, attn_mask, dropout)
        concat = heads.transpose(1, 2).reshape(query.shape[0], query.shape[1], d)
        return self.out_proj(concat), weights
