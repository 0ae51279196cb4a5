"""The encoder-decoder: padding, source reversal, the decoding interface, scheduled sampling, training."""

import pytest
import torch

from seqbook.seq2seq import DecoderState, Seq2Seq, reverse_padded
from seqbook.translator import (batch_loss, greedy_batch, masked_cross_entropy, train_translation, translate,
                                translation_bleu)
from seqbook.seeding import generator
from seqbook.translation import BOS, PAD, build_vocabs, make_batch, make_batches, make_splits


@pytest.fixture(scope="module")
def data():
    splits = make_splits(300, 20, 20, seed=0, max_len=14)
    src_vocab, tgt_vocab = build_vocabs(splits.train)
    return splits, src_vocab, tgt_vocab


def model_for(data, **kwargs):
    _, src_vocab, tgt_vocab = data
    kwargs = {"embed_size": 16, "hidden_size": 24, "seed": 0, **kwargs}
    return Seq2Seq(len(src_vocab), len(tgt_vocab), **kwargs).eval()


CONFIGS = [dict(cell="gru"), dict(cell="lstm", reverse_source=True), dict(cell="gru", num_layers=2, feed_context=False)]


def test_reverse_padded_keeps_padding_on_the_right():
    src = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    assert reverse_padded(src, torch.tensor([3, 2])).tolist() == [[7, 6, 5, 0], [9, 8, 0, 0]]


@pytest.mark.parametrize("config", CONFIGS)
def test_padding_does_not_change_the_encoding_or_the_output(data, config):
    splits, src_vocab, tgt_vocab = data
    model = model_for(data, **config)
    batch = make_batch(splits.train[:6], src_vocab, tgt_vocab)
    assert batch.src_lengths.min() < batch.src.shape[1]  # there is padding
    with torch.no_grad():
        together = model.start(batch.src, batch.src_lengths)
        logits = model(batch.src, batch.src_lengths, batch.tgt_in)
        for row in range(6):
            n, m = int(batch.src_lengths[row]), int((batch.tgt_out[row] != PAD).sum())
            alone = model.start(batch.src[row:row + 1, :n], batch.src_lengths[row:row + 1])
            torch.testing.assert_close(alone.context, together.context[row:row + 1], atol=1e-6, rtol=0)
            one = model(batch.src[row:row + 1, :n], batch.src_lengths[row:row + 1], batch.tgt_in[row:row + 1, :m])
            torch.testing.assert_close(one[0], logits[row, :m], atol=1e-5, rtol=0)


def test_source_reversal_reads_the_sentence_backwards(data):
    splits, src_vocab, tgt_vocab = data
    forward, backward = model_for(data), model_for(data, reverse_source=True)  # same seed, same weights
    batch = make_batch(splits.train[:4], src_vocab, tgt_vocab)
    with torch.no_grad():
        flipped = reverse_padded(batch.src, batch.src_lengths)
        torch.testing.assert_close(backward.start(batch.src, batch.src_lengths).context,
                                   forward.start(flipped, batch.src_lengths).context)
        assert not torch.allclose(backward.start(batch.src, batch.src_lengths).context,
                                  forward.start(batch.src, batch.src_lengths).context)


def test_scheduled_sampling_with_ratio_one_is_teacher_forcing(data):
    splits, src_vocab, tgt_vocab = data
    model = model_for(data)
    b = make_batch(splits.train[:5], src_vocab, tgt_vocab)
    with torch.no_grad():
        forced = model(b.src, b.src_lengths, b.tgt_in)
        torch.testing.assert_close(model.forward_scheduled(b.src, b.src_lengths, b.tgt_in, 1.0, generator(0)),
                                   forced, atol=1e-5, rtol=0)
        free = model.forward_scheduled(b.src, b.src_lengths, b.tgt_in, 0.0, generator(0))
        # with ratio 0 the model reads its own argmax: the same as greedy decoding step by step
        rows = greedy_batch(model, b.src, b.src_lengths, max_len=b.tgt_in.shape[1])
        assert free[:, 0].argmax(-1).tolist() == [r[0] for r in rows]
        assert not torch.allclose(free, forced)
        a = model.forward_scheduled(b.src, b.src_lengths, b.tgt_in, 0.5, generator(3))
        torch.testing.assert_close(a, model.forward_scheduled(b.src, b.src_lengths, b.tgt_in, 0.5, generator(3)))
    with pytest.raises(ValueError, match="teacher_forcing between 0 and 1"):
        model.forward_scheduled(b.src, b.src_lengths, b.tgt_in, 1.5, generator(0))


