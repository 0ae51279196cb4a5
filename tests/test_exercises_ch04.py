"""Chapter 4's checkers accept right answers, name typical mistakes, and never raise."""

import math

import torch

from seqbook.decoding import gnmt_penalty
from seqbook.exercises.ch04 import (LONG_HYPOTHESIS, SHORT_HYPOTHESIS, SIGMOID_K, beam_step_reference,
                                    check_beam_step, check_bleu_by_hand, check_inverse_sigmoid,
                                    check_length_penalty, check_search_sizes, inverse_sigmoid_reference)


def _verdict(v, passed, *words):
    assert bool(v) is passed, v.message
    for w in words:
        assert w in v.message, v.message


# -- BLEU by hand ---------------------------------------------------------------------------------
P = [1.0, 4 / 5, 2 / 4, 1 / 3]
BP = math.exp(1 - 7 / 6)
BLEU = 100 * BP * (P[0] * P[1] * P[2] * P[3]) ** 0.25


def test_bleu_by_hand(capsys):
    _verdict(check_bleu_by_hand(P, BP, BLEU), True, "51.")
    assert "✅" in capsys.readouterr().out
    _verdict(check_bleu_by_hand(torch.tensor(P), torch.tensor(BP), round(BLEU, 4)), True)
    _verdict(check_bleu_by_hand([100 * p for p in P], BP, BLEU), False, "fractions")
    _verdict(check_bleu_by_hand([1.0, 1.0, 2 / 4, 1 / 3], BP, BLEU), False, "p_2", "5 2-grams")
    _verdict(check_bleu_by_hand(P, 1.0, BLEU), False, "only when")
    _verdict(check_bleu_by_hand(P, math.exp(1 - 6 / 7), BLEU), False, "upside down")
    _verdict(check_bleu_by_hand(P, BP, BLEU / 100), False, "0..1")
    _verdict(check_bleu_by_hand(P, BP, BLEU / BP), False, "brevity penalty")
    _verdict(check_bleu_by_hand(P, BP, 100 * BP * sum(P) / 4), False, "arithmetic")
    _verdict(check_bleu_by_hand(P, BP, 40.0), False, "not it")
    _verdict(check_bleu_by_hand(P[:3], BP, BLEU), False, "four numbers")
    _verdict(check_bleu_by_hand(..., ..., ...), False, "placeholder")
    _verdict(check_bleu_by_hand(P, "big", BLEU), False, "text")


# -- search sizes -------------------------------------------------------------------------------
def test_search_sizes():
    _verdict(check_search_sizes(150 ** 20, 5 * 150 * 20), True, "15,000")
    _verdict(check_search_sizes(3.3253e43, 15000.0), True)   # a rounded float is fine
    _verdict(check_search_sizes(20 ** 150, 15000), False, "T^|V|")
    _verdict(check_search_sizes(150 * 20, 15000), False, "greedy")
    _verdict(check_search_sizes(5 ** 20, 15000), False, "k^T")
    _verdict(check_search_sizes(150 ** 20, 3000), False, "greedy")
    _verdict(check_search_sizes(150 ** 20, 25 * 20), False, "every token")
    _verdict(check_search_sizes(150 ** 20, 5 * 150.0 ** 20), False, "adds up")
    _verdict(check_search_sizes(150 ** 20, 15001), False, "not it")
    # counting that the first step extends only <bos>: 150 + 19 * 750 is right too
    _verdict(check_search_sizes(150 ** 20, 150 + 19 * 5 * 150), True, "14,400")
    _verdict(check_search_sizes(150 ** 20, 14400.0), True, "only <bos>")
    _verdict(check_search_sizes(..., 15000), False, "placeholder")


# -- one beam step --------------------------------------------------------------------------------
def test_beam_step_right_answers():
    _verdict(check_beam_step(beam_step_reference), True, "four random cases")

    def loop_version(sums, log_probs, beam_size):   # a plain-Python version is just as right
        cands = sorted(((float(s + lp), p, t) for p, (s, row) in enumerate(zip(sums, log_probs))
                        for t, lp in enumerate(row)), reverse=True)[:beam_size]
        return [c[1] for c in cands], [c[2] for c in cands], [c[0] for c in cands]

    _verdict(check_beam_step(loop_version), True)


