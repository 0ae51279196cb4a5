"""The checkers of chapter 1: right answers pass, typical wrong ones fail with the hint that
names the mistake, and junk (None, text, a function that raises, a stub) never raises."""

import math

import numpy as np
import pytest
import torch

from seqbook.exercises import ch01
from seqbook.exercises.core import Verdict
from seqbook.ngram import NGramLM, apply_temperature
from seqbook.synthetic import LongRangeSource


def stub(*args):
    raise NotImplementedError


def raises(*args):
    raise ZeroDivisionError("oops")


JUNK = [None, ..., "hello", raises, stub, [1, 2], {"a": 1}, float("nan")]


def verdict_of(check, answer, capsys) -> Verdict:
    v = check(answer)
    out = capsys.readouterr().out
    assert isinstance(v, Verdict)
    assert out.startswith("✅" if v.passed else "❌"), out  # the verdict is printed
    return v


# -- add-one bigram ---------------------------------------------------------------------------
def test_add_one_right_answer_is_computed_from_the_corpus(capsys):
    # Independent route: the library's NGramLM with alpha = 1 on the same words.
    words = ch01.TINY_CORPUS.split()
    p = NGramLM(2, alpha=1).fit(words).prob("cat", ["the"])
    # NGramLM pads with <s>, which adds a ('<s>', 'the') bigram but does not touch the row of 'the'.
    assert verdict_of(ch01.check_add_one_bigram, p, capsys)
    assert verdict_of(ch01.check_add_one_bigram, 1 / 3, capsys)
    assert verdict_of(ch01.check_add_one_bigram, 0.333, capsys)  # rounded by hand
    assert verdict_of(ch01.check_add_one_bigram, "0.3333", capsys)


@pytest.mark.parametrize("answer, hint", [
    (2 / 3, "no smoothing"),
    (3 / 4, "grows by |V|"),
    (1.0, "numerator only"),
    (2 / 9, "forgot the +1"),
    (3 / 15, "number of tokens"),
    (3 / 14, "number of bigrams"),
    (3 / 10, "distinct words"),
    (100 / 3, "percentage"),
    (math.log(1 / 3), "natural log"),
    (math.log2(1 / 3), "base 2"),
    (0.5, "Add-one: (count(the cat) + 1)"),
    (1.5, "not a probability"),
])
def test_add_one_recognises_typical_mistakes(answer, hint, capsys):
    v = verdict_of(ch01.check_add_one_bigram, answer, capsys)
    assert not v and hint in v.message, v.message


@pytest.mark.parametrize("junk", JUNK + [torch.tensor([0.1, 0.2]), True])
def test_add_one_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_add_one_bigram, junk, capsys)


def test_placeholders_say_so(capsys):
    for check in (ch01.check_add_one_bigram, ch01.check_context_count, ch01.check_entropy_rate,
                  ch01.check_perplexity, ch01.check_temperature, ch01.check_seen_contexts,
                  ch01.check_mixture_weights):
        for placeholder in (None, ..., stub):
            v = verdict_of(check, placeholder, capsys)
            assert not v
            functions = (ch01.check_perplexity, ch01.check_temperature, ch01.check_mixture_weights)
            if check in functions or placeholder is not stub:
                assert "placeholder" in v.message, (check.__name__, v.message)


def test_text_answer_gets_a_hint(capsys):
    v = verdict_of(ch01.check_add_one_bigram, "one third", capsys)
    assert not v and "as a Python number" in v.message


# -- perplexity -------------------------------------------------------------------------------
def right_perplexity(probs):
    return float(np.exp(-np.mean(np.log(probs))))


def test_perplexity_accepts_right_answers_written_differently(capsys):
    assert verdict_of(ch01.check_perplexity, right_perplexity, capsys)
    assert verdict_of(ch01.check_perplexity, lambda p: 2 ** -np.mean(np.log2(p)), capsys)
    assert verdict_of(ch01.check_perplexity, lambda p: np.prod(np.asarray(p)) ** (-1 / len(p)), capsys)
    assert verdict_of(ch01.check_perplexity,
                      lambda p: torch.exp(-torch.log(torch.as_tensor(p, dtype=torch.float64)).mean()), capsys)


