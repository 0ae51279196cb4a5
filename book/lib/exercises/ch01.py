"""Checkers for the exercises of chapter 1 (n-grams, perplexity, sampling, entropy rate).

Every right answer is computed here from the exercise's data, never typed in, and every
checker compares the student's answer with the usual mistakes first, so that a wrong
answer gets a hint that names the mistake.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..synthetic import LongRangeSource, entropy_bits
from .core import Wrong, as_number, call, checker, close, match_typical, number, require_function

# -- the data of the exercises (the notebook's text quotes them) ----------------------------
TINY_CORPUS = "the cat sat on the mat the cat ran"
BIGRAM_QUERY = ("the", "cat")  # p_add-one(cat | the)
CONTEXT_ALPHABET, CONTEXT_ORDER = 27, 5  # a character 5-gram over a-z and space
ENTROPY_SOURCE = dict(lag=3, n_countries=2, n_fillers=2, stickiness=0.75, fidelity=0.9)

__all__ = ["check_add_one_bigram", "check_perplexity", "check_temperature", "check_context_count",
           "check_seen_contexts", "check_entropy_rate", "check_mixture_weights", "check_bigram_model",
           "check_generate", "SENTENCE_CASES", "TINY_CORPUS",
           "BIGRAM_QUERY", "CONTEXT_ALPHABET", "CONTEXT_ORDER", "ENTROPY_SOURCE",
           "MIXTURE_TOLERANCE_BITS"]


# -- exercise: add-one bigram probability by hand -------------------------------------------
def _bigram_facts(corpus: str = TINY_CORPUS, query=BIGRAM_QUERY):
    words = corpus.split()
    pairs = Counter(zip(words, words[1:]))
    context, word = query
    return dict(pair=pairs[(context, word)], context=sum(c for (a, _), c in pairs.items() if a == context),
                V=len(set(words)), N=len(words), n_pairs=len(words) - 1)


@checker
def check_add_one_bigram(answer) -> str:
    """``answer``: p(cat | the) under add-one (Laplace) smoothing on :data:`TINY_CORPUS`."""
    f = _bigram_facts()
    c, ctx, V = f["pair"], f["context"], f["V"]
    right = (c + 1) / (ctx + V)
    value = number(answer, "a probability", example="1 / 4")
    wrongs = [
        (c / ctx, "that is the maximum-likelihood estimate count(the cat) / count(the): no smoothing. "
                  "Add 1 to every count in the row of 'the'."),
        ((c + 1) / (ctx + 1), "you added 1 to the denominator once, but add-one adds 1 to each of the |V| "
                              "counts in the row, so the denominator grows by |V|."),
        ((c + 1) / ctx, "you smoothed the numerator only; the row must still sum to 1, so the "
                        "denominator grows by |V|."),
        (c / (ctx + V), "you added |V| to the denominator but forgot the +1 in the numerator "
                        "(or you computed the joint frequency of the pair)."),
        (c / f["N"], "that is how often the pair occurs among all tokens, a joint frequency; "
                     "p(cat | the) divides by how often 'the' is a context."),
        ((c + 1) / (f["N"] + V), "you divided by the number of tokens in the corpus; a conditional "
                                 "probability divides by count(the) as a context."),
        ((c + 1) / (f["n_pairs"] + V), "you divided by the number of bigrams in the corpus; a conditional "
                                       "probability divides by count(the) as a context."),
        ((c + 1) / (ctx + V + 1), "|V| is the number of distinct words in the corpus; count them again "
                                  "(no start or end symbol here)."),
        ((c + 1) / (ctx + V - 1), "|V| is the number of distinct words in the corpus; count them again."),
        (100 * right, "that looks like a percentage; give the probability as a number between 0 and 1."),
        (math.log(right), "that is the natural log of the probability; give the probability itself."),
        (math.log2(right), "that is the log (base 2) of the probability; give the probability itself."),
    ]
    if value < 0 or value > 1:
        for wrong, hint in wrongs[-3:]:
            if close(value, wrong, rel=1e-2):
                raise Wrong(f"{value:.6g}: {hint}")
        raise Wrong(f"{value:.6g} is not a probability (expected a number between 0 and 1).")
    return match_typical(value, right, wrongs, rel=1e-2,
                         otherwise="Add-one: (count(the cat) + 1) / (count(the) + |V|), with |V| the number of "
                                   "distinct words.")


# -- exercise: perplexity from per-token probabilities --------------------------------------
_PERPLEXITY_CASES = [
    np.array([0.5, 0.25, 0.125, 0.5]),
    np.array([0.1, 0.9, 0.3, 0.05, 0.6, 0.2, 0.7]),
    np.array([0.02]),
    np.full(50, 0.25),  # a uniform model over 4 tokens: perplexity 4 at any length
]


def _perplexity_variants(p: np.ndarray) -> list[tuple[float, str]]:
    ln, lg = np.log(p), np.log2(p)
    return [
        (math.exp(-ln.sum()), "that is exp(-sum of log-probabilities): you forgot the mean "
                              "(divide by the number of tokens), so it grows with the text's length."),
        (2 ** -lg.sum(), "that is 2^(-sum of log2-probabilities): you forgot the mean "
                         "(divide by the number of tokens), so it grows with the text's length."),
        (float(-ln.mean()), "that is the cross-entropy in nats; perplexity is its exponential."),
        (float(-lg.mean()), "that is the cross-entropy in bits; perplexity is 2 to that power."),
        (2 ** float(-ln.mean()), "mixed log bases: you took natural logs but raised 2 to the power; "
                                 "use exp with ln, or 2** with log2."),
        (math.exp(-lg.mean()), "mixed log bases: you took log2 but exponentiated with e; "
                               "use exp with ln, or 2** with log2."),
        (10 ** float(-ln.mean()), "mixed log bases: natural logs, but 10 to the power."),
        (math.exp(ln.mean()), "that is the geometric mean probability, the inverse of perplexity: "
                              "mind the minus sign."),
        (float(1 / p.mean()), "that is one over the arithmetic mean of the probabilities; perplexity "
                              "uses the geometric mean (average the logs)."),
        (float((1 / p).mean()), "that is the arithmetic mean of 1/p; perplexity averages the log-"
                                "probabilities, then exponentiates."),
        (math.exp(-ln.sum() / (len(p) - 1)) if len(p) > 1 else math.nan,
         "you divided by the number of tokens minus one; divide by the number of tokens."),
    ]


def _scalar(result, what: str) -> float:
    if result is None:
        raise Wrong(f"your function returned None: did you forget `return`? Expected {what}.")
    if hasattr(result, "detach"):
        result = result.detach().cpu()
    if isinstance(result, (np.ndarray,)) or hasattr(result, "shape"):
        arr = np.asarray(result)
        if arr.size != 1:
            raise Wrong(f"expected {what} (one number), got an array of shape {tuple(arr.shape)}; "
                        "did you forget to average over the tokens?")
        result = arr.reshape(()).item()
    if isinstance(result, (list, tuple)):
        raise Wrong(f"expected {what} (one number), got a {type(result).__name__} of {len(result)} items.")
    if isinstance(result, str):
        raise Wrong(f"expected {what} as a number, got the text {result!r}.")
    return as_number(result, what)


@checker
def check_perplexity(perplexity) -> str:
    """``perplexity(probs)``: probs is a 1-d array of p(x_t | context), one per token; returns
    the perplexity of the sequence, exp(-mean(ln p))."""
    require_function(perplexity)
    for p in _PERPLEXITY_CASES:
        right = float(np.exp(-np.log(p).mean()))
        value = _scalar(call(perplexity, p.copy()), "the perplexity")
        if close(value, right, rel=1e-6):
            continue
        for wrong, hint in _perplexity_variants(p):
            if not close(wrong, right, rel=1e-6) and close(value, wrong, rel=1e-6):
                raise Wrong(f"for probs={np.round(p[:8], 3).tolist()}{'...' if len(p) > 8 else ''} you returned "
                            f"{value:.6g}, expected {right:.6g}: {hint}")
        raise Wrong(f"for probs={np.round(p[:8], 3).tolist()}{'...' if len(p) > 8 else ''} you returned "
                    f"{value:.6g}, expected {right:.6g}. Perplexity is exp(-(1/T) * sum_t ln p_t).")
    value = _scalar(call(perplexity, [0.5, 0.5]), "the perplexity")
    if not close(value, 2.0, rel=1e-6):
        raise Wrong(f"your function works on NumPy arrays but returned {value:.6g} for the plain list "
                    "[0.5, 0.5] (expected 2): convert the input with np.asarray first.")
    return "it matches exp(-mean ln p) and gives 4 for a uniform model over 4 tokens."


# -- exercise: temperature -----------------------------------------------------------------
_TEMPERATURE_CASES = [
    (np.array([0.5, 0.3, 0.15, 0.05]), 0.5),
    (np.array([0.5, 0.3, 0.15, 0.05]), 2.0),
    (np.array([0.7, 0.2, 0.1]), 1.0),
    (np.array([0.05, 0.6, 0.25, 0.1]), 0.25),
]


def _normalise(w: np.ndarray) -> np.ndarray:
    return w / w.sum()


def _temperature_variants(p: np.ndarray, T: float) -> list[tuple[np.ndarray, str]]:
    softmax = lambda z: _normalise(np.exp(z - z.max()))  # noqa: E731
    return [
        (_normalise(p ** T), "the exponent is upside down: use p ** (1 / tau), so that tau < 1 sharpens."),
        (p ** (1 / T), "you forgot to renormalise: divide by the sum so that the result sums to 1."),
        (p / T, "dividing probabilities by tau only rescales them (and renormalising undoes it): divide "
                "the log-probabilities by tau, then exponentiate and renormalise."),
        (p, "the distribution did not change: divide the log-probabilities (not the probabilities) by T."),
        (softmax(p / T), "softmax(p / tau) treats probabilities as logits; take the log first: "
                         "softmax(log(p) / tau)."),
        (softmax(np.log(p) * T), "the log-probabilities must be divided by tau, not multiplied."),
        (np.log(_normalise(p ** (1 / T))), "those are log-probabilities; return the probabilities."),
    ]


def _float_array(result, expected: str) -> np.ndarray:
    """A student's returned value as a float array (a tensor is detached first), or a Wrong that
    says it returned None or something that is not an array of ``expected``."""
    if result is None:
        raise Wrong("your function returned None: did you forget `return`?")
    if hasattr(result, "detach"):
        result = result.detach().cpu().numpy()
    try:
        return np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        raise Wrong(f"expected an array of {expected}, got {type(result).__name__}.") from None


def _vector(result, size: int) -> np.ndarray:
    arr = _float_array(result, f"{size} probabilities")
    if arr.shape != (size,):
        raise Wrong(f"expected an array of shape ({size},), the same shape as probs, got shape {arr.shape}.")
    return arr


@checker
def check_temperature(with_temperature) -> str:
    """``with_temperature(probs, tau)``: probs a 1-d array summing to 1; returns p^(1/tau), renormalised."""
    require_function(with_temperature)
    for p, T in _TEMPERATURE_CASES:
        right = _normalise(p ** (1 / T))
        value = _vector(call(with_temperature, p.copy(), T), len(p))
        if np.allclose(value, right, rtol=1e-5, atol=1e-8):
            continue
        where = f"for probs={p.tolist()} and tau={T} you returned {np.round(value, 4).tolist()}, " \
                f"expected {np.round(right, 4).tolist()}"
        for wrong, hint in _temperature_variants(p, T):
            if not np.allclose(wrong, right, rtol=1e-5) and np.allclose(value, wrong, rtol=1e-5, atol=1e-8):
                raise Wrong(f"{where}: {hint}")
        if np.isfinite(value).all() and not math.isclose(value.sum(), 1, rel_tol=1e-6):
            raise Wrong(f"{where}: the result should sum to 1 (yours sums to {value.sum():.4g}).")
        raise Wrong(f"{where}. Temperature reshapes p into p^(1/tau) / sum(p^(1/tau)).")
    # A very low temperature on small probabilities underflows unless one works with logs.
    tiny = _normalise(np.linspace(1.0, 2.0, 10_000))  # every p is about 1e-4, so p ** 100 underflows
    try:
        value = np.asarray(call(with_temperature, tiny.copy(), 0.01), dtype=float)
        stable = value.shape == tiny.shape and bool(np.isfinite(value).all()) \
            and abs(value.sum() - 1) < 1e-6 and int(value.argmax()) == len(tiny) - 1
    except Exception:
        stable = False
    note = "" if stable else (" One caution: with tau = 0.01 and probabilities near 1e-4 your version "
                              "underflows (p ** 100 is 0, and 0 / 0 is nan); working in log space, "
                              "exp((log p - max log p) / tau), avoids it, as seqbook.ngram.apply_temperature does.")
    return "your version matches p^(1/tau) / sum p^(1/tau) for tau < 1, = 1 and > 1." + note


# -- exercise: how many contexts does a character 5-gram have? -----------------------------
@checker
def check_context_count(answer) -> str:
    """``answer``: the number of possible contexts of a character ``CONTEXT_ORDER``-gram model
    over ``CONTEXT_ALPHABET`` symbols."""
    V, n = CONTEXT_ALPHABET, CONTEXT_ORDER
    right = V ** (n - 1)
    value = number(answer, "a count of contexts", example="10 ** 6")
    wrongs = [
        (V ** n, f"that is |V|^n = {V}^{n}, the number of possible {n}-grams; a context is the "
                 f"n - 1 = {n - 1} characters before the one predicted."),
        (V ** (n - 2), f"that is |V|^(n-2); the context of a {n}-gram holds n - 1 = {n - 1} characters."),
        ((V - 1) ** (n - 1), f"that counts {V - 1} symbols: the alphabet has {V} (a-z and the space)."),
        (V * (n - 1), f"that is |V| * (n - 1): each of the {n - 1} positions can hold any of {V} symbols "
                      "independently, so the counts multiply."),
        (V * n, "that is |V| * n: the choices of the positions multiply, they do not add."),
        ((n - 1) ** V, "base and exponent are swapped: it is |V|^(n-1)."),
        (n ** V, "base and exponent are swapped: it is |V|^(n-1)."),
        (V ** n - V ** (n - 1), "just the contexts: |V|^(n-1)."),
        (math.comb(V, n - 1), "order matters in a context ('ab' is not 'ba') and symbols can repeat: "
                              "it is |V|^(n-1), not a binomial coefficient."),
    ]
    if value != int(value):
        raise Wrong(f"{value:g}: a number of contexts is a whole number.")
    return match_typical(value, right, wrongs, rel=1e-9,
                         otherwise=f"Each of the n - 1 = {n - 1} context positions can hold any of the {V} symbols.")


# -- exercise: how many of those contexts does the training text contain? -------------------
def _letters_train() -> str:
    from ..corpus import letters_and_space, python_docs_text, split

    return split(letters_and_space(python_docs_text()))[0]


def _distinct(text: str, width: int, stop: int) -> int:
    return len({text[i:i + width] for i in range(stop)})


@checker
def check_seen_contexts(answer) -> str:
    """``answer``: how many distinct contexts (the ``CONTEXT_ORDER - 1`` characters before a
    predicted one) the 5-grams of the chapter's ``letters_train`` contain; full 5-grams only,
    no ``<s>`` padding (as :func:`seqbook.ngram.ngram_sparsity` counts them)."""
    if isinstance(answer, (set, frozenset, list, tuple, dict)):
        raise Wrong(f"you passed a {type(answer).__name__} of {len(answer)} items; pass the number of "
                    "distinct contexts, e.g. len(your_set).")
    value = number(answer, "a count of contexts", example="12345")
    text = _letters_train()
    k, N = CONTEXT_ORDER - 1, len(text)
    right = _distinct(text, k, N - k)
    wrongs = [
        (_distinct(text, k + 1, N - k), f"that is the number of distinct {k + 1}-grams; count their contexts, "
                                        f"the {k} characters before the predicted one."),
        (_distinct(text, k - 1, N - k + 1), f"those are {k - 1}-character contexts (a {k}-gram model); the "
                                            f"context of a {k + 1}-gram has {k} characters."),
        (N - k, "that counts every position, repeats included; count the distinct contexts (a set)."),
        (_distinct(text, k, N - k + 1), f"you also counted the last {k} characters, which no character "
                                        f"follows: take the contexts of full {k + 1}-grams only."),
        (right + k, f"the {k} contexts padded with <s> at the start of the text do not count here: "
                    f"count the contexts of full {k + 1}-grams only."),
        (CONTEXT_ALPHABET ** k, "that is the number of possible contexts (the first part); now count the "
                                "ones that occur in letters_train."),
    ]
    if value != int(value):
        raise Wrong(f"{value:g}: a number of contexts is a whole number.")
    try:
        return match_typical(value, right, wrongs, rel=1e-9,
                             otherwise=f"Count the distinct strings text[i:i + {k}] for every i that has a "
                                       f"character after the window, in letters_train only.")
    except Wrong:
        from ..corpus import letters_and_space, python_docs_text

        everything = letters_and_space(python_docs_text())
        if value == _distinct(everything, k, len(everything) - k):
            raise Wrong(f"{value:.6g}: you counted in the whole text; count in letters_train only.") from None
        raise


# -- exercise: the entropy rate of the synthetic source by hand -----------------------------
@checker
def check_entropy_rate(answer) -> str:
    """``answer``: the entropy rate in bits per token of ``LongRangeSource(**ENTROPY_SOURCE)``."""
    src = LongRangeSource(**ENTROPY_SOURCE)
    right = src.entropy_rate()
    L, lag = src.sentence_length, src.lag
    h_country = math.log2(len(src.countries))
    h_first = math.log2(len(src.fillers))
    h_step = entropy_bits(src.filler_transitions[0])
    h_lang = entropy_bits(src.language_given_country[0])
    sentence = h_country + h_first + (lag - 2) * h_step + h_lang
    value = number(answer, "an entropy rate in bits per token", example="1.25")
    wrongs = [
        (sentence, f"that is the entropy of a whole sentence; the rate is per token, so divide by the "
                   f"sentence length lag + 1 = {L}."),
        (sentence / lag, f"you divided by lag = {lag}; a sentence has lag + 1 = {L} tokens "
                         "(the country, lag - 1 fillers and the language)."),
        (sentence / (L + 1), f"a sentence has lag + 1 = {L} tokens; divide by {L}."),
        (right * math.log(2), "that is in nats; the question asks for bits (use log base 2)."),
        (right / math.log2(10), "that is in bans (log base 10); the question asks for bits."),
        ((h_country + h_first + (lag - 2) * h_step + math.log2(len(src.languages))) / L,
         "the language is not uniform: it is the country's own language with probability fidelity, "
         "so its entropy is H(fidelity, the rest spread evenly), not log2 of the number of languages."),
        ((h_country + h_first + (lag - 2) * h_step) / L,
         "the language is not certain: with probability 1 - fidelity it is another one, which costs "
         "H(fidelity, ...) bits."),
        ((h_country + h_first + (lag - 2) * h_first + h_lang) / L,
         "the fillers after the first are not uniform: they follow a sticky Markov chain, so each costs "
         "H(stickiness, the rest spread evenly) bits."),
        ((h_country + (lag - 1) * h_step + h_lang) / L,
         "the first filler has no previous filler to stick to: it is uniform."),
        ((h_country + h_first + (lag - 1) * h_step + h_lang) / L,
         f"there are lag - 1 = {lag - 1} fillers: the first uniform, then lag - 2 = {lag - 2} transitions."),
        ((h_country + h_first + (lag - 2) * h_step + h_lang + h_country) / L,
         "the country is counted once: the language depends on it, it does not repeat it."),
    ]
    return match_typical(value, right, wrongs, rel=5e-3,
                         otherwise="Add up the entropy of each position of a sentence given what came before "
                                   "(country, first filler, each further filler, language), then divide by the "
                                   "sentence length.")


# -- exercise: interpolating the orders (mixture weights chosen on held-out text) -----------
MIXTURE_TOLERANCE_BITS = 1e-3  # how far above the best mixture's cross-entropy an answer may be


def _mixture_cases() -> list[np.ndarray]:
    """Per-token probabilities ``(K, T)`` of K made-up models, each good on other tokens,
    built from a fixed seed. The second case has a useless model (its best weight is 0); the
    third has exact zeros, as a maximum-likelihood n-gram gives to an unseen n-gram."""
    rng = np.random.default_rng(2024)
    T = 2_000
    sharp = np.where(rng.random(T) < 0.7, rng.uniform(0.4, 0.9, T), rng.uniform(0.001, 0.02, T))
    broad = rng.uniform(0.05, 0.25, T)
    case1 = np.stack([sharp, broad])
    useless = np.full(T, 1e-3)
    middle = np.where(rng.random(T) < 0.5, rng.uniform(0.2, 0.6, T), rng.uniform(0.01, 0.05, T))
    case2 = np.stack([broad, sharp, useless, middle])
    unigram = rng.uniform(0.02, 0.1, T)
    seen = rng.random((4, T)) < np.array([[0.95], [0.8], [0.6], [0.4]])
    seen[:, :20] = False  # tokens that only the first model can explain
    confident = np.where(seen, rng.uniform(0.1, 0.95, (4, T)), 0.0)
    case3 = np.vstack([unigram, confident])
    return [case1, case2, case3]


def _mixture_bits(weights: np.ndarray, probs: np.ndarray) -> float:
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log2(weights @ probs)))


def _em_weights(probs: np.ndarray, steps: int, start: np.ndarray | None = None) -> np.ndarray:
    """Expectation-maximisation for mixture weights: each weight becomes the average share of
    the mixture's probability that its model contributed. Never increases the cross-entropy."""
    K = probs.shape[0]
    weights = np.full(K, 1 / K) if start is None else start
    for _ in range(steps):
        weights = (weights[:, None] * probs / (weights @ probs)).mean(axis=1)
    return weights