def test_beam_step_typical_mistakes():
    def best_per_parent(sums, log_probs, beam_size):
        totals = sums[:, None] + log_probs
        best, tokens = totals.max(1)
        order = best.argsort(descending=True)[:beam_size]
        return order, tokens[order], best[order]

    _verdict(check_beam_step(best_per_parent), False, "best token of each hypothesis")

    def ignores_sums(sums, log_probs, beam_size):
        best, index = log_probs.flatten().topk(beam_size)
        v = log_probs.shape[1]
        return index // v, index % v, best + sums[index // v]

    _verdict(check_beam_step(ignores_sums), False, "alone")

    def worst_first(sums, log_probs, beam_size):
        p, t, s = beam_step_reference(sums, log_probs, beam_size)
        return p.flip(0), t.flip(0), s.flip(0)

    _verdict(check_beam_step(worst_first), False, "best first")

    def forgets_parent_sum(sums, log_probs, beam_size):
        p, t, _ = beam_step_reference(sums, log_probs, beam_size)
        return p, t, log_probs[p, t]

    _verdict(check_beam_step(forgets_parent_sum), False, "totals are off")

    def keeps_too_many(sums, log_probs, beam_size):
        return beam_step_reference(sums, log_probs, beam_size + 1)

    _verdict(check_beam_step(keeps_too_many), False, "keep")

    def crashes(sums, log_probs, beam_size):
        return sums[10]

    _verdict(check_beam_step(crashes), False, "IndexError")
    _verdict(check_beam_step(lambda s, lp, k: 3), False, "three things")

    def stub(sums, log_probs, beam_size):
        raise NotImplementedError

    _verdict(check_beam_step(stub), False, "placeholder")
    _verdict(check_beam_step(42), False, "function")


# -- length penalty --------------------------------------------------------------------------------
def test_length_penalty():
    short = SHORT_HYPOTHESIS[0] / gnmt_penalty(SHORT_HYPOTHESIS[1], 1.0)
    long = LONG_HYPOTHESIS[0] / gnmt_penalty(LONG_HYPOTHESIS[1], 1.0)
    assert long > short and SHORT_HYPOTHESIS[0] > LONG_HYPOTHESIS[0]   # the exercise's point
    _verdict(check_length_penalty(short, long, "long"), True, "long hypothesis wins")
    _verdict(check_length_penalty(short, long, "short"), False, "higher")
    _verdict(check_length_penalty(SHORT_HYPOTHESIS[0], long, "long"), False, "plain log-probability")
    _verdict(check_length_penalty(short, LONG_HYPOTHESIS[0] / LONG_HYPOTHESIS[1], "long"), False,
             "length itself")
    _verdict(check_length_penalty(short, LONG_HYPOTHESIS[0] * gnmt_penalty(LONG_HYPOTHESIS[1], 1.0), "long"),
             False, "multiplies")
    _verdict(check_length_penalty(short, -1.0, "long"), False, "not it")
    _verdict(check_length_penalty(short, long, "longer"), False, "'short' or 'long'")
    _verdict(check_length_penalty(short, long, ...), False, "placeholder")


# -- inverse-sigmoid decay ---------------------------------------------------------------------------
def test_inverse_sigmoid():
    _verdict(check_inverse_sigmoid(inverse_sigmoid_reference), True, "461")
    _verdict(check_inverse_sigmoid(lambda s: SIGMOID_K / (SIGMOID_K + math.exp(s / SIGMOID_K))), True)
    _verdict(check_inverse_sigmoid(lambda s: 1 - inverse_sigmoid_reference(s)), False, "own token")
    _verdict(check_inverse_sigmoid(lambda s: SIGMOID_K / (SIGMOID_K + math.exp(min(s, 700)))), False,
             "step / kappa")
    _verdict(check_inverse_sigmoid(lambda s: max(0.0, 1 - s / 1000)), False, "expected")
    _verdict(check_inverse_sigmoid(lambda s: "one"), False, "text")
    _verdict(check_inverse_sigmoid(None), False, "placeholder")
