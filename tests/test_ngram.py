"""n-gram models: hand-computed probabilities, normalisation, perplexity, sampling, bad input."""

import math

import numpy as np
import pytest
import torch

from seqbook.corpus import letters_and_space
from seqbook.ngram import (NGramLM, apply_temperature, bigram_count_matrix, conditional_entropy, ngram_sparsity,
                           train_softmax_bigram)

CORPUS = "the cat sat on the mat the cat ran".split()


def test_bigram_add_one_by_hand():
    lm = NGramLM(2, alpha=1.0).fit(CORPUS)
    # V = {the, cat, sat, on, mat, ran}; "the" is followed by cat, mat, cat
    assert len(lm.vocab) == 6
    assert lm.prob("cat", ["the"]) == pytest.approx((2 + 1) / (3 + 6))
    assert lm.prob("sat", ["the"]) == pytest.approx(1 / 9)
    assert lm.prob("ran", ["cat"]) == pytest.approx((1 + 1) / (2 + 6))
    assert lm.log_prob("cat", ["the"]) == pytest.approx(math.log(1 / 3))


def test_mle_and_unigram_by_hand():
    mle = NGramLM(2, alpha=0).fit(CORPUS)
    assert mle.prob("cat", ["the"]) == pytest.approx(2 / 3)
    assert mle.prob("on", ["the"]) == 0.0
    assert mle.log_prob("on", ["the"]) == -math.inf
    uni = NGramLM(1, alpha=0).fit(CORPUS)
    assert uni.prob("the") == pytest.approx(3 / 9)
    assert uni.prob("the", ["anything", "at", "all"]) == pytest.approx(3 / 9)


def test_first_token_is_predicted_from_the_start_padding():
    lm = NGramLM(2, alpha=0).fit(CORPUS)
    assert lm.prob("the", []) == 1.0  # the training text starts with "the"


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("alpha", [0.0, 0.1, 1.0])
def test_distributions_sum_to_one_for_seen_and_unseen_contexts(n, alpha):
    lm = NGramLM(n, alpha=alpha).fit(CORPUS)
    for context in (["the", "cat", "sat"], ["mat", "mat", "mat"], ["unseen", "words", "here"], []):
        dist = lm.distribution(context)
        assert dist.sum() == pytest.approx(1.0)
        assert sum(lm.prob(w, context) for w in lm.vocab) == pytest.approx(1.0)
        assert np.allclose(dist, [lm.prob(w, context) for w in lm.vocab])


def test_perplexity_by_hand_and_uniform_model():
    lm = NGramLM(2, alpha=1.0).fit(CORPUS)
    held_out = ["the", "cat", "ran"]
    p = [lm.prob("the", []), lm.prob("cat", ["the"]), lm.prob("ran", ["cat"])]
    assert lm.perplexity(held_out) == pytest.approx(np.prod(p) ** (-1 / 3))
    assert lm.cross_entropy(held_out) == pytest.approx(-np.mean(np.log2(p)))
    # with alpha -> infinity every distribution is uniform: perplexity = |V|
    uniform = NGramLM(3, alpha=1e12).fit(CORPUS)
    assert uniform.perplexity(CORPUS) == pytest.approx(len(uniform.vocab), rel=1e-6)


def test_higher_order_fits_training_text_better():
    text = list("abracadabra " * 50)
    ppl = [NGramLM(n, alpha=0.01).fit(text).perplexity(text) for n in (1, 2, 3)]
    assert ppl[0] > ppl[1] > ppl[2]


def test_sampling_is_seeded_and_respects_temperature():
    lm = NGramLM(2, alpha=0.5).fit(CORPUS)
    assert lm.sample(20, seed=3) == lm.sample(20, seed=3)
    assert lm.sample(20, seed=3) != lm.sample(20, seed=4)
    assert all(t in lm.vocab for t in lm.sample(50, seed=0))
    # near-zero temperature: always the most likely continuation ("cat" after "the")
    cold = lm.sample(1, seed=0, temperature=1e-3, context=["the"])
    assert cold == ["cat"]
    # temperature 0 is that limit: greedy, as for chapter 2's model
    assert lm.sample(4, seed=5, temperature=0, context=["the"]) == lm.sample(4, seed=6, temperature=0,
                                                                          context=["the"])
    assert lm.sample(1, temperature=0, context=["the"]) == ["cat"]


