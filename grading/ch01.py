"""How chapter 1's exercises are graded (n-grams, perplexity, sampling, entropy rate).

Each hidden test is a self-contained function: its parameters name the notebook variables it
reads, and it computes its own reference answer (never from ``seqbook.exercises``).
"""

from seqbook.authoring.grader import GradingSpec

spec = GradingSpec(
    setup=["letters_train", "letters_valid"],
    # Part 3 of the interpolation exercise needs the nine n-gram models fitted on the whole text
    experiments=["models", "best", "best_ce", "best_n", "valid_text", "test_text"],
)

spec.auto("ch1-ex-add-one")


@spec.hidden("ch1-ex-add-one", points=2)
def add_one_probability(answer):
    from collections import Counter
    words = "the cat sat on the mat the cat ran".split()
    pairs = Counter(zip(words, words[1:]))
    after_the = sum(n for (a, _), n in pairs.items() if a == "the")
    right = (pairs[("the", "cat")] + 1) / (after_the + len(set(words)))
    assert abs(float(answer) - right) < 1e-3, f"p(cat | the) with add-one smoothing is not {answer!r}"


spec.auto("ch1-ex-bigram-model")


@spec.hidden("ch1-ex-bigram-model", points=2)
def bigram_rows_of_new_sentences(bigram_model):
    sentences = [["x", "y", "x"], ["y", "y"], ["z"]]
    model = bigram_model([list(s) for s in sentences], 0.5)
    # |V| = x, y, z and </s>; c(<s>) = 3, c(x) = 2, c(y) = 3, c(z) = 1
    expected = {"<s>": {"x": 1.5 / 5, "y": 1.5 / 5, "z": 1.5 / 5, "</s>": 0.5 / 5},
                "x": {"x": 0.5 / 4, "y": 1.5 / 4, "z": 0.5 / 4, "</s>": 1.5 / 4},
                "y": {"x": 1.5 / 5, "y": 1.5 / 5, "z": 0.5 / 5, "</s>": 1.5 / 5},
                "z": {"x": 0.5 / 3, "y": 0.5 / 3, "z": 0.5 / 3, "</s>": 1.5 / 3}}
    assert set(model) == set(expected), f"the contexts should be <s>, x, y, z, not {sorted(model)}"
    for h, row in expected.items():
        for w, p in row.items():
            assert abs(float(model[h].get(w, 0)) - p) < 1e-9, f"p({w} | {h}) should be {p:.4f}"


@spec.hidden("ch1-ex-bigram-model", points=1)
def sentences_do_not_run_into_each_other(bigram_model):
    model = bigram_model([["a", "b"], ["c", "d"]], 0)
    assert float(model["b"].get("c", 0)) == 0 and float(model["b"]["</s>"]) == 1, \
        "the last word of a sentence is followed by </s>, never by the next sentence's first word"


spec.auto("ch1-ex-generate", written=1)


@spec.hidden("ch1-ex-generate", points=1)
def generate_follows_a_certain_chain(generate):
    chain = {"<s>": {"p": 1.0, "q": 0.0, "</s>": 0.0}, "p": {"p": 0.0, "q": 1.0, "</s>": 0.0},
             "q": {"p": 1.0, "q": 0.0, "</s>": 0.0}}
    assert list(generate(chain, 3, 6)) == ["p", "q", "p", "q", "p", "q"], \
        "a chain p -> q -> p ... must give p q p q p q with max_words=6"


@spec.hidden("ch1-ex-generate", points=2)
def generate_draws_with_the_model_probabilities(generate):
    import math
    model = {"<s>": {"u": 0.8, "v": 0.2, "</s>": 0.0}, "u": {"u": 0.0, "v": 0.0, "</s>": 1.0},
             "v": {"u": 0.0, "v": 0.0, "</s>": 1.0}}
    firsts = [tuple(generate(model, seed)) for seed in range(100, 2100)]
    share = firsts.count(("u",)) / len(firsts)
    assert set(firsts) <= {("u",), ("v",)}, f"unexpected sentences {set(firsts) - {('u',), ('v',)}}"
    assert abs(share - 0.8) < 5 * math.sqrt(0.8 * 0.2 / len(firsts)), \
        f"'u' should come out 80% of the time, came out {share:.1%}"
    assert [generate(model, 7) for _ in range(3)] == [generate(model, 7)] * 3, "the same seed must give the same sentence"


spec.manual("ch1-ex-uniform", points=3)

spec.auto("ch1-ex-perplexity")


@spec.hidden("ch1-ex-perplexity", points=1)
def perplexity_of_one_token(perplexity):
    value = float(perplexity([0.125]))
    assert abs(value - 8) < 1e-6, f"one token of probability 1/8 has perplexity 8, got {value}"