def test_perplexity_agrees_with_the_library(capsys):
    # The checker's notion of perplexity is NGramLM.perplexity applied to per-token probabilities.
    src = LongRangeSource()
    tokens = src.sample(600, seed=3)
    model = NGramLM(2, alpha=0.5).fit(tokens)
    probs = np.exp(model.token_log_probs(tokens))
    assert math.isclose(right_perplexity(probs), model.perplexity(tokens), rel_tol=1e-12)


@pytest.mark.parametrize("func, hint", [
    (lambda p: np.exp(-np.sum(np.log(p))), "forgot the mean"),
    (lambda p: 2 ** -np.sum(np.log2(p)), "forgot the mean"),
    (lambda p: -np.mean(np.log(p)), "cross-entropy in nats"),
    (lambda p: -np.mean(np.log2(p)), "cross-entropy in bits"),
    (lambda p: 2 ** -np.mean(np.log(p)), "mixed log bases"),
    (lambda p: np.exp(-np.mean(np.log2(p))), "mixed log bases"),
    (lambda p: np.exp(np.mean(np.log(p))), "minus sign"),
    (lambda p: 1 / np.mean(p), "arithmetic mean of the probabilities"),
    (lambda p: np.mean(1 / np.asarray(p)), "arithmetic mean of 1/p"),
    (lambda p: np.exp(-np.sum(np.log(p)) / (len(p) - 1)), "minus one"),
    (lambda p: -np.log(p), "did you forget to average"),
    (lambda p: None, "forget `return`"),
    (lambda p: "4", "expected the perplexity"),
    (lambda p: len(p) + 0.5, "Perplexity is exp"),
    (lambda p: np.exp(-(np.log(p)).mean()) if isinstance(p, np.ndarray) else 0.0, "plain list"),
    (lambda: 1.0, "TypeError"),
    (raises, "ZeroDivisionError"),
])
def test_perplexity_recognises_typical_mistakes(func, hint, capsys):
    v = verdict_of(ch01.check_perplexity, func, capsys)
    assert not v and hint in v.message, v.message


@pytest.mark.parametrize("junk", JUNK)
def test_perplexity_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_perplexity, junk, capsys)


# -- temperature ------------------------------------------------------------------------------
def stable_temperature(p, T):
    logits = np.log(np.asarray(p, dtype=float)) / T
    w = np.exp(logits - logits.max())
    return w / w.sum()


def naive_temperature(p, T):
    w = np.asarray(p, dtype=float) ** (1 / T)
    return w / w.sum()


def test_temperature_accepts_right_answers(capsys):
    v = verdict_of(ch01.check_temperature, stable_temperature, capsys)
    assert v and "caution" not in v.message
    assert verdict_of(ch01.check_temperature, apply_temperature, capsys)
    assert verdict_of(ch01.check_temperature, lambda p, T: torch.softmax(torch.log(torch.tensor(p)) / T, 0),
                      capsys)


def test_temperature_naive_version_passes_with_a_caution(capsys):
    v = verdict_of(ch01.check_temperature, naive_temperature, capsys)
    assert v and "underflows" in v.message


@pytest.mark.parametrize("func, hint", [
    (lambda p, T: naive_temperature(p, 1 / T), "upside down"),
    (lambda p, T: np.asarray(p) ** (1 / T), "renormalise"),
    (lambda p, T: np.asarray(p) / T, "only rescales"),
    (lambda p, T: np.asarray(p), "did not change"),
    (lambda p, T: stable_temperature(np.exp(p), T), "treats probabilities as logits"),
    (lambda p, T: stable_temperature(p, 1 / T) if T != 1 else p, "upside down"),
    (lambda p, T: np.log(naive_temperature(p, T)), "log-probabilities"),
    (lambda p, T: naive_temperature(p, T)[:-1], "shape"),
    (lambda p, T: 1.0, "shape"),
    (lambda p, T: None, "forget `return`"),
    (lambda p, T: "abc", "expected an array"),
    (lambda p, T: naive_temperature(p, T) * 2, "sum to 1"),
    (lambda p, T: np.sort(naive_temperature(p, T)), "Temperature reshapes"),
    (lambda p: p, "TypeError"),
    (raises, "ZeroDivisionError"),
])
def test_temperature_recognises_typical_mistakes(func, hint, capsys):
    v = verdict_of(ch01.check_temperature, func, capsys)
    assert not v and hint in v.message, v.message


