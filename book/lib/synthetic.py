"""A seeded synthetic source whose exact entropy rate is known, with a long-range dependency.

The stream is a sequence of independent "sentences" of ``lag + 1`` tokens::

    France  la la di la da  French
    <----------- lag ---------->

The first token names a country (uniform over ``n_countries``); then come ``lag - 1``
filler syllables from a sticky Markov chain; the last token is the country's language
with probability ``fidelity`` (else one of the other languages, uniformly). The
language is decided ``lag`` steps earlier, so a model whose window is shorter than
``lag`` cannot predict it, whatever else it learns.

Because each sentence is generated independently from known distributions, the
entropy per token can be written down exactly (:meth:`LongRangeSource.entropy_rate`).
"""

from __future__ import annotations

import math

import numpy as np

from . import checks
from .seeding import numpy_rng

COUNTRIES = ["France", "Spain", "Italy", "Germany", "Japan", "Brazil", "Greece", "Poland"]
LANGUAGES = ["French", "Spanish", "Italian", "German", "Japanese", "Portuguese", "Greek", "Polish"]
FILLERS = ["la", "di", "da", "do", "re", "mi"]


def entropy_bits(p: np.ndarray) -> float:
    """Entropy in bits of a probability vector."""
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


class LongRangeSource:
    """Sentences ``country, fillers..., language`` with the language ``lag`` steps after the country."""

    def __init__(self, lag: int = 5, n_countries: int = 4, n_fillers: int = 3,
                 stickiness: float = 0.7, fidelity: float = 0.9):
        checks.integer(lag, "lag", 2)
        for name, value, most in (("n_countries", n_countries, len(COUNTRIES)), ("n_fillers", n_fillers, len(FILLERS))):
            if checks.integer(value, name, 2) > most:
                raise ValueError(f"expected {name} between 2 and {most}, got {value}")
        for name, value in (("stickiness", stickiness), ("fidelity", fidelity)):
            checks.number(value, name, at_least=0, at_most=1)
        self.lag, self.stickiness, self.fidelity = lag, stickiness, fidelity
        self.countries = COUNTRIES[:n_countries]
        self.languages = LANGUAGES[:n_countries]
        self.fillers = FILLERS[:n_fillers]
        self.vocab = self.countries + self.fillers + self.languages
        off = (1 - stickiness) / (n_fillers - 1)
        # Rows sum to 1 and so do columns, so the uniform start is the stationary distribution.
        self.filler_transitions = np.full((n_fillers, n_fillers), off) + np.eye(n_fillers) * (stickiness - off)
        wrong = (1 - fidelity) / (n_countries - 1)
        self.language_given_country = np.full((n_countries, n_countries), wrong) + np.eye(n_countries) * (fidelity - wrong)

    @property
    def sentence_length(self) -> int:
        return self.lag + 1

    def sentence_entropy(self) -> float:
        """Exact entropy, in bits, of one sentence."""
        m, f = len(self.countries), len(self.fillers)
        country = math.log2(m)
        first_filler = math.log2(f)
        each_next_filler = entropy_bits(self.filler_transitions[0])  # every row is a permutation of row 0
        language = entropy_bits(self.language_given_country[0])
        return country + first_filler + (self.lag - 2) * each_next_filler + language

    def entropy_rate(self) -> float:
        """Exact entropy rate in bits per token: the sentence entropy over the sentence length."""
        return self.sentence_entropy() / self.sentence_length

    def sample(self, n_tokens: int, seed: int) -> list[str]:
        """``n_tokens`` tokens, starting at a sentence boundary; the same seed gives the same tokens."""
        checks.positive_int(n_tokens, "n_tokens")
        rng = numpy_rng(seed)
        n_sent = -(-n_tokens // self.sentence_length)
        m, f = len(self.countries), len(self.fillers)
        country = rng.integers(m, size=n_sent)
        fillers = np.empty((n_sent, self.lag - 1), dtype=int)
        fillers[:, 0] = rng.integers(f, size=n_sent)
        cum = self.filler_transitions.cumsum(axis=1)
        for j in range(1, self.lag - 1):
            u = rng.random(n_sent)
            fillers[:, j] = (u[:, None] > cum[fillers[:, j - 1]]).sum(axis=1)
        u = rng.random(n_sent)
        language = (u[:, None] > self.language_given_country.cumsum(axis=1)[country]).sum(axis=1)
        out: list[str] = []
        for c, fs, l in zip(country, fillers, language):
            out.append(self.countries[c])
            out.extend(self.fillers[k] for k in fs)
            out.append(self.languages[l])
        return out[:n_tokens]

    def true_log2_probs(self, tokens: list[str]) -> np.ndarray:
        """log2 p(x_t | everything before it) under the source itself, for tokens that start at a
        sentence boundary. Its negative mean tends to :meth:`entropy_rate` on long samples."""
        L = self.sentence_length
        out = np.empty(len(tokens))
        country = filler = None
        for t, tok in enumerate(tokens):
            pos = t % L
            try:
                if pos == 0:
                    country = self.countries.index(tok)
                    p = 1 / len(self.countries)
                elif pos < L - 1:
                    k = self.fillers.index(tok)
                    p = 1 / len(self.fillers) if pos == 1 else self.filler_transitions[filler, k]
                    filler = k
                else:
                    p = self.language_given_country[country, self.languages.index(tok)]
            except ValueError:
                raise ValueError(f"token {tok!r} at position {t} cannot occur there: the stream must "
                                 "start at a sentence boundary and come from this source") from None
            out[t] = math.log2(p) if p > 0 else -math.inf
        return out