def _best_weights(probs: np.ndarray) -> np.ndarray:
    return _em_weights(probs, steps=5_000)


def _weights_of(result, K: int, T: int) -> np.ndarray:
    arr = _float_array(result, f"{K} weights, one per model")
    if arr.shape == (T,) or arr.shape == (K, T):
        raise Wrong(f"you returned an array of shape {arr.shape}; return one weight per model (a row of "
                    f"probs), an array of shape ({K},).")
    if arr.shape != (K,):
        raise Wrong(f"expected an array of {K} weights, one per model (probs has shape ({K}, {T})), got "
                    f"shape {arr.shape}.")
    if not np.isfinite(arr).all():
        raise Wrong(f"your weights contain nan or inf ({np.round(arr, 4).tolist()}). Probabilities can be "
                    "exactly 0 (a maximum-likelihood n-gram gives 0 to an n-gram it never saw): never divide "
                    "by or take the log of one model's probability alone; the mixture is positive.")
    return arr


def _mixture_variants(probs: np.ndarray) -> list[tuple[np.ndarray, str]]:
    K = probs.shape[0]
    one_hot = np.eye(K)[int(np.argmin([_mixture_bits(np.eye(K)[k], probs) for k in range(K)]))]
    with np.errstate(divide="ignore"):
        alone = 2.0 ** np.mean(np.log2(probs), axis=1)  # each model's geometric-mean probability
    return [
        (np.full(K, 1 / K), "equal weights give a valid mixture, but not the best one: choose the weights "
                            "that minimise the mixture's cross-entropy on probs."),
        (one_hot, "you put all the weight on the single best model; a mixture of the models does better "
                  "than any one of them."),
        (_em_weights(probs, steps=1), "that looks like one step of EM from equal weights: repeat the "
                                      "update until the weights stop changing."),
        (probs.mean(axis=1) / probs.mean(axis=1).sum(), "weights proportional to each model's average "
                                                        "probability are a heuristic: optimise the "
                                                        "mixture's cross-entropy itself."),
        (alone / alone.sum(), "weights proportional to how well each model does alone are a heuristic: "
                              "optimise the mixture's cross-entropy itself."),
    ]


