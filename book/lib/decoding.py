"""Decoding a sequence from any model that scores the next token: greedy search and beam search.

Both take a function ``next_log_probs(prefixes) -> log_probs``: ``prefixes`` is a LongTensor
(k, t) of k prefixes of the same length, each starting with ``<bos>``, and the answer is a
(k, |V|) tensor whose row i holds ``log p(next token | prefix i)``. Chapter 4's encoder-decoder,
chapter 5's attention model and chapter 6's Transformer all provide one
(``model.next_log_probs_fn(src_ids)``), and so can a table in a test: the search does not care.

``max_len`` counts generated tokens, ``<eos>`` included; a hypothesis that reaches it without
``<eos>`` is returned unfinished (``finished=False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from . import checks

NextLogProbs = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Hypothesis:
    """A decoded sequence: ``tokens`` without ``<bos>`` (ending with ``<eos>`` when ``finished``),
    ``log_prob`` the sum of its tokens' log-probabilities, ``score`` that sum after the length
    penalty (the quantity beam search ranks by)."""

    tokens: list[int]
    log_prob: float
    score: float
    finished: bool = True


def gnmt_penalty(length: int, alpha: float) -> float:
    """GNMT's length penalty ``((5 + length) / 6) ** alpha`` (Wu et al. 2016, section 7).

    A hypothesis's score is ``log_prob / gnmt_penalty(len(tokens), alpha)``; ``alpha = 0`` is
    the plain log-probability, which favours short outputs; larger ``alpha`` favours longer ones."""
    return ((5 + length) / 6) ** alpha


def _scores(next_log_probs: NextLogProbs, prefixes: list[list[int]], eos: int) -> torch.Tensor:
    """Call ``next_log_probs`` and check its answer; returns (k, |V|) float64 on the CPU."""
    k = len(prefixes)
    out = next_log_probs(torch.tensor(prefixes, dtype=torch.int64))
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"expected next_log_probs to return a tensor of shape ({k}, |V|), got {type(out).__name__}")
    if out.dim() != 2 or out.shape[0] != k:
        raise ValueError(f"expected next_log_probs to return shape ({k}, |V|) for {k} prefixes of length "
                         f"{len(prefixes[0])}, got {tuple(out.shape)}")
    if out.shape[1] <= eos:
        raise ValueError(f"expected next_log_probs to score at least {eos + 1} tokens (eos = {eos}), "
                         f"got {out.shape[1]}")
    out = out.detach().to("cpu", torch.float64)
    if torch.isnan(out).any() or (out > 1e-6).any():
        raise ValueError("expected log-probabilities (<= 0, no NaN) from next_log_probs: did it return "
                         "logits? apply log_softmax")
    return out


def _check_search(beam_size, max_len, length_penalty) -> float:
    """Beam search's settings, checked; returns the length penalty alpha."""
    checks.positive_ints(beam_size=beam_size, max_len=max_len)
    return checks.number(length_penalty, "length_penalty (GNMT's alpha)", at_least=0)


def greedy(next_log_probs: NextLogProbs, bos: int, eos: int, max_len: int) -> Hypothesis:
    """The most likely next token at every step, until ``<eos>`` or ``max_len`` tokens."""
    checks.positive_int(max_len, "max_len")
    tokens: list[int] = []
    total = 0.0
    while len(tokens) < max_len:
        log_probs = _scores(next_log_probs, [[bos] + tokens], eos)[0]
        token = int(log_probs.argmax())
        total += float(log_probs[token])
        tokens.append(token)
        if token == eos:
            break
    return Hypothesis(tokens, total, total, finished=tokens[-1] == eos)


def beam_search(next_log_probs: NextLogProbs, bos: int, eos: int, beam_size: int,
                max_len: int, length_penalty: float = 0.0) -> list[Hypothesis]:
    """Up to ``beam_size`` hypotheses, best score first.

    Every step extends each live hypothesis by every token and keeps the ``beam_size``
    best extensions (by log-probability: they all have the same length, so the length
    penalty does not change their order). An extension ending in ``<eos>`` is set aside
    as finished, so the beam then carries fewer live hypotheses. The search stops when
    nothing is live, at ``max_len``, or when ``beam_size`` finished hypotheses all score
    at least as well as any live one could (a live hypothesis's log-probability can only
    fall, so ``log_prob / penalty(max_len)`` bounds its future score).
    ``length_penalty`` is GNMT's alpha (see :func:`gnmt_penalty`); beam_size=1 is
    greedy search.
    """
    alpha = _check_search(beam_size, max_len, length_penalty)
    live = [Hypothesis([], 0.0, 0.0, finished=False)]
    finished: list[Hypothesis] = []
    for step in range(1, max_len + 1):
        log_probs = _scores(next_log_probs, [[bos] + h.tokens for h in live], eos)
        so_far = torch.tensor([h.log_prob for h in live], dtype=torch.float64)
        totals = so_far[:, None] + log_probs  # (live, vocab)
        vocab = totals.shape[1]
        order = torch.sort(totals.flatten(), descending=True, stable=True).indices
        best = order[:beam_size].tolist()
        parents, live = live, []
        for index in best:
            parent, token = divmod(index, vocab)
            tokens = parents[parent].tokens + [token]
            total = float(totals[parent, token])
            score = total / gnmt_penalty(step, alpha)
            hyp = Hypothesis(tokens, total, score, finished=token == eos)
            (finished if token == eos else live).append(hyp)
        if not live:
            break
        if len(finished) >= beam_size:
            worst_kept = sorted(h.score for h in finished)[-beam_size]
            best_live = max(h.log_prob for h in live) / gnmt_penalty(max_len, alpha)
            if worst_kept >= best_live:
                break
    else:  # max_len reached: the live hypotheses end here unfinished
        finished += live
    # a stable sort: equal scores keep the order they were found in
    finished.sort(key=lambda h: -h.score)
    return finished[:beam_size]