@pytest.mark.parametrize("junk", JUNK)
def test_temperature_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_temperature, junk, capsys)


# -- number of contexts -----------------------------------------------------------------------
def test_context_count_right_answer(capsys):
    V, n = ch01.CONTEXT_ALPHABET, ch01.CONTEXT_ORDER
    assert (V, n) == (27, 5)
    assert verdict_of(ch01.check_context_count, 531441, capsys)
    assert verdict_of(ch01.check_context_count, 27 ** 4, capsys)
    assert verdict_of(ch01.check_context_count, np.int64(27) ** 4, capsys)
    assert verdict_of(ch01.check_context_count, "531441", capsys)


@pytest.mark.parametrize("answer, hint", [
    (27 ** 5, "number of possible 5-grams"),
    (27 ** 3, "n-2"),
    (26 ** 4, "26 symbols"),
    (27 * 4, "multiply"),
    (27 * 5, "do not add"),
    (4 ** 27, "swapped"),
    (5 ** 27, "swapped"),
    (27 ** 5 - 27 ** 4, "just the contexts"),
    (math.comb(27, 4), "binomial"),
    (531441.5, "whole number"),
    (1000, "context positions"),
])
def test_context_count_recognises_typical_mistakes(answer, hint, capsys):
    v = verdict_of(ch01.check_context_count, answer, capsys)
    assert not v and hint in v.message, v.message


@pytest.mark.parametrize("junk", JUNK)
def test_context_count_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_context_count, junk, capsys)


# -- entropy rate -----------------------------------------------------------------------------
def by_hand():
    # The exercise's parameters, worked as a student would: lag 3 means sentences of 4 tokens.
    p = ch01.ENTROPY_SOURCE
    assert p == dict(lag=3, n_countries=2, n_fillers=2, stickiness=0.75, fidelity=0.9)
    H = lambda *q: -sum(x * math.log2(x) for x in q)  # noqa: E731
    return (1 + 1 + H(0.75, 0.25) + H(0.9, 0.1)) / 4


def test_entropy_rate_right_answer(capsys):
    assert verdict_of(ch01.check_entropy_rate, by_hand(), capsys)
    assert verdict_of(ch01.check_entropy_rate, round(by_hand(), 3), capsys)
    # the by-hand route agrees with the source's exact formula and with a long sample
    src = LongRangeSource(**ch01.ENTROPY_SOURCE)
    assert math.isclose(by_hand(), src.entropy_rate(), rel_tol=1e-12)
    sample = src.sample(200_000, seed=0)
    assert abs(-src.true_log2_probs(sample).mean() - by_hand()) < 0.01


@pytest.mark.parametrize("transform, hint", [
    (lambda h: 4 * h, "whole sentence"),
    (lambda h: 4 * h / 3, "divided by lag"),
    (lambda h: 4 * h / 5, "divide by 4"),
    (lambda h: h * math.log(2), "nats"),
    (lambda h: h / math.log2(10), "bans"),
    (lambda h: (4 * h - 0.4689955935892812 + 1) / 4, "not uniform"),
    (lambda h: (4 * h - 0.4689955935892812) / 4, "not certain"),
    (lambda h: (4 * h - 0.8112781244591328 + 1) / 4, "sticky Markov chain"),
    (lambda h: (4 * h - 1 + 0.8112781244591328) / 4, "first filler"),
    (lambda h: (4 * h + 0.8112781244591328) / 4, "lag - 1 = 2 fillers"),
    (lambda h: (4 * h + 1) / 4, "counted once"),
    (lambda h: 0.5, "Add up"),
])
def test_entropy_rate_recognises_typical_mistakes(transform, hint, capsys):
    v = verdict_of(ch01.check_entropy_rate, transform(by_hand()), capsys)
    assert not v and hint in v.message, v.message


@pytest.mark.parametrize("junk", JUNK)
def test_entropy_rate_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_entropy_rate, junk, capsys)


# -- contexts seen in the training text ---------------------------------------------------------
@pytest.fixture(scope="module")
def letters_train():
    from seqbook.corpus import letters_and_space, python_docs_text, split
    return split(letters_and_space(python_docs_text()))[0]


