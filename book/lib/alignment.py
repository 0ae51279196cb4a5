"""Word alignments read off attention weights, and the alignment error rate (AER).

A word alignment is a set of *links* ``(source index, target index)``, the format of
:class:`seqbook.translation.SentencePair`'s ``alignment``. :func:`argmax_alignment` links each
target word to the source word it attends to most (as Luong et al. 2015, section 5.4, do to
score their attention). The alignment error rate (Och & Ney 2003) compares a
predicted alignment A with gold *sure* links S and *possible* links P (S is a subset of P)::

    AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)

0 is perfect, 1 shares no link. With only sure links (P = S, as for the book's synthetic corpus)
it is ``1 - 2 |A ∩ S| / (|A| + |S|)``, one minus the F1 of A against S. Over a corpus the
counts are summed over sentences before dividing (:func:`corpus_alignment_error_rate`).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch

Links = set[tuple[int, int]]


def argmax_alignment(weights) -> list[tuple[int, int]]:
    """``weights`` (tgt_len, src_len), e.g. ``model.attention_for(src, tgt)`` -> one link
    ``(argmax_j weights[i, j], i)`` per target word i, as (source index, target index)."""
    weights = torch.as_tensor(weights)
    if weights.dim() != 2 or weights.shape[1] == 0:
        raise ValueError(f"expected attention weights of shape (tgt_len, src_len) with src_len >= 1, "
                         f"got {tuple(weights.shape)}")
    return [(int(j), i) for i, j in enumerate(weights.argmax(dim=1).tolist())]


def _links(links, name: str) -> Links:
    """A set of (source, target) index pairs; a 2-d weight matrix becomes its argmax alignment."""
    if isinstance(links, torch.Tensor) and links.is_floating_point():
        links = argmax_alignment(links)
    try:
        out = {(int(s), int(t)) for s, t in links}
    except (TypeError, ValueError):
        raise TypeError(f"expected {name} as (source index, target index) pairs or a (tgt_len, src_len) "
                        f"weight tensor, got {type(links).__name__}") from None
    if any(s < 0 or t < 0 for s, t in out):
        raise ValueError(f"expected non-negative indices in {name}, got {sorted(out)[:5]}...")
    return out


def _counts(predicted, sure, possible) -> tuple[int, int, int, int]:
    """|A ∩ S|, |A ∩ P|, |A|, |S| for one sentence."""
    a, s = _links(predicted, "predicted"), _links(sure, "sure")
    p = s if possible is None else _links(possible, "possible")
    if not s <= p:
        raise ValueError(f"expected the sure links to be a subset of the possible ones, got sure links "
                         f"{sorted(s - p)[:5]} missing from possible")
    return len(a & s), len(a & p), len(a), len(s)


def _rate(a_s: int, a_p: int, a: int, s: int) -> float:
    if a + s == 0:
        raise ValueError("expected at least one predicted or sure link: AER is undefined for two empty alignments")
    return 1.0 - (a_s + a_p) / (a + s)


def alignment_error_rate(predicted, sure, possible=None) -> float:
    """AER of one sentence's predicted links (or a (tgt_len, src_len) weight tensor, read by
    :func:`argmax_alignment`) against gold ``sure`` links and optional ``possible`` links
    (default: the sure ones). Links are (source index, target index) pairs."""
    return _rate(*_counts(predicted, sure, possible))


def corpus_alignment_error_rate(predicted: Sequence, sure: Sequence, possible: Sequence | None = None) -> float:
    """AER over several sentences, with the counts summed before dividing (one entry per sentence
    in each list; ``possible`` may be None)."""
    if len(predicted) != len(sure) or (possible is not None and len(possible) != len(sure)):
        raise ValueError(f"expected one predicted, sure (and possible) alignment per sentence, got "
                         f"{len(predicted)} predicted and {len(sure)} sure")
    if len(sure) == 0:
        raise ValueError("expected at least one sentence, got none")
    possibles: Iterable = possible if possible is not None else [None] * len(sure)
    totals = [sum(c) for c in zip(*(_counts(a, s, p) for a, s, p in zip(predicted, sure, possibles)))]
    return _rate(*totals)