def test_apply_temperature():
    p = np.array([0.5, 0.3, 0.2])
    assert np.allclose(apply_temperature(p, 1.0), p)
    assert np.allclose(apply_temperature(p, 0.5), p**2 / (p**2).sum())
    assert apply_temperature(p, 100.0).max() - apply_temperature(p, 100.0).min() < 0.01
    assert apply_temperature(p, 1e-4).argmax() == 0 and apply_temperature(p, 1e-4).max() > 0.999
    assert np.allclose(apply_temperature(np.array([0.0, 1.0]), 2.0), [0.0, 1.0])


def test_ids_and_tensor_free_tokens_work():
    ids = [0, 1, 2, 0, 1, 2, 0, 1]
    lm = NGramLM(3, alpha=0).fit(ids)
    assert lm.prob(2, [0, 1]) == 1.0


@pytest.mark.parametrize("bad,error", [(0, ValueError), (-1, ValueError), (2.0, TypeError), ("2", TypeError),
                                       (True, TypeError)])
def test_bad_order(bad, error):
    with pytest.raises(error, match="expected a positive integer order n"):
        NGramLM(bad)


def test_bad_alpha_and_bad_use():
    with pytest.raises(ValueError, match="alpha >= 0"):
        NGramLM(2, alpha=-1)
    with pytest.raises(RuntimeError, match="not fitted"):
        NGramLM(2).prob("a", [])
    with pytest.raises(ValueError, match="non-empty"):
        NGramLM(2).fit([])
    lm = NGramLM(2).fit(CORPUS)
    with pytest.raises(ValueError, match="'dog' is not in the model's vocabulary of 6 tokens"):
        lm.perplexity(["the", "dog"])
    with pytest.raises(ValueError, match="temperature >= 0"):
        lm.sample(5, temperature=-1)
    # an unknown token is fine in a context: it is simply an unseen context
    assert lm.distribution(["dog"]).sum() == pytest.approx(1.0)
    # a vocabulary given at fit time makes held-out tokens scoreable
    lm2 = NGramLM(2).fit(CORPUS, vocab=["dog"])
    assert np.isfinite(lm2.perplexity(["the", "dog"]))


def test_bigram_count_matrix():
    ids = torch.tensor([0, 1, 1, 2, 0, 1])
    C = bigram_count_matrix(ids, 3)
    expected = torch.zeros(3, 3, dtype=torch.int64)
    for a, b in [(0, 1), (1, 1), (1, 2), (2, 0), (0, 1)]:
        expected[a, b] += 1
    assert torch.equal(C, expected)
    with pytest.raises(ValueError, match=r"ids as an int64 tensor of shape \(time,\)"):
        bigram_count_matrix(torch.tensor([[0, 1]]), 3)
    with pytest.raises(ValueError, match="ids in 0..2"):
        bigram_count_matrix(torch.tensor([0, 3]), 3)


def test_softmax_bigram_net_agrees_with_counts():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 5, (4000,), generator=g)
    C = bigram_count_matrix(ids, 5)
    counted = C.float() / C.sum(1, keepdim=True)
    learned, losses = train_softmax_bigram(C, steps=400, lr=0.2, seed=0)
    assert losses[-1] < losses[0]
    assert torch.allclose(learned.sum(1), torch.ones(5), atol=1e-5)
    assert (learned - counted).abs().max() < 1e-3


def test_tempered_scores_match_the_distribution_one_samples_from():
    text = "abracadabra abracadabra cadabra"
    m = NGramLM(3, alpha=0.1).fit(text)
    for T in (0.5, 2.0):
        lp = m.token_log_probs(text, temperature=T)
        manual = [math.log(apply_temperature(m.distribution(text[:i]), T)[m.vocab.index(ch)])
                  for i, ch in enumerate(text)]
        assert np.allclose(lp, manual)
    assert m.cross_entropy(text, temperature=1.0) == m.cross_entropy(text)
    assert math.isclose(m.perplexity(text, temperature=2.0), 2 ** m.cross_entropy(text, temperature=2.0))
    for bad, error in ((0, ValueError), (-1, ValueError), (float("inf"), ValueError), (True, TypeError),
                       ("1", TypeError)):
        with pytest.raises(error, match="temperature > 0"):
            m.cross_entropy(text, temperature=bad)


