"""n-gram language models: counting, add-alpha smoothing, perplexity and sampling.

An order-``n`` model makes the Markov assumption that a token depends only on the
``n - 1`` tokens before it, and estimates ``p(token | context)`` by counting.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

import numpy as np
import torch

from . import checks
from .decoding import numpy_draw, sample
from .interfaces import NextLogProbs
from .seeding import generator


class _Boundary:
    """Pads contexts at the start of a sequence; never a token the model predicts."""

    def __repr__(self) -> str:
        return "<s>"


BOS = _Boundary()


class NGramLM:
    """An order-``n`` language model over any hashable tokens (ids, characters, words).

    ``p(w | c) = (count(c, w) + alpha) / (count(c) + alpha * |V|)``. With ``alpha > 0`` every
    context, seen or not, gets a distribution that sums to 1; with ``alpha = 0`` (maximum
    likelihood) an unseen context falls back to the uniform distribution.
    """

    def __init__(self, n: int, alpha: float = 1.0):
        self.n = checks.integer(n, "order n", 1)
        self.alpha = checks.number(alpha, "a smoothing constant alpha", at_least=0)
        self.vocab: list[Hashable] = []
        self._index: dict[Hashable, int] = {}
        self._next: dict[tuple, Counter] = {}
        self._totals: dict[tuple, int] = {}

    def __repr__(self) -> str:
        fitted = f", |V|={len(self.vocab)}, {len(self._next)} contexts seen" if self.vocab else ", not fitted"
        return f"NGramLM(n={self.n}, alpha={self.alpha:g}{fitted})"

    # -- fitting ---------------------------------------------------------------------------
    def _padded(self, tokens: Sequence) -> list:
        return [BOS] * (self.n - 1) + list(tokens)

    def fit(self, tokens: Iterable[Hashable], vocab: Iterable[Hashable] | None = None) -> "NGramLM":
        """Count every n-gram of ``tokens``. The vocabulary is the tokens seen plus ``vocab``."""
        tokens = list(tokens)
        if not tokens:
            raise ValueError("expected a non-empty sequence of tokens to fit on")
        self.vocab = list(dict.fromkeys(list(vocab if vocab is not None else []) + tokens))
        self._index = {t: i for i, t in enumerate(self.vocab)}
        padded = self._padded(tokens)
        ngrams = _ngram_counts(padded, self.n)
        self._next, self._totals = {}, {}
        for gram, count in ngrams.items():
            ctx = gram[:-1]
            self._next.setdefault(ctx, Counter())[gram[-1]] = count
            self._totals[ctx] = self._totals.get(ctx, 0) + count
        return self

    def with_alpha(self, alpha: float) -> "NGramLM":
        """The same counts with another smoothing constant (counting is the slow part; alpha
        only enters when probabilities are read off). The counts are shared, not copied."""
        other = NGramLM(self.n, alpha)
        other.vocab, other._index, other._next, other._totals = self.vocab, self._index, self._next, self._totals
        return other

    def _require_fitted(self) -> None:
        if not self.vocab:
            raise RuntimeError("this NGramLM is not fitted yet: call .fit(tokens) first")

    def _context(self, context: Sequence) -> tuple:
        if isinstance(context, str) and not all(isinstance(t, str) and len(t) == 1 for t in self.vocab):
            context = (context,)  # a single word given as the context
        context = tuple(context)
        if self.n == 1:
            return ()
        return tuple(self._padded(context)[-(self.n - 1):])

    def _check_token(self, token) -> None:
        if token not in self._index:
            preview = ", ".join(repr(t) for t in self.vocab[:10])
            raise ValueError(f"token {token!r} is not in the model's vocabulary of {len(self.vocab)} tokens "
                             f"({preview}{', ...' if len(self.vocab) > 10 else ''}); "
                             "pass vocab=... to fit() to include it")

    def context_count(self, context: Sequence = ()) -> int:
        """How many times the last n-1 tokens of ``context`` occurred as a context in training
        (0 means the model has only smoothing to go on there)."""
        self._require_fitted()
        return self._totals.get(self._context(context), 0)

    # -- probabilities ----------------------------------------------------------------------
    def prob(self, token: Hashable, context: Sequence = ()) -> float:
        """p(token | last n-1 tokens of context); a short context is padded with ``<s>``."""
        self._require_fitted()
        self._check_token(token)
        ctx = self._context(context)
        total = self._totals.get(ctx, 0)
        if total == 0 and self.alpha == 0:
            return 1 / len(self.vocab)
        return (self._next.get(ctx, {}).get(token, 0) + self.alpha) / (total + self.alpha * len(self.vocab))

    def log_prob(self, token: Hashable, context: Sequence = ()) -> float:
        """Natural log of :meth:`prob` (``-inf`` for an unseen n-gram when ``alpha = 0``)."""
        p = self.prob(token, context)
        return math.log(p) if p > 0 else -math.inf

    def distribution(self, context: Sequence = ()) -> np.ndarray:
        """p(. | context) over ``self.vocab`` as an array that sums to 1."""
        self._require_fitted()
        ctx = self._context(context)
        total = self._totals.get(ctx, 0)
        if total == 0 and self.alpha == 0:
            return np.full(len(self.vocab), 1 / len(self.vocab))
        counts = np.full(len(self.vocab), self.alpha)
        for tok, c in self._next.get(ctx, {}).items():
            counts[self._index[tok]] += c
        return counts / counts.sum()

    def token_log_probs(self, tokens: Sequence[Hashable], temperature: float = 1.0) -> np.ndarray:
        """ln p(x_t | x_{t-n+1..t-1}) for every position, the first ones padded with ``<s>``.

        With ``temperature != 1`` each p(. | context) is first reshaped by
        :func:`apply_temperature`, so that one can score the distribution one samples from."""
        self._require_fitted()
        tokens = list(tokens)
        if not tokens:
            raise ValueError("expected a non-empty sequence of tokens to score")
        for t in set(tokens):
            self._check_token(t)
        _check_temperature(temperature)
        padded = self._padded(tokens)
        if temperature != 1:
            return self._tempered_log_probs(tokens, padded, temperature)
        V, a = len(self.vocab), self.alpha
        out = np.empty(len(tokens))
        for i, tok in enumerate(tokens):
            ctx = tuple(padded[i:i + self.n - 1])
            total = self._totals.get(ctx, 0)
            if total == 0 and a == 0:
                p = 1 / V
            else:
                p = (self._next.get(ctx, {}).get(tok, 0) + a) / (total + a * V)
            out[i] = math.log(p) if p > 0 else -math.inf
        return out

    def _tempered_log_probs(self, tokens: list, padded: list, temperature: float) -> np.ndarray:
        cache: dict[tuple, np.ndarray] = {}
        out = np.empty(len(tokens))
        with np.errstate(divide="ignore"):
            for i, tok in enumerate(tokens):
                ctx = tuple(padded[i:i + self.n - 1])
                if ctx not in cache:
                    cache[ctx] = np.log(apply_temperature(self.distribution(ctx), temperature))
                out[i] = cache[ctx][self._index[tok]]
        return out

    def cross_entropy(self, tokens: Sequence[Hashable], base: float = 2.0, temperature: float = 1.0) -> float:
        """Average negative log-probability per token (bits per token by default)."""
        return float(-self.token_log_probs(tokens, temperature).mean() / math.log(base))

    def perplexity(self, tokens: Sequence[Hashable], temperature: float = 1.0) -> float:
        """exp(average negative log-likelihood per token): the effective number of choices."""
        return float(math.exp(-self.token_log_probs(tokens, temperature).mean()))

    # -- generation -------------------------------------------------------------------------
    def next_log_probs_fn(self, context: Sequence = ()) -> NextLogProbs:
        """``next_log_probs(prefixes (k, t)) -> (k, |V|)`` for :mod:`seqbook.decoding`: the log of
        p(. | context followed by prefix i), where a prefix holds ids, positions in ``self.vocab``
        (float64; ``-inf`` for an unseen n-gram when ``alpha = 0``)."""
        self._require_fitted()
        context = list(self._context(context))

        def next_log_probs(prefixes: torch.Tensor) -> torch.Tensor:
            checks.token_ids(prefixes, "prefixes", 2, len(self.vocab), allow_empty=True)
            rows = [self.distribution(context + [self.vocab[i] for i in row]) for row in prefixes.tolist()]
            with np.errstate(divide="ignore"):
                return torch.from_numpy(np.log(np.stack(rows)))

        return next_log_probs

    def sample(self, length: int, seed: int = 0, temperature: float = 1.0, context: Sequence = ()) -> list:
        """Draw ``length`` tokens after ``context``, by :func:`seqbook.decoding.sample`: each from
        p(. | the n - 1 tokens before it)^(1/temperature), renormalised. Temperature below 1
        sharpens the distribution (towards the most likely token), above 1 flattens it (towards
        uniform), 0 takes the most likely token every time. The draws come from NumPy's
        generator seeded with ``seed``."""
        ids = sample(self.next_log_probs_fn(context), [], length, temperature, draw=numpy_draw(seed))
        return [self.vocab[i] for i in ids]


def _check_temperature(temperature) -> None:
    checks.number(temperature, "a temperature", above=0)


def apply_temperature(probs: np.ndarray, temperature: float) -> np.ndarray:
    """``probs ** (1 / temperature)``, renormalised (computed in log space to avoid underflow)."""
    probs = np.asarray(probs, dtype=float)
    with np.errstate(divide="ignore"):
        logits = np.log(probs) / temperature
    logits -= logits.max()
    w = np.exp(logits)
    return w / w.sum()


def bigram_count_matrix(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Counts ``C[i, j]`` of id ``j`` following id ``i`` in a 1-d tensor of ids; shape (V, V)."""
    checks.token_ids(ids, "ids", 1, checks.positive_int(vocab_size, "vocab_size"), allow_empty=True)
    pairs = ids[:-1] * vocab_size + ids[1:]
    return torch.bincount(pairs, minlength=vocab_size * vocab_size).reshape(vocab_size, vocab_size)