def test_seen_contexts_right_answer_agrees_with_ngram_sparsity(letters_train, capsys):
    from seqbook.ngram import ngram_sparsity
    seen = ngram_sparsity(letters_train, letters_train[:100], 5, vocab_size=27).seen_contexts
    assert 5_000 < seen < 27 ** 4
    assert verdict_of(ch01.check_seen_contexts, seen, capsys)
    assert verdict_of(ch01.check_seen_contexts, np.int64(seen), capsys)
    assert verdict_of(ch01.check_seen_contexts, str(seen), capsys)


def distinct(text, width, stop):
    return len({text[i:i + width] for i in range(stop)})


@pytest.mark.parametrize("make, hint", [
    (lambda t: distinct(t, 5, len(t) - 4), "distinct 5-grams"),
    (lambda t: distinct(t, 3, len(t) - 3), "3-character contexts"),
    (lambda t: len(t) - 4, "repeats included"),
    (lambda t: distinct(t, 4, len(t) - 4) + 4, "padded with <s>"),
    (lambda t: 27 ** 4, "possible contexts"),
    (lambda t: 1000, "distinct strings"),
    (lambda t: 1000.5, "whole number"),
    (lambda t: {t[:4]}, "pass the number"),
])
def test_seen_contexts_recognises_typical_mistakes(letters_train, make, hint, capsys):
    v = verdict_of(ch01.check_seen_contexts, make(letters_train), capsys)
    assert not v and hint in v.message, v.message


def test_seen_contexts_recognises_the_whole_text(capsys):
    from seqbook.corpus import letters_and_space, python_docs_text
    text = letters_and_space(python_docs_text())
    v = verdict_of(ch01.check_seen_contexts, distinct(text, 4, len(text) - 4), capsys)
    assert not v and "whole text" in v.message, v.message


@pytest.mark.parametrize("junk", JUNK)
def test_seen_contexts_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_seen_contexts, junk, capsys)


# -- mixture weights for interpolating the orders ------------------------------------------------
def em_weights(probs, steps=500):
    # The solution's route: EM, each weight the average share its model has in the mixture.
    weights = np.full(len(probs), 1 / len(probs))
    for _ in range(steps):
        weights = (weights[:, None] * probs / (weights @ probs)).mean(axis=1)
    return weights


def adam_weights(probs):
    # Another right route: gradient descent on the logits of a softmax (weights >= 0, sum 1).
    logits = torch.zeros(len(probs), dtype=torch.float64, requires_grad=True)
    p = torch.as_tensor(probs)
    opt = torch.optim.Adam([logits], lr=0.1)
    for _ in range(500):
        loss = -torch.log(torch.softmax(logits, 0) @ p).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.softmax(logits, 0)


def mixture_bits(weights, probs):
    return float(-np.mean(np.log2(np.asarray(weights) @ probs)))


def test_mixture_weights_right_answers(capsys):
    assert verdict_of(ch01.check_mixture_weights, em_weights, capsys)
    assert verdict_of(ch01.check_mixture_weights, adam_weights, capsys)
    assert verdict_of(ch01.check_mixture_weights, lambda p: em_weights(p).tolist(), capsys)


def test_mixture_weights_cases_are_fair():
    # The optimum is a real optimum (no weight may move without cost: the KKT conditions), one
    # case has a weight of 0 and one has exact zeros; and each typical mistake costs more than
    # the tolerance, so that it cannot pass.
    cases = ch01._mixture_cases()
    assert any(em_weights(p, 5_000).min() < 1e-3 for p in cases)
    assert any((p == 0).any() for p in cases)
    for probs in cases:
        best = em_weights(probs, 5_000)
        gradient = (probs / (best @ probs)).mean(axis=1)   # d mean ln(mixture) / d weight
        assert np.allclose(gradient[best > 1e-3], 1, atol=1e-6) and (gradient <= 1 + 1e-6).all()
        optimum = mixture_bits(best, probs)
        K = len(probs)
        for wrong in (np.full(K, 1 / K), em_weights(probs, 1), probs.mean(1) / probs.mean(1).sum()):
            assert mixture_bits(wrong, probs) > optimum + 5 * ch01.MIXTURE_TOLERANCE_BITS


def one_hot_best(probs):
    with np.errstate(divide="ignore"):
        alone = [-np.mean(np.log(p)) for p in probs]
    return np.eye(len(probs))[int(np.argmin(alone))]


