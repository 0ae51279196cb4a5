"""Chapter 6's training recipe in the library: the warm-up schedule, label smoothing, Adam's betas
and beam search over a whole list of sentences, each usable by every translator of chapters 4-6.
Left at their defaults they change nothing (chapters 4 and 5 train exactly as before)."""

import math

import pytest
import torch
import torch.nn.functional as F

from seqbook.attention_model import AttentionSeq2Seq
from seqbook.schedules import WarmupInverseSqrt
from seqbook.seeding import generator
from seqbook.transformer import Transformer
from seqbook.translation import BOS, EOS, PAD, build_vocabs, make_batches, make_splits
from seqbook.translator import (masked_cross_entropy, smoothed_cross_entropy, train_translation, translate,
                                translate_beam)


@pytest.fixture(scope="module")
def data():
    splits = make_splits(200, 0, 8, seed=0, max_len=10)
    src_vocab, tgt_vocab = build_vocabs(splits.train)
    return splits, src_vocab, tgt_vocab


def transformer(data, seed=0):
    _, src_vocab, tgt_vocab = data
    return Transformer(len(src_vocab), len(tgt_vocab), d_model=16, num_heads=2, d_ff=32, num_layers=1,
                       dropout=0.0, seed=seed)


# -- the schedule ------------------------------------------------------------------------------
def test_the_schedule_is_the_papers_formula():
    rate = WarmupInverseSqrt(d_model=512, warmup=4000)
    for step in (1, 10, 3999, 4000, 4001, 100_000):
        expected = 512 ** -0.5 * min(step ** -0.5, step * 4000 ** -1.5)
        assert rate(step) == pytest.approx(expected, rel=1e-12)
    assert rate.peak == pytest.approx((512 * 4000) ** -0.5)        # about 7e-4, the paper's peak
    assert WarmupInverseSqrt(64, 60, scale=0.4).peak == pytest.approx(0.4 * (64 * 60) ** -0.5)


def test_the_schedule_rises_linearly_then_falls_as_one_over_sqrt_step():
    rate = WarmupInverseSqrt(64, 50)
    rising = [rate(s) for s in range(1, 51)]
    assert rising == sorted(rising) and rate(20) == pytest.approx(2 * rate(10))   # linear
    assert max(rate(s) for s in range(1, 500)) == rate(50) == rate.peak
    assert rate(200) == pytest.approx(rate(50) / 2)                                # 1 / sqrt(step)
    assert rate(800) == pytest.approx(rate(200) / 2)


def test_the_schedule_refuses_what_it_cannot_use():
    with pytest.raises(ValueError, match="positive integer warmup"):
        WarmupInverseSqrt(64, 0)
    with pytest.raises(ValueError, match="scale > 0"):
        WarmupInverseSqrt(64, 10, scale=-1)
    with pytest.raises(ValueError, match=r"step \(counted from 1\)"):
        WarmupInverseSqrt(64, 10)(0)


# -- label smoothing ------------------------------------------------------------------------------
def test_smoothed_loss_is_pytorchs_label_smoothing_and_ignores_padding():
    gen = generator(0)
    logits = 3 * torch.randn(3, 5, 11, generator=gen)
    targets = torch.randint(1, 11, (3, 5), generator=gen)
    targets[1, 3:] = PAD
    targets[2, 1:] = PAD
    for epsilon in (0.0, 0.1, 0.4):
        ours = smoothed_cross_entropy(logits, targets, epsilon)
        theirs = F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1), ignore_index=PAD,
                                 label_smoothing=epsilon)
        torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(smoothed_cross_entropy(logits, targets, 0.0), masked_cross_entropy(logits, targets))
    # padding positions do not count: changing their logits changes nothing
    other = logits.clone()
    other[2, 1:] = 100.0
    torch.testing.assert_close(smoothed_cross_entropy(other, targets, 0.1), smoothed_cross_entropy(logits, targets, 0.1))


def test_smoothing_penalises_a_certain_right_answer_and_is_lowest_at_the_smoothed_target():
    vocab, epsilon, right = 8, 0.1, 3
    targets = torch.tensor([[right]])
    certain = torch.full((1, 1, vocab), -30.0)
    certain[0, 0, right] = 30.0
    assert float(masked_cross_entropy(certain, targets)) < 1e-6               # plain loss: perfect
    assert float(smoothed_cross_entropy(certain, targets, epsilon)) > 5        # smoothed: far from it
    smoothed_target = torch.full((vocab,), epsilon / vocab)
    smoothed_target[right] += 1 - epsilon
    best = smoothed_target.log()[None, None]                                  # logits = log q
    entropy = -(smoothed_target * smoothed_target.log()).sum()
    assert float(smoothed_cross_entropy(best, targets, epsilon)) == pytest.approx(float(entropy), rel=1e-5)
    for _ in range(5):                                                        # any other is worse
        nudged = best + 0.3 * torch.randn(best.shape, generator=generator(1))
        assert float(smoothed_cross_entropy(nudged, targets, epsilon)) > float(entropy)