def test_masked_cross_entropy_ignores_padding():
    logits = torch.randn(2, 3, 5, generator=generator(0))
    targets = torch.tensor([[1, 2, PAD], [3, PAD, PAD]])
    by_hand = -(torch.log_softmax(logits, -1)[0, 0, 1] + torch.log_softmax(logits, -1)[0, 1, 2]
                + torch.log_softmax(logits, -1)[1, 0, 3]) / 3
    torch.testing.assert_close(masked_cross_entropy(logits, targets), by_hand)
    changed = logits.clone()
    changed[1, 2] += 100.0  # a padded position
    torch.testing.assert_close(masked_cross_entropy(changed, targets), by_hand)
    with pytest.raises(ValueError, match=r"expected logits of shape \(batch, time, \|V\|\)"):
        masked_cross_entropy(logits[0], targets)
    with pytest.raises(ValueError, match="only padding"):
        masked_cross_entropy(logits, torch.zeros(2, 3, dtype=torch.int64))


def test_training_lowers_the_loss_and_is_deterministic(data):
    splits, src_vocab, tgt_vocab = data
    batches = make_batches(splits.train, src_vocab, tgt_vocab, 32, seed=0)
    valid = make_batches(splits.valid, src_vocab, tgt_vocab, 32, seed=None)
    model = model_for(data, cell="gru")
    before = batch_loss(model, valid)
    h = train_translation(model, batches, 40, lr=1e-2, seed=1, device="cpu", valid_batches=valid, eval_every=20,
                          evaluate=lambda m: translation_bleu(m, splits.valid, src_vocab, tgt_vocab).score)
    # evaluation does not change training: a second run without it takes the same steps
    again = train_translation(model_for(data, cell="gru"), batches, 40, lr=1e-2, seed=1, device="cpu")
    assert again.loss == h.loss
    assert h.val_step == [20, 40] and len(h.loss) == 40 and h.teacher_forcing == [1.0] * 40
    assert len(h.val_score) == 2 and all(0 <= s <= 100 for s in h.val_score)
    assert h.val_loss[-1] < before - 1.0  # from ~ln|V| = 4.4 nats to well below
    assert sum(h.loss[-5:]) / 5 < sum(h.loss[:5]) / 5 - 1.0
    out = translate(model, [p.src for p in splits.test[:3]], src_vocab, tgt_vocab)
    assert len(out) == 3 and all(isinstance(t, str) for s in out for t in s)
    assert 0 <= translation_bleu(model, splits.test, src_vocab, tgt_vocab).score <= 100


def test_training_with_scheduled_sampling(data):
    splits, src_vocab, tgt_vocab = data
    batches = make_batches(splits.train[:64], src_vocab, tgt_vocab, 32, seed=0)
    model = model_for(data, cell="lstm")
    h = train_translation(model, batches, 6, lr=1e-2, seed=0, device="cpu",
                          teacher_forcing=lambda step: 1.0 - step / 10)
    assert h.teacher_forcing == pytest.approx([1.0, 0.9, 0.8, 0.7, 0.6, 0.5])
    assert h.loss[-1] < h.loss[0]


def test_bad_input(data):
    splits, src_vocab, tgt_vocab = data
    model = model_for(data)
    b = make_batch(splits.train[:2], src_vocab, tgt_vocab)
    with pytest.raises(ValueError, match=r"src as an int64 tensor of shape \(batch, time\)"):
        model(b.src[0], b.src_lengths, b.tgt_in)
    with pytest.raises(ValueError, match="src_lengths between 1 and"):
        model(b.src, b.src_lengths + 100, b.tgt_in)
    with pytest.raises(ValueError, match="2 src_lengths"):
        model(b.src, b.src_lengths[:1], b.tgt_in)
    with pytest.raises(ValueError, match="cell as one of 'gru', 'lstm'"):
        Seq2Seq(10, 10, cell="rnn")
    with pytest.raises(ValueError, match="tgt_vocab_size"):
        Seq2Seq(10, 2)
    with pytest.raises(ValueError, match=r"src_ids \(one sentence\) with at least one token"):
        model.next_log_probs_fn([])
    with pytest.raises(ValueError, match=r"prefixes \(ids starting with <bos>\) as an int64 tensor of shape \(batch, time\)"):
        model.next_log_probs_fn([5, 6])(torch.tensor([BOS]))
    with pytest.raises(ValueError, match="Batch"):
        train_translation(model, [1, 2], 3, device="cpu")
    with pytest.raises(ValueError, match="positive integer steps"):
        train_translation(model, [b], 0, device="cpu")


def test_decoder_state_select_and_cat():
    h = torch.arange(12.0).reshape(1, 3, 4)
    state = DecoderState((h, -h), torch.arange(6.0).reshape(3, 2))
    joined = DecoderState.cat([state.select([2]), state.select([0])])
    assert joined.hidden[0][0, :, 0].tolist() == [8.0, 0.0] and joined.context[:, 0].tolist() == [4.0, 0.0]
