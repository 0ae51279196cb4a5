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
``from_torch(nn.MultiheadAttention)`` (``batch_first=True``); its parameters come from ``seed``
(None: from PyTorch's global generator, as ``nn.MultiheadAttention``'s). The layers and the whole
model built from these pieces are in :mod:`seqbook.transformer`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import checks
from .seeding import seeded

__all__ = ["causal_mask", "padding_mask", "scaled_dot_product_attention", "MultiHeadAttention",
           "softmax_saturation", "dropout_probability"]


def dropout_probability(value) -> float:
    """A dropout probability, checked: a number in [0, 1)."""
    return checks.number(value, "a dropout probability", at_least=0, below=1)


# -- masks and attention -------------------------------------------------------------------
def causal_mask(size: int, device=None) -> torch.Tensor:
    """``(size, size)`` bool, True above the diagonal: query ``i`` may not see key ``j > i``."""
    checks.positive_int(size, "size")
    return torch.ones(size, size, dtype=torch.bool, device=device).triu(1)


def padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """``(batch, max_len)`` bool, True at positions ``>= lengths[b]`` (the padding)."""
    checks.token_ids(lengths, "lengths", 1, allow_empty=True)
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
    checks.float_tensor(q, "q", "(batch, [heads,] queries, d_k)", (3, 4))
    checks.query_key_value(q, k, v, None, q.shape[-1], names=("q", "k", "v"), dims=(q.dim(),))
    d_k, lead, n_q, n_k = q.shape[-1], tuple(q.shape[:-2]), q.shape[-2], k.shape[-2]
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
    if attn_mask is not None:
        checks.bool_mask(attn_mask, "attn_mask", "True = blocked pair", (n_q, n_k))
        blocked = attn_mask if blocked is None else blocked | attn_mask
    if key_padding_mask is not None:
        checks.bool_mask(key_padding_mask, "key_padding_mask", "True = padding key", (batch, n_k))
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
    checks.positive_ints(d_k=d_k, num_keys=num_keys, samples=samples)
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
    states as ``query`` and the encoder's output as ``key`` and ``value``. Parameters come from
    ``seed`` (None: from PyTorch's global generator).
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, seed: int | None = None):
        super().__init__()
        checks.positive_ints(d_model=d_model, num_heads=num_heads)
        if d_model % num_heads:
            raise ValueError(f"expected d_model divisible by num_heads, got {d_model} and {num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.dropout = dropout_probability(dropout)
        with seeded(seed):
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
        checks.torch_module(module, nn.MultiheadAttention)
        checks.built_with([("batch_first=True", not module.batch_first),
                           ("kdim = vdim = embed_dim", not module._qkv_same_embed_dim),
                           ("bias=True", module.in_proj_bias is None),
                           ("add_bias_kv=False", module.bias_k is not None),
                           ("add_zero_attn=False", module.add_zero_attn)])
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
        """Attention of ``query (batch, queries, d_model)`` over ``key`` and ``value``
        (batch, keys, d_model), masks True = blocked -> output (batch, queries, d_model)
        and the weights of every head (batch, heads, queries, keys)."""
        d = self.d_model
        checks.query_key_value(query, key, value, d, d, d)
        B, m = query.shape[:2]          # m queries ask, n keys are looked at
        q = self._split(self.q_proj(query))  # X_q W_Q^(i), head i: (B, heads, m, d_k)
        k = self._split(self.k_proj(key))    # X_kv W_K^(i): (B, heads, n, d_k)
        v = self._split(self.v_proj(value))  # X_kv W_V^(i): (B, heads, n, d_k)
        dropout = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(  # head_i: (B, heads, m, d_k)
            q, k, v, key_padding_mask, causal, attn_mask, dropout)
        concat = heads.transpose(1, 2).reshape(B, m, d)  # Concat(head_i): (B, m, d)
        return self.out_proj(concat), weights            # Concat(...) W_O: (B, m, d)