def test_smoothing_refuses_an_epsilon_outside_zero_one():
    logits, targets = torch.zeros(1, 2, 5), torch.tensor([[1, 2]])
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match=r"label smoothing epsilon in \[0, 1\)"):
            smoothed_cross_entropy(logits, targets, bad)


# -- the trainer --------------------------------------------------------------------------------
def test_defaults_train_exactly_as_before(data):
    splits, src_vocab, tgt_vocab = data
    batches = make_batches(splits.train, src_vocab, tgt_vocab, 32, seed=0)
    plain = train_translation(transformer(data), batches, 6, lr=3e-3, seed=0, device="cpu")
    spelled_out = train_translation(transformer(data), batches, 6, lr=lambda step: 3e-3, label_smoothing=0.0,
                                    betas=(0.9, 0.999), seed=0, device="cpu")
    assert plain.loss == spelled_out.loss
    assert plain.learning_rate == [3e-3] * 6
    other_betas = train_translation(transformer(data), batches, 6, lr=3e-3, betas=(0.5, 0.9), seed=0, device="cpu")
    assert other_betas.loss[0] == plain.loss[0] and other_betas.loss[-1] != plain.loss[-1]


def test_the_schedule_sets_every_steps_rate(data):
    splits, src_vocab, tgt_vocab = data
    batches = make_batches(splits.train, src_vocab, tgt_vocab, 32, seed=0)
    rate = WarmupInverseSqrt(16, warmup=4, scale=2.0)
    model = transformer(data)
    h = train_translation(model, batches, 10, lr=rate, seed=0, device="cpu")
    assert h.learning_rate == pytest.approx([rate(s) for s in range(1, 11)])
    # the rate is applied: one step at rate(1) from the same start equals a constant-rate step
    first = train_translation(transformer(data), batches, 1, lr=rate, seed=0, device="cpu")
    constant = train_translation(transformer(data), batches, 2, lr=rate(1), seed=0, device="cpu")
    assert first.loss[0] == constant.loss[0]
    one, two = transformer(data), transformer(data)
    train_translation(one, batches, 2, lr=rate, seed=0, device="cpu")
    train_translation(two, batches, 2, lr=rate(1), seed=0, device="cpu")
    assert not all(torch.equal(a, b) for a, b in zip(one.parameters(), two.parameters()))  # step 2 differs


def test_label_smoothing_trains_and_records_the_smoothed_loss(data):
    splits, src_vocab, tgt_vocab = data
    batches = make_batches(splits.train, src_vocab, tgt_vocab, 32, seed=0)
    h = train_translation(transformer(data), batches, 40, lr=1e-2, label_smoothing=0.1, seed=0, device="cpu")
    assert sum(h.loss[-5:]) / 5 < sum(h.loss[:5]) / 5 - 1.0
    plain = train_translation(transformer(data), batches, 1, lr=1e-2, seed=0, device="cpu")
    assert h.loss[0] != plain.loss[0]           # the first step already minimises something else
    with pytest.raises(ValueError, match="label_smoothing in"):
        train_translation(transformer(data), batches, 1, label_smoothing=1.5, device="cpu")


# -- beam search over a list of sentences ------------------------------------------------------------
@pytest.mark.parametrize("build", [transformer, lambda d: AttentionSeq2Seq(len(d[1]), len(d[2]), embed_size=8,
                                                                           hidden_size=16, seed=0)])
def test_beam_of_one_is_greedy_and_a_wider_beam_finds_likelier_translations(data, build):
    splits, src_vocab, tgt_vocab = data
    batches = make_batches(splits.train, src_vocab, tgt_vocab, 32, seed=0)
    model = build(data)
    train_translation(model, batches, 30, lr=1e-2, seed=0, device="cpu")
    sentences = [p.src for p in splits.test]
    greedy = translate(model, sentences, src_vocab, tgt_vocab, max_len=30)
    assert translate_beam(model, sentences, src_vocab, tgt_vocab, beam_size=1, max_len=30) == greedy
    wide = translate_beam(model, sentences, src_vocab, tgt_vocab, beam_size=4, max_len=30)
    assert len(wide) == len(sentences) and all(isinstance(t, str) for s in wide for t in s)
    assert model.training                                  # left in the mode it was in

    def log_prob(src, tgt):
        ids = [BOS] + tgt_vocab.encode(tgt) + [EOS]
        fn = model.eval().next_log_probs_fn(src_vocab.encode(src))
        total = sum(float(fn(torch.tensor([ids[:t]]))[0, ids[t]]) for t in range(1, len(ids)))
        model.train()
        return total

    for src, greedy_out, beam_out in zip(sentences, greedy, wide):
        assert log_prob(src, beam_out) >= log_prob(src, greedy_out) - 1e-4
    assert math.isfinite(log_prob(sentences[0], wide[0]))