@checker
def check_mixture_weights(mixture_weights) -> str:
    """``mixture_weights(probs)``: probs a (K, T) array, ``probs[k, t]`` the probability model k
    gave token t; returns K weights >= 0 that sum to 1 and minimise the cross-entropy
    ``-mean_t log2(sum_k weights[k] * probs[k, t])`` of the mixture, to within
    :data:`MIXTURE_TOLERANCE_BITS` bits per token."""
    require_function(mixture_weights)
    for probs in _mixture_cases():
        K, T = probs.shape
        weights = _weights_of(call(mixture_weights, probs.copy()), K, T)
        shown = np.round(weights, 4).tolist()
        if (weights < -1e-9).any():
            raise Wrong(f"for a case with {K} models you returned the weights {shown}: a weight is negative, "
                        "and a negative weight can make the mixture's probability negative. Keep every "
                        "weight >= 0 (for example, write weights = softmax(logits), or use EM).")
        if not math.isclose(weights.sum(), 1, rel_tol=0, abs_tol=1e-6):
            raise Wrong(f"for a case with {K} models your weights {shown} sum to {weights.sum():.6g}; they must "
                        "sum to 1, or the mixture is not a probability distribution.")
        best = _best_weights(probs)
        ours, optimum = _mixture_bits(weights, probs), _mixture_bits(best, probs)
        if ours <= optimum + MIXTURE_TOLERANCE_BITS:
            continue
        where = (f"for a case with {K} models your weights {shown} give {ours:.4f} bits per token, the best "
                 f"weights {np.round(best, 4).tolist()} give {optimum:.4f}")
        for wrong, hint in _mixture_variants(probs):
            if _mixture_bits(wrong, probs) > optimum + MIXTURE_TOLERANCE_BITS \
                    and np.allclose(weights, wrong, rtol=0, atol=1e-4):
                raise Wrong(f"{where}: {hint}")
        raise Wrong(f"{where}. Minimise the mixture's cross-entropy over weights >= 0 that sum to 1, for "
                    "example with EM (weights[k] <- mean over t of weights[k] * probs[k, t] / mixture[t]).")
    return (f"your weights are within {MIXTURE_TOLERANCE_BITS:g} bits per token of the best mixture on every "
            "case, including one where a model deserves no weight and one with exact zeros.")


