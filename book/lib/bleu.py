"""BLEU (Papineni et al. 2002): how many of a translation's n-grams appear in a reference.

For n = 1..4, the *modified* n-gram precision p_n counts each hypothesis n-gram at most as often
as it occurs in the reference (in the most generous reference, when there are several), so
``the the the the`` cannot score by repeating a common word. Precision alone rewards short
outputs, so the *brevity penalty* ``BP = exp(1 - r / c)`` (1 when c >= r) scales the score down
when the hypotheses' total length c is below the references' r. Then

    BLEU = BP * exp(mean over n of log p_n),   reported on a 0..100 scale.

At corpus level (the way the paper defines it and the way it is used) the clipped counts, the
n-gram totals and the lengths are summed over all sentences *before* dividing: it is not the
mean of sentence scores. A precision of zero makes BLEU zero (no smoothing). Tokens are given
as lists of strings; the score depends on the tokenisation, so compare scores only under the same one.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from . import checks


def ngrams(tokens: Sequence[str], n: int) -> Counter:
    """How often each n-gram (a tuple of n tokens) occurs in ``tokens``."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def clipped_matches(hypothesis: Sequence[str], references: Sequence[Sequence[str]], n: int) -> tuple[int, int]:
    """(matches, total) for the modified n-gram precision of one hypothesis: each n-gram counts at
    most as often as in the reference where it is most frequent; total = the hypothesis's n-grams."""
    counts = ngrams(hypothesis, n)
    most = Counter()
    for reference in references:
        most |= ngrams(reference, n)  # | keeps the larger count of each n-gram
    matches = sum(min(c, most[g]) for g, c in counts.items())
    return matches, sum(counts.values())


def closest_length(hyp_len: int, ref_lens: Sequence[int]) -> int:
    """The reference length nearest the hypothesis length (the shorter one on a tie)."""
    return min(ref_lens, key=lambda r: (abs(r - hyp_len), r))


def brevity_penalty(hyp_len: int, ref_len: int) -> float:
    """``exp(1 - ref_len / hyp_len)`` when the hypotheses are shorter than the references, else 1."""
    if hyp_len >= ref_len:
        return 1.0
    return math.exp(1 - ref_len / hyp_len) if hyp_len > 0 else 0.0


@dataclass
class BleuScore:
    """``score`` on 0..100; ``precisions`` the modified n-gram precisions in percent (n = 1..max_n)."""

    score: float
    precisions: list[float]
    brevity_penalty: float
    hyp_len: int
    ref_len: int

    def __float__(self) -> float:
        return self.score

    def __str__(self) -> str:
        ps = "/".join(f"{p:.1f}" for p in self.precisions)
        return (f"BLEU = {self.score:.2f} {ps} (BP = {self.brevity_penalty:.3f}, "
                f"hyp_len = {self.hyp_len}, ref_len = {self.ref_len})")


def _as_references(refs, index: int) -> list[Sequence[str]]:
    """One reference (a token list) or several (a list of token lists) -> a list of token lists."""
    if isinstance(refs, str):
        raise TypeError(f"expected reference {index} as a list of tokens (e.g. sentence.split()), got a str")
    refs = list(refs)
    if not refs or isinstance(refs[0], str):
        refs = [refs]
    for r in refs:
        if isinstance(r, str) or not all(isinstance(t, str) for t in r):
            raise TypeError(f"expected reference {index} as a list of str tokens, got {r!r:.60}")
    return refs


def corpus_bleu(hypotheses: Sequence[Sequence[str]], references: Sequence, max_n: int = 4) -> BleuScore:
    """Corpus BLEU of ``hypotheses`` (token lists) against ``references``: for each hypothesis one
    reference (a token list) or several (a list of token lists)."""
    checks.positive_int(max_n, "max_n")
    if len(hypotheses) != len(references):
        raise ValueError(f"expected one reference entry per hypothesis, got {len(hypotheses)} hypotheses "
                         f"and {len(references)} references")
    matches, totals = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for index, (hyp, refs) in enumerate(zip(hypotheses, references)):
        if isinstance(hyp, str) or not all(isinstance(t, str) for t in hyp):
            raise TypeError(f"expected hypothesis {index} as a list of str tokens (e.g. sentence.split()), "
                            f"got {hyp!r:.60}")
        refs = _as_references(refs, index)
        hyp_len += len(hyp)
        ref_len += closest_length(len(hyp), [len(r) for r in refs])
        for n in range(1, max_n + 1):
            m, t = clipped_matches(hyp, refs, n)
            matches[n - 1] += m
            totals[n - 1] += t
    precisions = [100.0 * m / t if t else 0.0 for m, t in zip(matches, totals)]
    bp = brevity_penalty(hyp_len, ref_len)
    if min(matches) == 0:
        return BleuScore(0.0, precisions, bp, hyp_len, ref_len)
    log_mean = sum(math.log(m / t) for m, t in zip(matches, totals)) / max_n
    return BleuScore(100.0 * bp * math.exp(log_mean), precisions, bp, hyp_len, ref_len)