@spec.hidden("ch1-ex-perplexity", points=2)
def perplexity_on_new_texts(perplexity):
    import numpy as np
    rng = np.random.default_rng(7)
    for length in (3, 40, 500):
        probs = rng.uniform(0.01, 1.0, length)
        right = float(np.exp(-np.mean(np.log(probs))))
        value = float(perplexity(probs.copy()))
        assert abs(value - right) < 1e-6 * right, f"for {length} tokens: expected {right:.6g}, got {value:.6g}"
    uniform = [float(perplexity(np.full(n, 1 / 9))) for n in (1, 10, 1000)]
    assert np.allclose(uniform, 9), f"a uniform model over 9 tokens must give 9 at any length, got {uniform}"


spec.auto("ch1-ex-temperature")


@spec.hidden("ch1-ex-temperature", points=2)
def temperature_on_new_distributions(with_temperature):
    import numpy as np
    rng = np.random.default_rng(11)
    for tau in (0.3, 1.0, 2.5):
        p = rng.dirichlet(np.ones(6))
        right = p ** (1 / tau) / (p ** (1 / tau)).sum()
        value = np.asarray(with_temperature(p.copy(), tau), dtype=float)
        assert value.shape == p.shape and np.allclose(value, right, rtol=1e-6, atol=1e-12), \
            f"tau = {tau}: expected {np.round(right, 4)}, got {np.round(value, 4)}"


@spec.hidden("ch1-ex-temperature", points=1)
def temperature_does_not_underflow(with_temperature):
    import numpy as np
    p = np.linspace(1.0, 3.0, 20_000)
    p /= p.sum()                      # about 5e-5 each: p ** 100 underflows to 0
    value = np.asarray(with_temperature(p, 0.01), dtype=float)
    assert np.isfinite(value).all() and abs(value.sum() - 1) < 1e-9 and value.argmax() == len(p) - 1, \
        "at tau = 0.01 on 20 000 small probabilities the result is not a finite distribution: work with logs"


spec.auto("ch1-ex-contexts")


@spec.hidden("ch1-ex-contexts", points=1)
def possible_contexts(answer):
    assert int(answer) == answer and int(answer) == 27 ** (5 - 1), f"{answer!r} is not the number of 4-symbol contexts"


@spec.hidden("ch1-ex-contexts", points=2)
def contexts_seen_in_training(seen_contexts):
    from seqbook.corpus import letters_and_space, python_docs_text, split
    train = split(letters_and_space(python_docs_text()))[0]
    right = len(set(train[i - 4:i] for i in range(4, len(train))))
    assert int(seen_contexts) == right, f"{seen_contexts!r} distinct contexts: count the 4 characters before each character"


spec.auto("ch1-ex-entropy-rate")


@spec.hidden("ch1-ex-entropy-rate", points=2)
def entropy_rate_in_bits(answer):
    from math import log2

    def binary_entropy(p):
        return -(p * log2(p) + (1 - p) * log2(1 - p))
    # country, first filler (uniform over 2 each), second filler, language
    right = (1 + 1 + binary_entropy(0.75) + binary_entropy(0.9)) / 4
    assert abs(float(answer) - right) < 5e-3 * right, f"{answer!r} bits per token is not the entropy rate"


spec.manual("ch1-ex-softmax-optimum", points=3)

spec.auto("ch1-ex-interpolation", written=3,
          note="only `mixture_weights` is autograded. Part 3 needs the chapter's n-gram models: run it "
               "in the chapter's notebook and report the weights and perplexities, with your answer to "
               "part 2, in the written part below.")


@spec.hidden("ch1-ex-interpolation", points=2)
def mixture_reaches_the_optimum(mixture_weights):
    import numpy as np
    rng = np.random.default_rng(31)
    T = 3000
    good = np.where(rng.random(T) < 0.6, rng.uniform(0.3, 0.9, T), rng.uniform(0.001, 0.01, T))
    flat = rng.uniform(0.02, 0.2, T)
    probs = np.stack([flat, good, rng.uniform(0.0001, 0.002, T)])
    best = np.full(3, 1 / 3)
    for _ in range(20_000):
        best = (best[:, None] * probs / (best @ probs)).mean(axis=1)
    weights = np.asarray(mixture_weights(probs.copy()), dtype=float)
    assert weights.shape == (3,), f"expected 3 weights, got shape {weights.shape}"
    ours, optimum = (float(-np.mean(np.log2(w @ probs))) for w in (weights, best))
    assert ours <= optimum + 1e-3, f"your weights give {ours:.4f} bits per token, the best {optimum:.4f}"


@spec.hidden("ch1-ex-interpolation", points=1)
def mixture_weights_are_a_distribution_despite_zeros(mixture_weights):
    import numpy as np
    rng = np.random.default_rng(5)
    probs = np.vstack([rng.uniform(0.01, 0.1, 500), np.where(rng.random(500) < 0.5, rng.uniform(0.2, 0.9, 500), 0.0)])
    weights = np.asarray(mixture_weights(probs.copy()), dtype=float)
    assert weights.shape == (2,) and np.isfinite(weights).all(), f"weights {weights}: expected 2 finite numbers"
    assert (weights >= -1e-9).all() and abs(weights.sum() - 1) < 1e-6, f"weights {weights} are not >= 0 with sum 1"
    assert 0 < weights[0] < 1, "when one model gives exact zeros, the other needs some weight"
