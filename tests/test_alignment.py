"""Alignments from attention weights and the alignment error rate (Och & Ney 2003)."""

import pytest
import torch

from seqbook.alignment import alignment_error_rate, argmax_alignment, corpus_alignment_error_rate


def test_perfect_alignment_scores_zero_and_disjoint_scores_one():
    gold = [(0, 0), (1, 2), (2, 1)]
    assert alignment_error_rate(gold, gold) == 0.0
    assert alignment_error_rate(list(reversed(gold)), gold) == 0.0  # order does not matter
    assert alignment_error_rate([(0, 1), (1, 1), (2, 2)], gold) == 1.0


def test_hand_computed_sure_only_and_sure_possible():
    # A ∩ S = {(0,0), (1,1)}: 1 - (2 + 2) / (3 + 3) = 1/3, one minus the F1 of A against S
    assert alignment_error_rate({(0, 0), (1, 1), (2, 1)}, {(0, 0), (1, 1), (2, 2)}) == pytest.approx(1 / 3)
    # S = {(0,0)}, P = {(0,0), (1,1)}: |A ∩ S| = 1, |A ∩ P| = 2, 1 - (1 + 2) / (3 + 1) = 0.25
    aer = alignment_error_rate([(0, 0), (1, 1), (2, 2)], [(0, 0)], [(0, 0), (1, 1)])
    assert aer == pytest.approx(0.25)
    # a possible link that is predicted helps, one that is not predicted costs nothing
    assert alignment_error_rate([(0, 0)], [(0, 0)], [(0, 0), (5, 5)]) == 0.0


def test_corpus_rate_sums_counts_before_dividing():
    predicted = [[(0, 0)], [(0, 0), (1, 1), (2, 2), (3, 3)]]
    sure = [[(0, 1)], [(0, 0), (1, 1), (2, 2), (3, 3)]]
    # sentence rates 1 and 0 (mean 0.5); summed: 1 - 2 * 4 / (5 + 5) = 0.2
    assert corpus_alignment_error_rate(predicted, sure) == pytest.approx(0.2)
    assert corpus_alignment_error_rate(predicted, sure, sure) == pytest.approx(0.2)


def test_argmax_alignment_links_each_target_word_to_its_most_attended_source_word():
    weights = torch.tensor([[0.1, 0.7, 0.2],
                            [0.6, 0.3, 0.1],
                            [0.0, 0.1, 0.9],
                            [0.2, 0.5, 0.3]])
    assert argmax_alignment(weights) == [(1, 0), (0, 1), (2, 2), (1, 3)]
    # a weight tensor may be passed to the AER directly
    assert alignment_error_rate(weights, [(1, 0), (0, 1), (2, 2), (1, 3)]) == 0.0
    assert alignment_error_rate(weights, [(1, 0), (0, 1)]) == pytest.approx(1 - 4 / 6)


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="subset of the possible"):
        alignment_error_rate([(0, 0)], [(0, 0), (1, 1)], [(0, 0)])
    with pytest.raises(ValueError, match="undefined for two empty"):
        alignment_error_rate([], [])
    with pytest.raises(ValueError, match=r"\(tgt_len, src_len\)"):
        argmax_alignment(torch.rand(2, 3, 4))
    with pytest.raises(TypeError, match="source index, target index"):
        alignment_error_rate([0, 1, 2], [(0, 0)])
    with pytest.raises(ValueError, match="non-negative"):
        alignment_error_rate([(-1, 0)], [(0, 0)])
    with pytest.raises(ValueError, match="one predicted, sure"):
        corpus_alignment_error_rate([[(0, 0)]], [[(0, 0)], [(1, 1)]])