def train_softmax_bigram(counts: torch.Tensor, steps: int = 300, lr: float = 0.5, seed: int = 0,
                         weight_decay: float = 0.0) -> tuple[torch.Tensor, list[float]]:
    """Fit the bigram model as a one-layer network: a one-hot previous token times a (V, V)
    weight matrix gives logits, and softmax gives p(next | previous).

    The loss is the average negative log-likelihood of every pair in the data. Because a
    one-hot input selects one row of the weights, that loss depends on the data only
    through the pair counts, so training on ``counts`` is the same as training on every
    pair, only faster. Returns the learned probabilities (V, V) and the loss per step.
    """
    if not isinstance(counts, torch.Tensor):
        raise TypeError(f"expected a square (V, V) count tensor, got {checks.describe(counts)}")
    if counts.dim() != 2 or counts.shape[0] != counts.shape[1]:
        raise ValueError(f"expected a square (V, V) count tensor, got shape {tuple(counts.shape)}")
    counts = counts.float()
    V = counts.shape[0]
    # Draw the initial weights on the CPU so that a seed gives the same start on any device.
    W = (0.01 * torch.randn(V, V, generator=generator(seed))).to(counts.device).requires_grad_()
    opt = torch.optim.Adam([W], lr=lr, weight_decay=weight_decay)
    losses = []
    for _ in range(steps):
        loss = -(counts * torch.log_softmax(W, dim=1)).sum() / counts.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return torch.softmax(W.detach(), dim=1), losses