def test_with_alpha_shares_counts_and_changes_only_smoothing():
    text = "the cat sat on the mat".split()
    m = NGramLM(2, alpha=0.0).fit(text)
    m1 = m.with_alpha(1.0)
    assert m1.alpha == 1.0 and m.alpha == 0.0
    assert math.isclose(m1.prob("cat", ["the"]), NGramLM(2, alpha=1.0).fit(text).prob("cat", ["the"]))
    assert m.prob("cat", ["the"]) == 0.5


def test_context_count():
    m = NGramLM(3, alpha=0.5).fit("abcabd")
    assert m.context_count("ab") == 2 and m.context_count("xab") == 2 and m.context_count("ba") == 0
    assert NGramLM(1).fit("abc").context_count() == 3


def test_next_log_probs_are_the_distribution_after_context_and_prefix():
    m = NGramLM(3, alpha=0.1).fit("abracadabra" * 5)
    fn = m.next_log_probs_fn("xyab")   # only the last n - 1 = 2 tokens matter: "ab"
    ids = [m.vocab.index(c) for c in "ra"]
    out = fn(torch.tensor([ids, ids[:1] + ids[:1]]))
    assert out.shape == (2, len(m.vocab)) and out.dtype == torch.float64
    np.testing.assert_allclose(out[0].exp().numpy(), m.distribution("abra"))
    np.testing.assert_allclose(out[1].exp().numpy(), m.distribution("rr"))
    np.testing.assert_allclose(fn(torch.zeros(1, 0, dtype=torch.int64))[0].exp().numpy(), m.distribution("ab"))


def test_sample_is_unchanged_by_a_long_context_and_deterministic():
    m = NGramLM(3, alpha=0.1).fit("abracadabra" * 5)
    assert m.sample(20, seed=3, context="abracadab") == m.sample(20, seed=3, context="ab")
    assert m.sample(20, seed=3) == m.sample(20, seed=3)


def test_ngram_sparsity_by_hand():
    s = ngram_sparsity("abab", "abba", 2, vocab_size=3)
    # training bigrams: ab, ba, ab -> seen {ab, ba}; held-out bigrams ab, bb, ba -> bb unseen
    assert (s.possible_contexts, s.seen_contexts, s.seen_ngrams) == (3, 2, 2)
    assert math.isclose(s.unseen_ngrams, 1 / 3) and s.unseen_contexts == 0
    assert math.isclose(s.singletons, 1 / 2) and math.isclose(s.context_coverage, 2 / 3)
    with pytest.raises(ValueError, match="order n"):
        ngram_sparsity("ab", "ab", 0)
    with pytest.raises(ValueError, match="at least n=3"):
        ngram_sparsity("ab", "abc", 3)


def test_conditional_entropy():
    assert math.isclose(conditional_entropy("abab" * 10, 1), 1.0)     # two equally frequent symbols
    assert conditional_entropy("abab" * 10, 2) == 0.0                  # b always follows a, a follows b
    # "aabb": bigrams aa, ab, bb; context a -> {a, b} (1 bit), context b -> {b} (0 bits), weights 2/3, 1/3
    assert math.isclose(conditional_entropy("aabb", 2), 2 / 3)
    with pytest.raises(ValueError):
        conditional_entropy("a", 2)


def test_letters_and_space():
    assert letters_and_space("Hello,  World! 3x") == "hello world x"
    with pytest.raises(TypeError):
        letters_and_space(3)


def test_train_softmax_bigram_rejects_non_tensors_and_keeps_the_device():
    with pytest.raises(TypeError, match="square"):
        train_softmax_bigram(np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"square \(V, V\) count tensor, got shape \(3, 2\)"):
        train_softmax_bigram(torch.ones(3, 2))
    counts = torch.tensor([[0, 3], [1, 1]])
    probs, losses = train_softmax_bigram(counts, steps=200, lr=0.5)
    assert probs.device == counts.device and abs(float(probs[1, 0]) - 0.5) < 0.02
