"""Attention over a source sentence: masked softmax, four score functions, the attention step.

A decoder state (the *query*, size d_q) scores every encoder output (the *keys*, size d_k),
the scores become weights by a softmax over the real (non-padding) keys, and the weights mix
the *values* (here the keys themselves) into one context vector per query::

    e_ij = score(q_i, k_j),   a_ij = exp(e_ij) / sum_{j' real} exp(e_ij'),   c_i = sum_j a_ij v_j

Shapes are batch-first: queries (batch, queries, d_q), keys (batch, keys, d_k), values
(batch, keys, d_v), scores and weights (batch, queries, keys), contexts (batch, queries, d_v).
Masks follow :class:`seqbook.translation.Batch`'s ``src_mask``: **True = a real key** that may
be attended to (the opposite of :mod:`seqbook.multihead`, which follows PyTorch's True = blocked).

The scores (Bahdanau et al. 2015, eq. 6 and appendix A; Luong et al. 2015, eq. 8):

- :class:`AdditiveScore`  ``v^T tanh(W q + U k + b)`` (Bahdanau): ``U k + b`` does not depend on
  the query, so it is computed once per sentence (:meth:`~AdditiveScore.prepare`), not per step;
- :class:`DotScore`       ``q^T k`` (Luong's *dot*; needs d_q = d_k);
- :class:`GeneralScore`   ``q^T W k`` (Luong's *general*; ``W k`` is prepared once per sentence);
- :class:`ConcatScore`    ``v^T tanh(W [q; k] + b)`` (Luong's *concat*): the same family of
  functions as the additive score, written with one matrix on the concatenation (splitting
  ``W`` into its query and key columns gives ``W_q q + W_k k``, which is how it is computed).

The translation model built on these (:class:`BidirectionalEncoder`, :class:`AttentionDecoder`,
:class:`AttentionSeq2Seq`) lives in :mod:`seqbook.attention_model` and can be imported from here
too; the alignment error rate is in :mod:`seqbook.alignment`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["masked_softmax", "AdditiveScore", "DotScore", "GeneralScore", "ConcatScore", "SCORES",
           "make_score", "attention"]


def _shape(x) -> str:
    return str(tuple(x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__


def _check_3d(x, name: str, expected: str, size: int | None = None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected {name} as a torch.Tensor of shape {expected}, got {_shape(x)}")
    if x.dim() != 3 or (size is not None and x.shape[-1] != size):
        raise ValueError(f"expected {name} of shape {expected}, got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"expected a floating-point {name}, got dtype {x.dtype}")
    return x


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"expected a positive integer {name}, got {value!r}")
    return value


def _check_key_mask(mask, scores_shape: tuple) -> torch.Tensor:
    """A (batch, keys) mask -> (batch, 1, keys); a 3-d mask must broadcast to the scores."""
    batch, queries, keys = scores_shape
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = f"dtype {mask.dtype}" if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"expected mask as a bool tensor (True = real key, e.g. Batch.src_mask), got {got}")
    if mask.dim() == 2 and tuple(mask.shape) == (batch, keys):
        return mask[:, None, :]
    if mask.dim() == 3 and all(m in (1, s) for m, s in zip(mask.shape, scores_shape)):
        return mask
    raise ValueError(f"expected mask of shape (batch, keys) = ({batch}, {keys}), or one that broadcasts to the "
                     f"scores' (batch, queries, keys) = {tuple(scores_shape)}, got {tuple(mask.shape)}")


def masked_softmax(scores: torch.Tensor,
                   mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dimension of ``scores`` (batch, queries, keys), counting
    only the keys where ``mask`` is True; masked keys get weight exactly 0 and each row
    sums to 1.

    ``mask``: bool, (batch, keys) or broadcastable to (batch, queries, keys);
    None = all real. A row with no real key has no softmax: it raises a ValueError
    (usually an empty sentence or a mask built the wrong way round)."""
    _check_3d(scores, "scores", "(batch, queries, keys)")
    if mask is None:
        return F.softmax(scores, dim=-1)
    mask = _check_key_mask(mask, tuple(scores.shape)).to(scores.device)
    if not bool(mask.any(dim=-1).all()):
        raise ValueError("expected at least one real key (mask True) in every row, "
                         "got a row with none: is the mask True at padding instead of "
                         "at real tokens?")
    return _masked_softmax(scores, mask)


def _masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """:func:`masked_softmax` without the checks (for a decoder that checked its mask once)."""
    weights = F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return weights.masked_fill(~mask, 0.0)  # exp(-inf) is already 0; this keeps it so under any kernel