# -- exercise: count a bigram model over separate sentences, with <s> and </s> ---------------
BOS, EOS = "<s>", "</s>"
SENTENCE_CASES = [
    ([s.split() for s in ("a dog ran", "a cat sat", "the dog sat")], 0.0),
    ([s.split() for s in ("a dog ran", "a cat sat", "the dog sat")], 1.0),
    ([s.split() for s in ("the cat saw the dog", "the dog ran", "a cat")], 0.5),
]


def _bigram_reference(sentences, alpha: float, mistake: str | None = None) -> dict:
    """{h: {w: p(w | h)}} of the add-alpha bigram model of ``sentences``, each padded with <s> in
    front and closed by </s>; or the model a typical ``mistake`` gives."""
    words = sorted({w for s in sentences for w in s})
    predicted = words + ([] if mistake == "no end" else [EOS])
    size = len(predicted) + (1 if mistake == "counts <s>" else 0)
    stream = [w for s in sentences for w in s]
    if mistake == "one stream":       # the sentences run into each other
        padded_sentences = [[BOS] + stream + [EOS]]
    elif mistake == "no end":
        padded_sentences = [[BOS] + list(s) for s in sentences]
    else:
        padded_sentences = [[BOS] + list(s) + [EOS] for s in sentences]
    counts = {h: Counter() for h in [BOS] + words}
    for padded in padded_sentences:
        for h, w in zip(padded, padded[1:]):
            counts[h][w] += 1
    model = {}
    for h, followers in counts.items():
        total = sum(followers.values())
        if mistake == "numerator only":
            model[h] = {w: (followers[w] + alpha) / total if total else 0.0 for w in predicted}
        elif total == 0 and alpha == 0:
            model[h] = {w: 1 / len(predicted) for w in predicted}
        else:
            model[h] = {w: (followers[w] + alpha) / (total + alpha * size) for w in predicted}
    return model


