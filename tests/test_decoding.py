"""Greedy and beam search on next-token tables (beam 1 is greedy, a wide beam is exhaustive search),
and sampling with a temperature."""

import itertools
import math

import pytest
import torch

from seqbook.decoding import Hypothesis, beam_search, gnmt_penalty, greedy, numpy_draw, sample

BOS, EOS = 0, 1


def random_table(vocab: int, seed: int):
    """next_log_probs for a made-up model: log-probabilities that depend on the whole prefix,
    drawn from a generator seeded by the prefix itself (so every call agrees with every other)."""
    calls = []

    def next_log_probs(prefixes):
        calls.append(tuple(prefixes.shape))
        rows = []
        for prefix in prefixes.tolist():
            key = sum((t + 1) * (vocab + 2) ** i for i, t in enumerate(prefix)) * 1000 + seed
            gen = torch.Generator().manual_seed(key)
            rows.append(torch.log_softmax(2.0 * torch.randn(vocab, generator=gen), dim=0))
        return torch.stack(rows)

    next_log_probs.calls = calls
    return next_log_probs


def exhaustive(next_log_probs, vocab: int, max_len: int, alpha: float) -> list[Hypothesis]:
    """Every possible output (ending in <eos>, or max_len tokens without it), best score first."""
    out = []
    for length in range(1, max_len + 1):
        for body in itertools.product([t for t in range(vocab) if t != EOS], repeat=length - 1):
            for last in range(vocab):
                tokens = list(body) + [last]
                if last != EOS and length < max_len:
                    continue  # unfinished outputs only count at max_len
                total = sum(float(next_log_probs(torch.tensor([[BOS] + tokens[:i]]))[0, tok])
                            for i, tok in enumerate(tokens))
                out.append(Hypothesis(tokens, total, total / gnmt_penalty(length, alpha), last == EOS))
    return sorted(out, key=lambda h: -h.score)


@pytest.mark.parametrize("vocab, max_len, alpha, seed", [(3, 5, 0.0, 0), (4, 4, 0.0, 1), (4, 4, 1.0, 2),
                                                        (3, 5, 0.6, 3)])
def test_wide_beam_equals_exhaustive_search(vocab, max_len, alpha, seed):
    table = random_table(vocab, seed)
    everything = exhaustive(table, vocab, max_len, alpha)
    beam = beam_search(table, BOS, EOS, beam_size=vocab ** max_len, max_len=max_len, length_penalty=alpha)
    assert [h.tokens for h in beam] == [h.tokens for h in everything]
    assert [h.score for h in beam] == pytest.approx([h.score for h in everything], abs=1e-9)
    assert [h.finished for h in beam] == [h.finished for h in everything]
    # a beam of 5 finds the same best hypothesis here, and ranks what it returns by score
    top = beam_search(table, BOS, EOS, beam_size=5, max_len=max_len, length_penalty=alpha)
    assert len(top) == 5 and [h.score for h in top] == sorted((h.score for h in top), reverse=True)
    assert top[0].tokens == everything[0].tokens


def test_narrow_beam_can_miss_the_best_sequence():
    # greedy takes token 2 (p = 0.6) and then only weak continuations; token 3 (p = 0.4) leads to a sure <eos>
    def table(prefixes):
        rows = []
        for prefix in prefixes.tolist():
            if len(prefix) == 1:
                p = [0.0, 0.0, 0.6, 0.4]
            elif prefix[1] == 2:
                p = [0.0, 0.5, 0.25, 0.25]
            else:
                p = [0.0, 1.0, 0.0, 0.0]
            rows.append(torch.tensor(p).log())
        return torch.stack(rows)

    g = greedy(table, BOS, EOS, max_len=3)
    b = beam_search(table, BOS, EOS, beam_size=2, max_len=3)
    assert g.tokens == [2, 1] and g.log_prob == pytest.approx(math.log(0.3))
    assert b[0].tokens == [3, 1] and b[0].log_prob == pytest.approx(math.log(0.4))
    assert b[1].tokens == [2, 1]


@pytest.mark.parametrize("seed", range(5))
def test_beam_of_one_is_greedy(seed):
    table = random_table(6, seed)
    g = greedy(table, BOS, EOS, max_len=8)
    b = beam_search(table, BOS, EOS, beam_size=1, max_len=8)
    assert len(b) == 1 and b[0].tokens == g.tokens and b[0].log_prob == pytest.approx(g.log_prob)
    assert b[0].finished == g.finished == (g.tokens[-1] == EOS)
    b_penalised = beam_search(table, BOS, EOS, beam_size=1, max_len=8, length_penalty=0.7)
    assert b_penalised[0].tokens == g.tokens
    assert b_penalised[0].score == pytest.approx(g.log_prob / gnmt_penalty(len(g.tokens), 0.7))