@pytest.mark.parametrize("func, hint", [
    (lambda p: np.full(len(p), 1 / len(p)), "equal weights"),
    (one_hot_best, "single best model"),
    (lambda p: em_weights(p, steps=1), "one step of EM"),
    (lambda p: p.mean(axis=1) / p.mean(axis=1).sum(), "average probability"),
    (lambda p: 2 * em_weights(p), "must sum to 1"),
    (lambda p: np.r_[1.5, -0.5, np.zeros(len(p) - 2)], "negative"),
    (lambda p: em_weights(p) @ p, "one weight per model"),
    (lambda p: em_weights(p)[:-1], "one per model"),
    (lambda p: np.full(len(p), np.nan), "nan"),
    (lambda p: np.r_[0.2, 0.8, np.zeros(len(p) - 2)], "Minimise the mixture"),
    (lambda p: None, "forget `return`"),
    (lambda p: "abc", "expected an array"),
    (lambda: 1.0, "TypeError"),
    (raises, "ZeroDivisionError"),
])
def test_mixture_weights_recognises_typical_mistakes(func, hint, capsys):
    v = verdict_of(ch01.check_mixture_weights, func, capsys)
    assert not v and hint in v.message, v.message


def test_mixture_weights_do_not_touch_the_callers_array(capsys):
    def in_place(p):
        p /= 2  # a careless student function that modifies its input
        return em_weights(p * 2)
    assert verdict_of(ch01.check_mixture_weights, in_place, capsys)
    assert all(p.max() <= 1 for p in ch01._mixture_cases())


@pytest.mark.parametrize("junk", JUNK)
def test_mixture_weights_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_mixture_weights, junk, capsys)


# -- a bigram model of separate sentences, with <s> and </s> ----------------------------------
from collections import Counter  # noqa: E402


def right_bigram_model(sentences, alpha):
    words = sorted({w for s in sentences for w in s})
    predicted = words + ["</s>"]
    counts = {h: Counter() for h in ["<s>"] + words}
    for s in sentences:
        padded = ["<s>"] + list(s) + ["</s>"]
        for h, w in zip(padded, padded[1:]):
            counts[h][w] += 1
    return {h: {w: (c[w] + alpha) / (sum(c.values()) + alpha * len(predicted)) for w in predicted}
            for h, c in counts.items()}


def test_bigram_model_right_answers(capsys):
    assert verdict_of(ch01.check_bigram_model, right_bigram_model, capsys)

    def only_nonzero(sentences, alpha):       # leaving out the zeros is fine
        return {h: {w: p for w, p in row.items() if p > 0}
                for h, row in right_bigram_model(sentences, alpha).items()}
    assert verdict_of(ch01.check_bigram_model, only_nonzero, capsys)


def test_bigram_model_agrees_with_ngram_lm_on_one_sentence():
    # With a single sentence, NGramLM (which pads with its own <s>) gives the same rows.
    words = "the cat saw the dog".split()
    ours = right_bigram_model([words], 0.5)
    lm = NGramLM(2, alpha=0.5).fit(words + ["</s>"])
    for h in ("the", "cat", "saw", "dog"):
        for w in ("the", "cat", "saw", "dog", "</s>"):
            assert ours[h][w] == pytest.approx(lm.prob(w, [h]))


def _one_stream(sentences, alpha):
    return right_bigram_model([[w for s in sentences for w in s]], alpha)


def _no_end(sentences, alpha):
    words = sorted({w for s in sentences for w in s})
    counts = {h: Counter() for h in ["<s>"] + words}
    for s in sentences:
        padded = ["<s>"] + list(s)
        for h, w in zip(padded, padded[1:]):
            counts[h][w] += 1
    return {h: {w: (c[w] + alpha) / (sum(c.values()) + alpha * len(words)) if sum(c.values()) or alpha
                else 1 / len(words) for w in words} for h, c in counts.items()}


def _counts_bos(sentences, alpha):
    model = right_bigram_model(sentences, alpha)
    size = len(next(iter(model.values()))) + 1
    out = {}
    for h, row in model.items():
        total = sum(1 for s in sentences for w in (["<s>"] + list(s)) if w == h)
        counts = {w: round(p * (total + alpha * (size - 1)) - alpha) for w, p in row.items()}
        out[h] = {w: (c + alpha) / (total + alpha * size) for w, c in counts.items()}
    return out