def _as_model(result) -> dict:
    if result is None:
        raise Wrong("your function returned None: did you forget `return`?")
    if not isinstance(result, dict) or not all(isinstance(row, dict) for row in result.values()):
        raise Wrong(f"expected a dictionary of dictionaries, model[h][w] = p(w | h), got "
                    f"{type(result).__name__}.")
    return result


def _same_model(got: dict, right: dict, tol: float = 1e-6) -> bool:
    if set(got) != set(right):
        return False
    for h, row in right.items():
        for w in set(row) | set(got[h]):
            if not math.isclose(float(got[h].get(w, 0.0)), row.get(w, 0.0), rel_tol=tol, abs_tol=1e-9):
                return False
    return True


@checker
def check_bigram_model(bigram_model) -> str:
    """``bigram_model(sentences, alpha)`` -> ``{h: {w: p(w | h)}}``: the add-alpha bigram model of a
    list of sentences (lists of words), each padded with ``<s>`` and closed by ``</s>``."""
    require_function(bigram_model)
    for sentences, alpha in SENTENCE_CASES:
        got = _as_model(call(bigram_model, [list(s) for s in sentences], alpha))
        right = _bigram_reference(sentences, alpha)
        where = f"for the sentences {[' '.join(s) for s in sentences]} and alpha = {alpha:g}"
        if _same_model(got, right):
            continue
        if BOS not in got:
            raise Wrong(f"{where} your model has no row for <s>: the first word of every sentence is "
                        "predicted from the context <s>.")
        if EOS in got:
            raise Wrong(f"{where} your model has a row for </s>, but nothing follows the end of a "
                        "sentence: </s> is predicted, never a context.")
        if set(got) != set(right):
            missing = sorted(set(right) - set(got))
            raise Wrong(f"{where} the contexts should be <s> and every word; yours lack {missing} "
                        f"or add {sorted(set(got) - set(right))}.")
        if any(BOS in row and row[BOS] != 0 for row in got.values()):
            raise Wrong(f"{where} your rows give probability to <s>, which is never predicted: |V| counts "
                        "the words and </s>, not <s>.")
        for mistake, hint in (
                ("one stream", "you read the sentences as one text, so the last word of a sentence "
                               "predicts the first word of the next: pad every sentence on its own."),
                ("no end", "you forgot </s>: close every sentence with it, so that the model can predict "
                           "where a sentence stops (and count it in |V|)."),
                ("counts <s>", "|V| should count the words and </s>, but not <s>, which is never predicted."),
                ("numerator only", "you added alpha to the counts but not alpha |V| to the denominator, "
                                   "so the rows no longer sum to 1."),
        ):
            if _same_model(got, _bigram_reference(sentences, alpha, mistake)):
                raise Wrong(f"{where} {hint}")
        if alpha and _same_model(got, _bigram_reference(sentences, 0.0)):
            raise Wrong(f"{where} your model is the maximum-likelihood one: add alpha to every count "
                        "and alpha |V| to the denominator.")
        bad = [h for h, row in got.items() if not math.isclose(sum(map(float, row.values())), 1, abs_tol=1e-6)]
        if bad:
            raise Wrong(f"{where} the row of {bad[0]!r} sums to {sum(map(float, got[bad[0]].values())):.4g}, "
                        "not 1: every p(. | h) is a distribution over the words and </s>.")
        h = next(h for h in right if not _same_model({h: got[h]}, {h: right[h]}))
        raise Wrong(f"{where} the row of {h!r} is {_rounded(got[h])}, expected {_rounded(right[h])}: "
                    "p(w | h) = (c(h w) + alpha) / (c(h) + alpha |V|).")
    return "your counts, with <s> in front of every sentence and </s> at its end, match."