class AdditiveScore(nn.Module):
    """Bahdanau's additive score ``e = v^T tanh(W q + U k + b)`` with W (a, d_q),
    U (a, d_k), v (a,), a = ``attention_size``."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.query_size = _positive_int(query_size, "query_size")
        self.key_size = _positive_int(key_size, "key_size")
        attention_size = _positive_int(attention_size, "attention_size")
        self.W = nn.Linear(query_size, attention_size, bias=False)
        # U's bias is the b inside the tanh
        self.U = nn.Linear(key_size, attention_size)
        self.v = nn.Linear(attention_size, 1, bias=False)

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        """``U k + b`` for every key: (batch, keys, d_k) -> (batch, keys, a),
        once per sentence."""
        d_k = self.key_size
        return self.U(_check_3d(keys, "keys", f"(batch, keys, {d_k})", d_k))

    def score(self, query: torch.Tensor, prepared: torch.Tensor) -> torch.Tensor:
        """(batch, queries, d_q) and prepared keys -> scores (batch, queries, keys)."""
        d_q = self.query_size
        _check_3d(query, "query", f"(batch, queries, {d_q})", d_q)
        # (batch, queries, 1, a) + (batch, 1, keys, a) -> (batch, queries, keys, a)
        hidden = torch.tanh(self.W(query)[:, :, None, :] + prepared[:, None, :, :])
        return self.v(hidden).squeeze(-1)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return self.score(query, self.prepare(keys))


class DotScore(nn.Module):
    """Luong's dot score ``e = q^T k`` (no parameters; query and key sizes must be equal)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int | None = None):
        super().__init__()
        if query_size != key_size:
            raise ValueError(f"expected equal query and key sizes for the dot score, got {query_size} and {key_size}")
        self.query_size = self.key_size = _positive_int(query_size, "query_size")

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        return _check_3d(keys, "keys", f"(batch, keys, {self.key_size})", self.key_size)

    def score(self, query: torch.Tensor, prepared: torch.Tensor) -> torch.Tensor:
        _check_3d(query, "query", f"(batch, queries, {self.query_size})", self.query_size)
        return query @ prepared.transpose(1, 2)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return self.score(query, self.prepare(keys))


class GeneralScore(nn.Module):
    """Luong's general score ``e = q^T W k`` with W (d_q, d_k); ``W k`` is prepared once per sentence."""

    def __init__(self, query_size: int, key_size: int, attention_size: int | None = None):
        super().__init__()
        self.query_size, self.key_size = _positive_int(query_size, "query_size"), _positive_int(key_size, "key_size")
        self.W = nn.Linear(key_size, query_size, bias=False)  # maps k to W k

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        """``W k`` for every key: (batch, keys, d_k) -> (batch, keys, d_q)."""
        return self.W(_check_3d(keys, "keys", f"(batch, keys, {self.key_size})", self.key_size))

    score = DotScore.score  # q . (W k)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return self.score(query, self.prepare(keys))


class ConcatScore(nn.Module):
    """Luong's concat score ``e = v^T tanh(W [q; k] + b)`` with W (a, d_q + d_k).

    ``W [q; k] = W_q q + W_k k`` for W's first d_q columns W_q and the rest W_k, so ``W_k k + b``
    is prepared once per sentence, as for the additive score, instead of multiplying the
    concatenation of every (query, key) pair (the same numbers; a test checks both)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.query_size, self.key_size = _positive_int(query_size, "query_size"), _positive_int(key_size, "key_size")
        self.W = nn.Linear(query_size + key_size, _positive_int(attention_size, "attention_size"))
        self.v = nn.Linear(attention_size, 1, bias=False)

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        """``W_k k + b`` for every key: (batch, keys, d_k) -> (batch, keys, a)."""
        _check_3d(keys, "keys", f"(batch, keys, {self.key_size})", self.key_size)
        return F.linear(keys, self.W.weight[:, self.query_size:], self.W.bias)

    def score(self, query: torch.Tensor, prepared: torch.Tensor) -> torch.Tensor:
        _check_3d(query, "query", f"(batch, queries, {self.query_size})", self.query_size)
        projected = F.linear(query, self.W.weight[:, :self.query_size])
        return self.v(torch.tanh(projected[:, :, None, :] + prepared[:, None, :, :])).squeeze(-1)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return self.score(query, self.prepare(keys))


SCORES = {"additive": AdditiveScore, "dot": DotScore, "general": GeneralScore, "concat": ConcatScore}


def make_score(name: str, query_size: int, key_size: int, attention_size: int | None = None) -> nn.Module:
    """The score module called ``name`` (``additive``, ``dot``, ``general`` or ``concat``);
    ``attention_size`` (the a of the additive and concat scores) defaults to ``query_size``."""
    if name not in SCORES:
        raise ValueError(f"expected score as one of {sorted(SCORES)}, got {name!r}")
    return SCORES[name](query_size, key_size, attention_size or query_size)


def attention(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
              mask: torch.Tensor | None, score: nn.Module,
              prepared: torch.Tensor | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Context vectors and weights: query (batch, queries, d_q), keys (batch, keys,
    d_k), values (batch, keys, d_v), mask (batch, keys) True at real keys -> context
    (batch, queries, d_v) and weights (batch, queries, keys). ``prepared``:
    ``score.prepare(keys)`` computed earlier (it is computed here when None)."""
    _check_3d(query, "query", "(batch, queries, d_q)")
    _check_3d(keys, "keys", "(batch, keys, d_k)")
    _check_3d(values, "values", "(batch, keys, d_v)")
    same_batch = query.shape[0] == keys.shape[0] == values.shape[0]
    if not same_batch or keys.shape[1] != values.shape[1]:
        raise ValueError("expected query (batch, queries, d_q), keys (batch, keys, "
                         "d_k) and values (batch, keys, d_v) with the same batch and "
                         f"the same keys, got {tuple(query.shape)}, "
                         f"{tuple(keys.shape)} and {tuple(values.shape)}")
    if prepared is None:
        prepared = score.prepare(keys)
    weights = masked_softmax(score.score(query, prepared), mask)
    return weights @ values, weights


_MODEL_NAMES = ("BidirectionalEncoder", "AttentionState", "AttentionDecoder", "AttentionSeq2Seq")


def __getattr__(name: str):
    """``from seqbook.attention import AttentionSeq2Seq`` works: the model classes are loaded from
    :mod:`seqbook.attention_model` on first use (importing it here at the top would be circular)."""
    if name in _MODEL_NAMES:
        from . import attention_model
        return getattr(attention_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