def sentence_bleu(hypothesis: Sequence[str], references, max_n: int = 4) -> BleuScore:
    """BLEU of a single sentence (corpus BLEU of a one-sentence corpus; often 0 for short
    sentences, which have no matching 4-gram: prefer corpus BLEU to compare systems)."""
    return corpus_bleu([hypothesis], [references], max_n)


def _sentence_stats(hypotheses, references, max_n: int):
    """One row per sentence: clipped matches (max_n), n-gram totals (max_n), hypothesis length,
    closest reference length. Summing rows and scoring the sums gives corpus BLEU."""
    import numpy as np

    stats = np.zeros((len(hypotheses), 2 * max_n + 2))
    for row, (hyp, refs) in enumerate(zip(hypotheses, references)):
        refs = _as_references(refs, row)
        for n in range(1, max_n + 1):
            stats[row, n - 1], stats[row, max_n + n - 1] = clipped_matches(hyp, refs, n)
        stats[row, -2:] = len(hyp), closest_length(len(hyp), [len(r) for r in refs])
    return stats


def _bleu_of_sums(sums, max_n: int):
    """Corpus BLEU (0..100) of each row of summed sentence statistics, shape (samples, 2 max_n + 2)."""
    import numpy as np

    matches, totals, hyp_len, ref_len = sums[:, :max_n], sums[:, max_n:2 * max_n], sums[:, -2], sums[:, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_mean = np.log(matches / totals).mean(axis=1)
        bp = np.where(hyp_len >= ref_len, 1.0, np.exp(1 - ref_len / np.maximum(hyp_len, 1)))
        return np.where((matches > 0).all(axis=1), 100 * bp * np.exp(log_mean), 0.0)


def bootstrap_interval(hypotheses: Sequence[Sequence[str]], references: Sequence, samples: int = 1000,
                       level: float = 0.95, seed: int = 0, max_n: int = 4) -> tuple[float, float]:
    """A percentile bootstrap interval for corpus BLEU (Koehn 2004): draw ``samples`` test sets
    of the same size from the sentences, with replacement (seeded), score each, and return the
    range that holds the central ``level`` share of the scores.

    It says how much the score depends on which sentences happened to be in the test set: two
    systems whose intervals overlap widely are not told apart by that test set."""
    import numpy as np

    checks.positive_int(samples, "samples")
    level = checks.number(level, "level", above=0, below=1)
    corpus_bleu(hypotheses, references, max_n)                 # checks the arguments
    stats = _sentence_stats(hypotheses, references, max_n)
    rng = np.random.default_rng(seed)
    scores = _bleu_of_sums(stats[rng.integers(0, len(hypotheses), (samples, len(hypotheses)))].sum(axis=1), max_n)
    tail = (1 - level) / 2
    return float(np.quantile(scores, tail)), float(np.quantile(scores, 1 - tail))


def paired_bootstrap(hypotheses_a: Sequence[Sequence[str]], hypotheses_b: Sequence[Sequence[str]],
                     references: Sequence, samples: int = 1000, level: float = 0.95, seed: int = 0,
                     max_n: int = 4) -> tuple[float, float]:
    """A paired bootstrap interval (Koehn 2004) for the difference BLEU(a) - BLEU(b) of two systems
    that translated the same sentences: each of ``samples`` resampled test sets (seeded, with
    replacement) takes the *same* sentences for both systems, and the interval holds the central
    ``level`` share of the differences.

    Pairing removes the part of the spread that comes from which sentences were drawn, which
    both systems share, so it can tell two systems apart when their own intervals overlap. An
    interval that contains 0 says that this test set does not show which system is better."""
    import numpy as np

    checks.positive_int(samples, "samples")
    level = checks.number(level, "level", above=0, below=1)
    corpus_bleu(hypotheses_a, references, max_n)               # checks the arguments
    corpus_bleu(hypotheses_b, references, max_n)
    stats_a = _sentence_stats(hypotheses_a, references, max_n)
    stats_b = _sentence_stats(hypotheses_b, references, max_n)
    rows = np.random.default_rng(seed).integers(0, len(references), (samples, len(references)))
    diffs = _bleu_of_sums(stats_a[rows].sum(axis=1), max_n) - _bleu_of_sums(stats_b[rows].sum(axis=1), max_n)
    tail = (1 - level) / 2
    return float(np.quantile(diffs, tail)), float(np.quantile(diffs, 1 - tail))