def _rounded(row: dict) -> dict:
    return {w: round(float(p), 3) for w, p in sorted(row.items()) if float(p) > 0}


# -- exercise: generate sentences from a bigram model ------------------------------------------
def _sentence_probabilities(model: dict, max_words: int = 20) -> dict[tuple, float]:
    """Every sentence the model can generate (for a model without loops), with its probability."""
    out: dict[tuple, float] = {}

    def walk(h, words, p):
        for w, q in model[h].items():
            if q <= 0:
                continue
            if w == EOS:
                out[tuple(words)] = out.get(tuple(words), 0.0) + p * q
            elif len(words) < max_words:
                walk(w, words + [w], p * q)

    walk(BOS, [], 1.0)
    return out


def _words_of(result, where: str) -> list:
    if result is None:
        raise Wrong(f"{where} your function returned None: did you forget `return`?")
    if isinstance(result, str):
        raise Wrong(f"{where} you returned the text {result!r}; return the list of words.")
    if not isinstance(result, (list, tuple)):
        raise Wrong(f"{where} expected a list of words, got {type(result).__name__}.")
    return list(result)


@checker
def check_generate(generate) -> str:
    """``generate(model, seed, max_words=20)`` -> one sentence (a list of words, without <s> and
    </s>) drawn from a ``{h: {w: p(w | h)}}`` bigram model with ``np.random.default_rng(seed)``."""
    require_function(generate)
    chain = {BOS: {"x": 1.0, "y": 0.0, EOS: 0.0}, "x": {"x": 0.0, "y": 1.0, EOS: 0.0},
             "y": {"x": 0.0, "y": 0.0, EOS: 1.0}}
    got = _words_of(call(generate, chain, 0), "on a model that can only say 'x y'")
    if got and got[0] == BOS or got and got[-1] == EOS:
        raise Wrong("leave <s> and </s> out of the sentence you return: they mark its boundaries, they "
                    "are not words.")
    if got == ["x"] * len(got) and len(got) > 1:
        raise Wrong("on a model that can only say 'x y' you returned " f"{got}: after drawing a word, make it "
                    "the new context, so the next word is drawn from model[word].")
    if got != ["x", "y"]:
        raise Wrong(f"on a model that can only say 'x y' (every probability 0 or 1) you returned {got}: start "
                    "from model['<s>'], draw, continue from the word drawn, and stop at '</s>'.")
    loop = {BOS: {"a": 1.0, EOS: 0.0}, "a": {"a": 1.0, EOS: 0.0}}
    for limit in (20, 5):
        got = _words_of(call(generate, loop, 0, limit), "on a model that never ends")
        if got != ["a"] * limit:
            raise Wrong(f"on a model that never reaches </s>, generate(model, seed, max_words={limit}) returned "
                        f"{len(got)} words: stop after max_words words.")
    model = _bigram_reference(SENTENCE_CASES[0][0], 0.0)
    truth = _sentence_probabilities(model)
    first = [tuple(_words_of(call(generate, model, seed), "on the toy model")) for seed in range(3000)]
    again = [tuple(_words_of(call(generate, model, seed), "on the toy model")) for seed in range(20)]
    if again != first[:20]:
        raise Wrong("the same seed gave different sentences: draw with rng = np.random.default_rng(seed), "
                    "created inside generate, so that a seed always gives the same sentence.")
    unknown = sorted({" ".join(s) for s in first} - {" ".join(s) for s in truth})
    if unknown:
        raise Wrong(f"the toy model cannot say {unknown[0]!r}: each word must be drawn from model[previous word].")
    if len(set(first)) == 1:
        raise Wrong(f"3000 seeds all gave {' '.join(first[0])!r}: draw at random with the model's "
                    "probabilities (rng.choice(tokens, p=probs)) instead of taking the most likely word, "
                    "and create the generator from the seed you are given.")
    shares = {s: first.count(s) / len(first) for s in truth}
    off = {s: (shares[s], p) for s, p in truth.items()
           if abs(shares[s] - p) > 5 * math.sqrt(p * (1 - p) / len(first))}
    if off:
        s, (share, p) = next(iter(off.items()))
        raise Wrong(f"over 3000 seeds {' '.join(s)!r} came out {share:.1%} of the time, but the model gives it "
                    f"probability {p:.1%}: draw each word with the probabilities of model[h] "
                    "(rng.choice(tokens, p=probs)), not uniformly.")
    return ("your sentences follow the model: over 3000 seeds each toy sentence came out about as often as "
            "its probability says, and the same seed gives the same sentence.")
