"""BLEU from its definition, checked by hand and against sacrebleu."""

import math

import numpy as np
import pytest
import sacrebleu

from seqbook.bleu import brevity_penalty, clipped_matches, closest_length, corpus_bleu, ngrams, sentence_bleu
from seqbook.translation import generate_pairs


def test_modified_precision_of_the_papers_example():
    # Papineni et al. (2002), section 2.1: 'the' x 7 against two references scores 2/7, not 7/7
    candidate = "the the the the the the the".split()
    refs = ["the cat is on the mat".split(), "there is a cat on the mat".split()]
    assert clipped_matches(candidate, refs, 1) == (2, 7)
    assert ngrams("a b a b".split(), 2) == {("a", "b"): 2, ("b", "a"): 1}


def test_a_small_example_by_hand():
    hyp = "the cat sat on the mat".split()
    ref = "the cat sat on a mat today".split()
    # unigrams 5/6, bigrams 3/5 (the cat, cat sat, sat on), trigrams 2/4, 4-grams 1/3; c = 6 < r = 7
    expected = math.exp(1 - 7 / 6) * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25 * 100
    result = sentence_bleu(hyp, ref)
    assert result.score == pytest.approx(expected, rel=1e-12)
    assert result.precisions == pytest.approx([500 / 6, 60.0, 50.0, 100 / 3])
    assert (result.hyp_len, result.ref_len) == (6, 7)
    assert float(result) == result.score and "BLEU = " in str(result)


def test_perfect_zero_and_brevity():
    ref = "a b c d e".split()
    assert sentence_bleu(ref, ref).score == pytest.approx(100.0)
    assert sentence_bleu("x y z w v".split(), ref).score == 0.0
    assert sentence_bleu("a b c".split(), ref).score == 0.0  # no 4-gram at all: precision 0
    assert brevity_penalty(10, 8) == 1.0 and brevity_penalty(0, 3) == 0.0
    assert brevity_penalty(4, 8) == pytest.approx(math.exp(-1))
    assert closest_length(5, [3, 7, 9]) == 3 and closest_length(8, [7, 9]) == 7


def test_corpus_bleu_sums_counts_before_dividing():
    hyps = ["a b c d e f".split(), "x y".split()]
    refs = ["a b c d e f".split(), "x y".split()]
    # the second sentence has no 3- or 4-grams, so alone it would score 0, but the corpus scores 100
    assert sentence_bleu(hyps[1], refs[1]).score == 0.0
    assert corpus_bleu(hyps, refs).score == pytest.approx(100.0)
    mean_of_sentences = np.mean([sentence_bleu(h, r).score for h, r in zip(hyps, refs)])
    assert mean_of_sentences == pytest.approx(50.0)