# -- measuring what counting can and cannot see ---------------------------------------------
def _ngram_counts(tokens: Sequence[Hashable], n: int) -> Counter:
    return Counter(zip(*(tokens[k:] for k in range(n))))


@dataclass
class Sparsity:
    """How thinly the n-grams of a training text cover the space of possible ones.

    ``possible_contexts`` is ``|V|^(n-1)``; ``seen_contexts`` and ``seen_ngrams`` count the
    distinct ones in the training text; ``singletons`` is the fraction of seen n-grams that
    occur only once; ``unseen_ngrams`` and ``unseen_contexts`` are the fractions of held-out
    positions whose n-gram (or whose context) never occurs in the training text, where a
    maximum-likelihood model would give probability 0 (or have no estimate at all)."""

    n: int
    vocab_size: int
    possible_contexts: int
    seen_contexts: int
    seen_ngrams: int
    singletons: float
    unseen_ngrams: float
    unseen_contexts: float

    @property
    def context_coverage(self) -> float:
        """Fraction of the possible contexts that the training text contains at least once."""
        return self.seen_contexts / self.possible_contexts


def ngram_sparsity(train: Sequence[Hashable], heldout: Sequence[Hashable], n: int,
                   vocab_size: int | None = None) -> Sparsity:
    """Measure :class:`Sparsity` of order-``n`` counts (no ``<s>`` padding: only full n-grams).

    ``vocab_size`` defaults to the number of distinct tokens in ``train`` and ``heldout``."""
    checks.integer(n, "order n", 1)
    train, heldout = list(train), list(heldout)
    if len(train) < n or len(heldout) < n:
        raise ValueError(f"expected at least n={n} tokens of training and of held-out text, "
                         f"got {len(train)} and {len(heldout)}")
    V = vocab_size if vocab_size is not None else len(set(train) | set(heldout))
    grams = _ngram_counts(train, n)
    contexts = {g[:-1] for g in grams}
    test = list(zip(*(heldout[k:] for k in range(n))))
    return Sparsity(
        n=n, vocab_size=V, possible_contexts=V ** (n - 1), seen_contexts=len(contexts),
        seen_ngrams=len(grams),
        singletons=sum(c == 1 for c in grams.values()) / len(grams),
        unseen_ngrams=sum(g not in grams for g in test) / len(test),
        unseen_contexts=sum(g[:-1] not in contexts for g in test) / len(test),
    )


def conditional_entropy(tokens: Sequence[Hashable], n: int) -> float:
    """Shannon's F_N for N = ``n``: the entropy in bits of a token given the ``n - 1`` before it,
    with every probability estimated by counting in ``tokens`` itself (an in-sample figure,
    unlike a held-out cross-entropy). ``n = 1`` gives the entropy of the token frequencies."""
    checks.integer(n, "order n", 1)
    tokens = list(tokens)
    if len(tokens) < n:
        raise ValueError(f"expected at least n={n} tokens, got {len(tokens)}")
    grams = _ngram_counts(tokens, n)
    context_totals: Counter = Counter()
    for g, c in grams.items():
        context_totals[g[:-1]] += c
    total = sum(grams.values())
    return float(-sum(c / total * math.log2(c / context_totals[g[:-1]]) for g, c in grams.items()))

