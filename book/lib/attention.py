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

Every score module is a :class:`Score`: ``prepare(keys)`` once per sentence, ``score(query,
prepared)`` at every step, and ``forward(query, keys)`` for both at once (the one that checks its
inputs). The translation model built on them (``BidirectionalEncoder``, ``AttentionDecoder``,
``AttentionSeq2Seq``) lives in :mod:`seqbook.attention_model`; the alignment error rate in
:mod:`seqbook.alignment`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import checks

__all__ = ["masked_softmax", "Score", "AdditiveScore", "DotScore", "GeneralScore", "ConcatScore", "SCORES",
           "make_score", "attention"]


def masked_softmax(scores: torch.Tensor,
                   mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dimension of ``scores`` (batch, queries, keys), counting
    only the keys where ``mask`` is True; masked keys get weight exactly 0 and each row
    sums to 1.

    ``mask``: bool, (batch, keys) or broadcastable to (batch, queries, keys);
    None = all real. A row with no real key has no softmax: it raises a ValueError
    (usually an empty sentence or a mask built the wrong way round)."""
    mask = checks.scores_and_key_mask(scores, mask)   # (batch, 1 or queries, keys)
    if mask is None:
        return F.softmax(scores, dim=-1)
    weights = F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # e^-inf = 0
    return weights.masked_fill(~mask, 0.0)  # and kept exactly 0, whatever the kernel


class Score(nn.Module):
    """What the four scores share: the sizes d_q and d_k, and ``forward(query, keys) ->
    scores (batch, queries, keys)`` for ``query (batch, queries, d_q)`` and ``keys (batch,
    keys, d_k)``, which checks them and runs ``score(query, prepare(keys))``. A subclass
    writes ``prepare`` (the part that depends on the keys only, computed once per sentence)
    and ``score``."""

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.query_size, self.key_size = checks.positive_ints(query_size=query_size, key_size=key_size)

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        return keys

    def score(self, query: torch.Tensor, prepared: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        checks.query_key_value(query, keys, None, self.query_size, self.key_size)
        return self.score(query, self.prepare(keys))


class AdditiveScore(Score):
    """Bahdanau's additive score ``e = v^T tanh(W q + U k + b)`` with W (a, d_q),
    U (a, d_k), v (a,), a = ``attention_size``. In chapter 5's notation a = d_a and
    d_q = d_h: W is the text's (d_a x d_h) matrix."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__(query_size, key_size)
        checks.positive_int(attention_size, "attention_size")
        self.W = nn.Linear(query_size, attention_size, bias=False)
        self.U = nn.Linear(key_size, attention_size)  # its bias is the b in the tanh
        self.v = nn.Linear(attention_size, 1, bias=False)

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        """``U k + b`` for every key: (batch, keys, d_k) -> (batch, keys, a),
        once per sentence."""
        return self.U(keys)

    def score(self, query: torch.Tensor, prepared: torch.Tensor) -> torch.Tensor:
        """(batch, queries, d_q) and prepared keys -> scores (batch, queries, keys)."""
        # (batch, queries, 1, a) + (batch, 1, keys, a) -> (batch, queries, keys, a)
        hidden = torch.tanh(self.W(query)[:, :, None, :] + prepared[:, None, :, :])
        return self.v(hidden).squeeze(-1)


class DotScore(Score):
    """Luong's dot score ``e = q^T k`` (no parameters; query and key sizes must be equal)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int | None = None):
        super().__init__(query_size, key_size)
        if query_size != key_size:
            raise ValueError(f"expected equal query and key sizes for the dot score, got {query_size} and {key_size}")

    def score(self, query: torch.Tensor, prepared: torch.Tensor) -> torch.Tensor:
        return query @ prepared.transpose(1, 2)  # (batch, queries, d) @ (batch, d, keys)


class GeneralScore(Score):
    """Luong's general score ``e = q^T W k`` with W (d_q, d_k); ``W k`` is prepared once per sentence."""

    def __init__(self, query_size: int, key_size: int, attention_size: int | None = None):
        super().__init__(query_size, key_size)
        self.W = nn.Linear(key_size, query_size, bias=False)  # maps k to W k

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        """``W k`` for every key: (batch, keys, d_k) -> (batch, keys, d_q)."""
        return self.W(keys)

    score = DotScore.score  # q . (W k)


class ConcatScore(Score):
    """Luong's concat score ``e = v^T tanh(W [q; k] + b)`` with W (a, d_q + d_k).

    ``W [q; k] = W_q q + W_k k`` for W's first d_q columns W_q and the rest W_k, so ``W_k k + b``
    is prepared once per sentence, as for the additive score, instead of multiplying the
    concatenation of every (query, key) pair (the same numbers; a test checks both)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__(query_size, key_size)
        self.W = nn.Linear(query_size + key_size, checks.positive_int(attention_size, "attention_size"))
        self.v = nn.Linear(attention_size, 1, bias=False)

    def prepare(self, keys: torch.Tensor) -> torch.Tensor:
        """``W_k k + b`` for every key: (batch, keys, d_k) -> (batch, keys, a)."""
        return F.linear(keys, self.W.weight[:, self.query_size:], self.W.bias)

    def score(self, query: torch.Tensor, prepared: torch.Tensor) -> torch.Tensor:
        projected = F.linear(query, self.W.weight[:, :self.query_size])  # W_q q: (batch, queries, a)
        return self.v(torch.tanh(projected[:, :, None, :] + prepared[:, None, :, :])).squeeze(-1)


SCORES = {"additive": AdditiveScore, "dot": DotScore, "general": GeneralScore, "concat": ConcatScore}


def make_score(name: str, query_size: int, key_size: int, attention_size: int | None = None) -> Score:
    """The score module called ``name`` (``additive``, ``dot``, ``general`` or ``concat``);
    ``attention_size`` (the a of the additive and concat scores) defaults to ``query_size``."""
    return SCORES[checks.one_of(name, SCORES, "score")](query_size, key_size, attention_size or query_size)


def attention(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
              mask: torch.Tensor | None, score: Score,
              prepared: torch.Tensor | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Context vectors and weights: query (batch, queries, d_q), keys (batch, keys,
    d_k), values (batch, keys, d_v), mask (batch, keys) True at real keys -> context
    (batch, queries, d_v) and weights (batch, queries, keys). ``prepared``:
    ``score.prepare(keys)`` computed earlier (it is computed here when None)."""
    checks.query_key_value(query, keys, values, score.query_size, score.key_size)
    if prepared is None:
        prepared = score.prepare(keys)
    scores = score.score(query, prepared)  # e_ij: (batch, queries, keys)
    weights = masked_softmax(scores, mask)  # a_ij: (batch, queries, keys)
    return weights @ values, weights       # c_i = sum_j a_ij v_j: (batch, queries, d_v)