def test_max_len_without_eos_and_calls_batch_the_beam():
    never_eos = lambda p: torch.log_softmax(torch.tensor([[0.0, -1e9, 1.0, 0.5]]).expand(p.shape[0], -1), -1)
    g = greedy(never_eos, BOS, EOS, max_len=4)
    assert g.tokens == [2, 2, 2, 2] and not g.finished
    hyps = beam_search(never_eos, BOS, EOS, beam_size=3, max_len=4)
    assert len(hyps) == 3 and all(len(h.tokens) == 4 and not h.finished for h in hyps)
    assert hyps[0].tokens == [2, 2, 2, 2]
    table = random_table(5, 0)
    beam_search(table, BOS, EOS, beam_size=3, max_len=6)
    assert table.calls[0] == (1, 1)  # one call per step, all live prefixes together
    assert all(k <= 3 and t == i + 1 for i, (k, t) in enumerate(table.calls))


def test_length_penalty_prefers_longer_outputs():
    # <eos> now (p = 0.5) versus four more likely-ish tokens then <eos>
    def table(prefixes):
        rows = []
        for prefix in prefixes.tolist():
            n = len(prefix)
            p = [0.0, 0.5, 0.5, 0.0] if n == 1 else ([0.0, 0.1, 0.9, 0.0] if n < 5 else [0.0, 1.0, 0.0, 0.0])
            rows.append(torch.tensor(p).log())
        return torch.stack(rows)

    plain = beam_search(table, BOS, EOS, beam_size=4, max_len=6)
    long = beam_search(table, BOS, EOS, beam_size=4, max_len=6, length_penalty=2.0)
    assert plain[0].tokens == [1]
    assert long[0].tokens == [2, 2, 2, 2, 1]
    assert gnmt_penalty(1, 0.0) == 1.0 and gnmt_penalty(7, 1.0) == pytest.approx(2.0)


def test_bad_arguments_have_clear_errors():
    table = random_table(4, 0)
    with pytest.raises(ValueError, match="positive integer beam_size"):
        beam_search(table, BOS, EOS, beam_size=0, max_len=3)
    with pytest.raises(ValueError, match="positive integer max_len"):
        greedy(table, BOS, EOS, max_len=0)
    with pytest.raises(ValueError, match="length_penalty"):
        beam_search(table, BOS, EOS, beam_size=2, max_len=3, length_penalty=-1)
    wrong_rows = lambda p: torch.zeros(p.shape[0] + 1, 4)
    with pytest.raises(ValueError, match=r"expected next_log_probs to return shape \(1, \|V\|\).*got \(2, 4\)"):
        greedy(wrong_rows, BOS, EOS, max_len=3)
    flat = lambda p: torch.zeros(4)
    with pytest.raises(ValueError, match=r"shape \(1, \|V\|\)"):
        beam_search(flat, BOS, EOS, beam_size=2, max_len=3)
    with pytest.raises(TypeError, match="tensor"):
        greedy(lambda p: [[0.0, 0.0]], BOS, EOS, max_len=3)
    logits = lambda p: torch.ones(p.shape[0], 4)
    with pytest.raises(ValueError, match="log_softmax"):
        greedy(logits, BOS, EOS, max_len=3)
    with pytest.raises(ValueError, match="at least 6 tokens"):
        greedy(table, BOS, 5, max_len=3)


# -- sampling ----------------------------------------------------------------------------------
def test_sampling_draws_from_the_tempered_distribution():
    log_p = torch.log(torch.tensor([0.6, 0.3, 0.1]))

    def fixed(prefixes):  # the same distribution whatever the prefix
        return log_p.expand(prefixes.shape[0], -1)

    def shares(temperature):  # 4 000 draws, in 500 samples of 8 tokens
        drawn = [t for seed in range(500) for t in sample(fixed, [], 8, temperature, seed)]
        return torch.bincount(torch.tensor(drawn), minlength=3) / len(drawn)

    torch.testing.assert_close(shares(1.0), log_p.exp(), atol=0.035, rtol=0)
    torch.testing.assert_close(shares(2.0), torch.softmax(log_p / 2, 0), atol=0.035, rtol=0)
    assert sample(fixed, [2, 2], 5, temperature=0) == [0] * 5          # 0: always the most likely
    assert sample(fixed, [], 50, seed=3) == sample(fixed, [], 50, seed=3)
    assert sample(fixed, [], 50, seed=3) != sample(fixed, [], 50, seed=4)
    assert sample(fixed, [], 50, draw=numpy_draw(3)) == sample(fixed, [], 50, draw=numpy_draw(3))


def test_sampling_feeds_each_token_back_as_the_next_prefix():
    seen = []

    def counting(prefixes):  # the next token is the prefix length, for sure
        seen.append(prefixes.tolist())
        return torch.log(torch.nn.functional.one_hot(torch.tensor([prefixes.shape[1] % 5]), 5).double())

    assert sample(counting, [7], 3, temperature=1.0) == [1, 2, 3]
    assert seen == [[[7]], [[7, 1]], [[7, 1, 2]]]


def test_sampling_refuses_bad_settings():
    table = random_table(4, 0)
    with pytest.raises(ValueError, match="temperature >= 0"):
        sample(table, [BOS], 3, temperature=-0.5)
    with pytest.raises(TypeError, match="non-negative integer length"):
        sample(table, [BOS], 2.5)
    with pytest.raises(ValueError, match="log_softmax"):
        sample(lambda p: torch.ones(1, 4), [BOS], 2)