def _numerator_only(sentences, alpha):
    model = right_bigram_model(sentences, 0.0)
    out = {}
    for h, row in model.items():
        total = sum(1 for s in sentences for w in (["<s>"] + list(s)) if w == h)
        out[h] = {w: (p * total + alpha) / total for w, p in row.items()}
    return out


def _mle_always(sentences, alpha):
    return right_bigram_model(sentences, 0.0)


def _with_eos_row(sentences, alpha):
    model = right_bigram_model(sentences, alpha)
    model["</s>"] = {"</s>": 1.0}
    return model


def _without_bos(sentences, alpha):
    model = right_bigram_model(sentences, alpha)
    del model["<s>"]
    return model


@pytest.mark.parametrize("func, hint", [
    (_one_stream, "pad every sentence on its own"),
    (_no_end, "you forgot </s>"),
    (_counts_bos, "not <s>, which is never predicted"),
    (_numerator_only, "not alpha |V| to the denominator"),
    (_mle_always, "maximum-likelihood one"),
    (_with_eos_row, "never a context"),
    (_without_bos, "no row for <s>"),
    (lambda s, a: [1, 2], "dictionary of dictionaries"),
    (lambda s, a: None, "returned None"),
])
def test_bigram_model_recognises_typical_mistakes(func, hint, capsys):
    v = verdict_of(ch01.check_bigram_model, func, capsys)
    assert not v and hint in v.message, v.message


@pytest.mark.parametrize("junk", JUNK)
def test_bigram_model_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_bigram_model, junk, capsys)


# -- generating sentences -----------------------------------------------------------------------
def right_generate(model, seed, max_words=20):
    rng = np.random.default_rng(seed)
    h, words = "<s>", []
    while len(words) < max_words:
        tokens = list(model[h])
        w = rng.choice(tokens, p=[model[h][t] for t in tokens])
        if w == "</s>":
            break
        words.append(str(w))
        h = w
    return words


def test_generate_right_answer(capsys):
    assert verdict_of(ch01.check_generate, right_generate, capsys)


def _greedy(model, seed, max_words=20):
    h, words = "<s>", []
    while len(words) < max_words:
        w = max(model[h], key=model[h].get)
        if w == "</s>":
            break
        words.append(w)
        h = w
    return words


def _uniform(model, seed, max_words=20):
    rng = np.random.default_rng(seed)
    h, words = "<s>", []
    while len(words) < max_words:
        tokens = [t for t, p in model[h].items() if p > 0]
        w = str(rng.choice(tokens))
        if w == "</s>":
            break
        words.append(w)
        h = w
    return words


def _context_never_moves(model, seed, max_words=20):
    rng = np.random.default_rng(seed)
    words = []
    while len(words) < max_words:
        tokens = list(model["<s>"])
        w = str(rng.choice(tokens, p=[model["<s>"][t] for t in tokens]))
        if w == "</s>":
            break
        words.append(w)
    return words


def _unseeded(model, seed, max_words=20):
    return right_generate(model, None, max_words)


def _with_markers(model, seed, max_words=20):
    return ["<s>"] + right_generate(model, seed, max_words) + ["</s>"]


def _ignores_max_words(model, seed, max_words=20):
    return right_generate(model, seed, 20)


@pytest.mark.parametrize("func, hint", [
    (_greedy, "instead of taking the most likely word"),
    (_uniform, "not uniformly"),
    (_context_never_moves, "make it the new context"),
    (_unseeded, "the same seed gave different sentences"),
    (_with_markers, "leave <s> and </s> out"),
    (_ignores_max_words, "stop after max_words words"),
    (lambda m, s, n=20: " ".join(right_generate(m, s, n)), "return the list of words"),
    (lambda m, s, n=20: None, "returned None"),
])
def test_generate_recognises_typical_mistakes(func, hint, capsys):
    v = verdict_of(ch01.check_generate, func, capsys)
    assert not v and hint in v.message, v.message


@pytest.mark.parametrize("junk", JUNK)
def test_generate_never_raises_on_junk(junk, capsys):
    assert not verdict_of(ch01.check_generate, junk, capsys)
