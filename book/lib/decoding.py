"""Generating a sequence from any model that scores the next token: greedy search, beam search
and sampling.

All three take a function ``next_log_probs(prefixes) -> log_probs``
(:class:`seqbook.interfaces.NextLogProbs`): ``prefixes`` is a LongTensor (k, t) of k prefixes of
the same length, and the answer is a (k, |V|) tensor whose row i holds ``log p(next token |
prefix i)``. Chapter 1's n-gram models and chapter 2's recurrent language model provide one
(``model.next_log_probs_fn()``), and so do chapter 4's encoder-decoder, chapter 5's attention
model and chapter 6's Transformer for a source sentence (``model.next_log_probs_fn(src_ids)``,
prefixes starting with ``<bos>``), and so can a table in a test: the search does not care.

For greedy and beam search ``max_len`` counts generated tokens, ``<eos>`` included; a hypothesis
that reaches it without ``<eos>`` is returned unfinished (``finished=False``). :func:`sample`
draws a fixed number of tokens, each from the next-token distribution reshaped by a
temperature (0: always the most likely token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from . import checks
from .interfaces import NextLogProbs
from .seeding import generator, numpy_rng


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


def _scores(next_log_probs: NextLogProbs, prefixes: list[list[int]], eos: int | None = None) -> torch.Tensor:
    """Call ``next_log_probs`` and check its answer: (k, |V|) log-probabilities on the CPU, in the
    dtype the model gave (``|V| > eos`` when ``eos`` is given)."""
    k = len(prefixes)
    out = next_log_probs(torch.tensor(prefixes, dtype=torch.int64))
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"expected next_log_probs to return a tensor of shape ({k}, |V|), got {type(out).__name__}")
    if out.dim() != 2 or out.shape[0] != k:
        raise ValueError(f"expected next_log_probs to return shape ({k}, |V|) for {k} prefixes of length "
                         f"{len(prefixes[0])}, got {tuple(out.shape)}")
    if eos is not None and out.shape[1] <= eos:
        raise ValueError(f"expected next_log_probs to score at least {eos + 1} tokens (eos = {eos}), "
                         f"got {out.shape[1]}")
    out = out.detach().cpu()
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
        log_probs = _scores(next_log_probs, [[bos] + tokens], eos)[0].double()
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
    as finished, so the beam carries fewer live hypotheses for that step; the next step
    again keeps ``beam_size`` extensions of the live ones. The search stops when
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
        prefixes = [[bos] + h.tokens for h in live]
        # the model's next-token log-probabilities after each prefix, checked for shape
        log_probs = _scores(next_log_probs, prefixes, eos).double()  # (live, vocab)
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
            if hyp.finished:  # set aside: the beam goes on with the others
                finished.append(hyp)
            else:
                live.append(hyp)
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


# -- sampling ----------------------------------------------------------------------------------
Draw = Callable[[torch.Tensor], int]  # probabilities (|V|,) -> the id of the token drawn


def torch_draw(seed: int = 0) -> Draw:
    """Draws with ``torch.multinomial`` from a CPU generator seeded with ``seed``: the same seed
    gives the same tokens on any device (the probabilities are on the CPU)."""
    gen = generator(seed)
    return lambda probs: int(torch.multinomial(probs, 1, generator=gen))


def numpy_draw(seed: int = 0) -> Draw:
    """Draws with NumPy's ``Generator.choice`` (the inverse of the cumulative distribution at a
    uniform number), seeded with ``seed``; chapter 1's n-gram models sample this way."""
    rng = numpy_rng(seed)
    return lambda probs: int(rng.choice(len(probs), p=probs.double().numpy()))


def sample(next_log_probs: NextLogProbs, prefix: Sequence[int], length: int, temperature: float = 1.0,
           seed: int = 0, draw: Draw | None = None) -> list[int]:
    """``length`` token ids drawn one at a time after ``prefix`` (a list of ids, possibly empty).

    Each comes from ``softmax(log p / temperature)``: temperature 1 is the model's own
    distribution, below 1 sharper (towards the most likely token), above 1 flatter (towards
    uniform), and ``temperature=0`` takes the most likely token every time (greedy, with no
    ``<eos>`` to stop at). The random choice is ``draw(probs)``: by default :func:`torch_draw`
    from ``seed``."""
    checks.integer(length, "length", 0)
    temperature = checks.number(temperature, "a temperature", at_least=0)
    draw = draw or torch_draw(seed)
    tokens = list(prefix)
    for _ in range(length):
        log_probs = _scores(next_log_probs, [tokens])[0]        # (|V|,)
        if temperature == 0:
            tokens.append(int(log_probs.argmax()))
        else:
            tokens.append(draw(torch.softmax(log_probs / temperature, dim=-1)))
    return tokens[len(prefix):]