def noisy(pairs, seed):
    """Hypotheses: the references with words dropped, swapped and replaced."""
    rng = np.random.default_rng(seed)
    out = []
    for p in pairs:
        t = list(p.tgt)
        if rng.random() < 0.4:
            del t[int(rng.integers(len(t)))]
        if rng.random() < 0.4:
            i = int(rng.integers(len(t) - 1))
            t[i], t[i + 1] = t[i + 1], t[i]
        if rng.random() < 0.3:
            t[int(rng.integers(len(t)))] = "chat"
        if rng.random() < 0.2:
            t = t[: len(t) // 2]
        out.append(t)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_sacrebleu(seed):
    pairs = generate_pairs(200, seed=seed)
    hyps, refs = noisy(pairs, seed), [list(p.tgt) for p in pairs]
    ours = corpus_bleu(hyps, refs)
    theirs = sacrebleu.corpus_bleu([" ".join(h) for h in hyps], [[" ".join(r) for r in refs]],
                                   tokenize="none", smooth_method="none")
    assert 20 < ours.score < 99  # a case with non-zero precisions and a brevity penalty
    assert ours.brevity_penalty < 1
    assert ours.score == pytest.approx(theirs.score, abs=1e-6)
    assert ours.precisions == pytest.approx(theirs.precisions, abs=1e-6)
    assert ours.brevity_penalty == pytest.approx(theirs.bp, abs=1e-9)
    assert (ours.hyp_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)


def test_agrees_with_sacrebleu_with_two_references():
    pairs = generate_pairs(100, seed=5)
    hyps = noisy(pairs, 5)
    refs_a = [list(p.tgt) for p in pairs]
    refs_b = noisy(pairs, 6)
    ours = corpus_bleu(hyps, [[a, b] for a, b in zip(refs_a, refs_b)])
    theirs = sacrebleu.corpus_bleu([" ".join(h) for h in hyps], [[" ".join(r) for r in refs_a],
                                                                  [" ".join(r) for r in refs_b]],
                                   tokenize="none", smooth_method="none")
    assert ours.score == pytest.approx(theirs.score, abs=1e-6)
    assert ours.ref_len == theirs.ref_len


def test_bad_input():
    with pytest.raises(TypeError, match="list of str tokens"):
        corpus_bleu(["the cat"], [["the", "cat"]])
    with pytest.raises(TypeError, match="reference 0 as a list of tokens"):
        corpus_bleu([["the", "cat"]], ["the cat"])
    with pytest.raises(ValueError, match="one reference entry per hypothesis"):
        corpus_bleu([["a"], ["b"]], [["a"]])
    with pytest.raises(ValueError, match="max_n"):
        corpus_bleu([["a"]], [["a"]], max_n=0)


# -- the bootstrap interval -------------------------------------------------------------------
def test_bootstrap_interval_brackets_the_score_and_narrows_with_more_sentences():
    import random

    from seqbook.bleu import bootstrap_interval

    rng = random.Random(0)
    words = "le chat noir voit la souris sous une table .".split()

    def noisy(ref):   # drop or swap a word now and then
        out = [w for w in ref if rng.random() > 0.15]
        return out if out else ref[:1]

    refs = [[rng.choice(words) for _ in range(rng.randint(6, 12))] for _ in range(400)]
    hyps = [noisy(r) for r in refs]
    score = corpus_bleu(hyps, refs).score
    low, high = bootstrap_interval(hyps, refs, samples=300, seed=1)
    assert low < score < high and high - low < 15
    small_low, small_high = bootstrap_interval(hyps[:40], refs[:40], samples=300, seed=1)
    assert small_high - small_low > high - low                      # fewer sentences: wider
    assert bootstrap_interval(hyps, refs, samples=300, seed=1) == (low, high)   # seeded
    assert bootstrap_interval(refs, refs, samples=50) == (100.0, 100.0)
    # the resampled scores are corpus BLEU of the resampled sentences
    one = bootstrap_interval(hyps[:1] * 5, refs[:1] * 5, samples=20)
    assert one[0] == one[1] == pytest.approx(corpus_bleu(hyps[:1], refs[:1]).score)


def test_bootstrap_interval_bad_arguments():
    from seqbook.bleu import bootstrap_interval

    with pytest.raises(ValueError, match="level"):
        bootstrap_interval([["a"]], [["a"]], level=1.5)
    with pytest.raises(ValueError, match="one reference entry per hypothesis"):
        bootstrap_interval([["a"]], [["a"], ["b"]])


# -- the paired bootstrap ---------------------------------------------------------------------
def test_paired_bootstrap_tells_apart_what_the_unpaired_intervals_cannot():
    import random

    from seqbook.bleu import bootstrap_interval, paired_bootstrap

    rng = random.Random(2)
    words = "le chat noir voit la souris sous une table .".split()
    refs = [[rng.choice(words) for _ in range(rng.randint(6, 12))] for _ in range(60)]
    # b is a's output with one more word dropped from every fifth sentence: always a bit worse
    a = [[w for w in r if rng.random() > 0.25] or r[:1] for r in refs]
    b = [h[:-1] if i % 5 == 0 and len(h) > 1 else h for i, h in enumerate(a)]
    diff = corpus_bleu(a, refs).score - corpus_bleu(b, refs).score
    low, high = paired_bootstrap(a, b, refs, samples=400, seed=3)
    assert 0 < low <= diff <= high                     # a is better, and the interval says so
    (a_low, a_high), (b_low, b_high) = (bootstrap_interval(h, refs, samples=400, seed=3) for h in (a, b))
    assert max(a_low, b_low) < min(a_high, b_high)     # while the systems' own intervals overlap
    assert paired_bootstrap(a, a, refs, samples=50) == (0.0, 0.0)
    assert paired_bootstrap(b, a, refs, samples=400, seed=3) == pytest.approx((-high, -low))
    assert paired_bootstrap(a, b, refs, samples=400, seed=3) == (low, high)       # seeded


def test_paired_bootstrap_bad_arguments():
    from seqbook.bleu import paired_bootstrap

    with pytest.raises(ValueError, match="one reference entry per hypothesis"):
        paired_bootstrap([["a"]], [["a"], ["b"]], [["a"]])
    with pytest.raises(ValueError, match="samples"):
        paired_bootstrap([["a"]], [["a"]], [["a"]], samples=0)
