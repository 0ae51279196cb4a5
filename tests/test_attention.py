"""Masked softmax, the four attention scores, the bidirectional encoder and the attention model."""

import math

import pytest
import torch

from seqbook.attention import (AdditiveScore, ConcatScore, DotScore, GeneralScore, attention, make_score,
                               masked_softmax)
from seqbook.attention_model import AttentionSeq2Seq, BidirectionalEncoder
from seqbook.decoding import greedy
from seqbook.seeding import generator
from seqbook.translator import train_translation
from seqbook.translation import BOS, EOS, build_vocabs, make_batch, make_batches, make_splits

STYLES = {"bahdanau": dict(style="bahdanau"), "luong": dict(style="luong"),
          "luong-no-feeding": dict(style="luong", input_feeding=False)}
SCORE_NAMES = ["additive", "dot", "general", "concat"]


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=generator(seed))


@pytest.fixture(scope="module")
def corpus():
    splits = make_splits(300, 20, 20, seed=0, max_len=25)
    src_vocab, tgt_vocab = build_vocabs(splits.train)
    return splits, src_vocab, tgt_vocab


def small_model(corpus, **kwargs):
    _, src_vocab, tgt_vocab = corpus
    return AttentionSeq2Seq(len(src_vocab), len(tgt_vocab), embed_size=8, hidden_size=16, **{"seed": 0, **kwargs})


# -- masked softmax --------------------------------------------------------------------------
def test_masked_softmax_gives_padding_exactly_zero_and_rows_summing_to_one():
    scores = randn(3, 4, 5) * 10
    mask = torch.tensor([[True] * 5, [True, True, True, False, False], [True, False, False, False, False]])
    weights = masked_softmax(scores, mask)
    assert weights.shape == (3, 4, 5)
    assert torch.equal(weights[1, :, 3:], torch.zeros(4, 2))
    assert torch.equal(weights[2, :, 1:], torch.zeros(4, 4))
    assert torch.equal(weights[2, :, 0], torch.ones(4))  # one real key takes all the weight
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4))
    # the real keys get the softmax of their own scores, as if the padding were not there
    torch.testing.assert_close(weights[1, :, :3], torch.softmax(scores[1, :, :3], -1))
    torch.testing.assert_close(masked_softmax(scores, None), torch.softmax(scores, -1))
    # a 3-d mask (here: query i may see keys 0..i) works too
    causal = torch.ones(4, 5, dtype=torch.bool).tril()[None]
    weights = masked_softmax(scores, causal)
    assert torch.equal(weights[:, 0, 1:], torch.zeros(3, 4))
    torch.testing.assert_close(weights[:, 2, :3], torch.softmax(scores[:, 2, :3], -1))


def test_masked_softmax_rejects_bad_masks():
    scores = randn(2, 3, 4)
    with pytest.raises(TypeError, match="bool tensor"):
        masked_softmax(scores, torch.ones(2, 4))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 4\) \(True = real key"):
        masked_softmax(scores, torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 4\)"):
        masked_softmax(scores, torch.ones(4, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"\(2, 3, 4\) .* or one that broadcasts to it, got \(2, 2, 4\)"):
        masked_softmax(scores, torch.ones(2, 2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="at least one real key"):
        masked_softmax(scores, torch.tensor([[True] * 4, [False] * 4]))
    with pytest.raises(ValueError, match=r"\(batch, queries, keys\)"):
        masked_softmax(randn(2, 4), None)
    with pytest.raises(TypeError, match="torch.Tensor"):
        masked_softmax([[1.0, 2.0]], None)


# -- scores ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SCORE_NAMES)
def test_every_score_maps_queries_and_keys_to_batch_queries_keys(name):
    torch.manual_seed(0)
    score = make_score(name, 6, 6, attention_size=5)
    query, keys = randn(2, 3, 6, seed=1), randn(2, 7, 6, seed=2)
    assert score(query, keys).shape == (2, 3, 7)
    # preparing the keys once gives the same scores as scoring from scratch
    torch.testing.assert_close(score.score(query, score.prepare(keys)), score(query, keys))
    with pytest.raises(ValueError, match=r"\(batch, queries, 6\)"):
        score(randn(2, 3, 5), keys)
    with pytest.raises(ValueError, match=r"\(batch, keys, 6\)"):
        score(query, randn(2, 7, 4))


def test_scores_on_a_hand_computed_example():
    query = torch.tensor([[[1.0, 2.0]]])                          # (1, 1, 2)
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])   # (1, 3, 2)
    assert DotScore(2, 2)(query, keys).tolist() == [[[1.0, 2.0, 3.0]]]
    general = GeneralScore(2, 2)
    with torch.no_grad():
        general.W.weight.copy_(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))  # W swaps the key's coordinates
    assert general(query, keys).tolist() == [[[2.0, 1.0, 3.0]]]
    additive = AdditiveScore(2, 2, 2)
    with torch.no_grad():
        additive.W.weight.copy_(torch.eye(2))
        additive.U.weight.copy_(torch.eye(2))
        additive.U.bias.copy_(torch.tensor([0.0, -1.0]))
        additive.v.weight.copy_(torch.tensor([[1.0, 2.0]]))
    # v . tanh(q + k + b): q + b = (1, 1), so the keys give tanh(2) + 2 tanh(1), tanh(1) + 2 tanh(2), ...
    expected = [math.tanh(2) + 2 * math.tanh(1), math.tanh(1) + 2 * math.tanh(2), math.tanh(2) + 2 * math.tanh(2)]
    torch.testing.assert_close(additive(query, keys), torch.tensor([[expected]]))
    weights = masked_softmax(DotScore(2, 2)(query, keys), torch.tensor([[True, True, False]]))
    e = math.e
    torch.testing.assert_close(weights, torch.tensor([[[e / (e + e ** 2), e ** 2 / (e + e ** 2), 0.0]]]))


def test_additive_score_equals_a_loop_over_every_query_and_key():
    torch.manual_seed(0)
    score = AdditiveScore(5, 3, 4)
    query, keys = randn(2, 3, 5, seed=1), randn(2, 6, 3, seed=2)
    W, U, b, v = score.W.weight, score.U.weight, score.U.bias, score.v.weight[0]
    naive = torch.empty(2, 3, 6)
    for n in range(2):
        for i in range(3):
            for j in range(6):
                naive[n, i, j] = v @ torch.tanh(W @ query[n, i] + U @ keys[n, j] + b)
    torch.testing.assert_close(score(query, keys), naive)


def test_concat_score_is_the_additive_score_with_its_matrix_split():
    torch.manual_seed(0)
    concat, additive = ConcatScore(5, 3, 4), AdditiveScore(5, 3, 4)
    with torch.no_grad():
        additive.W.weight.copy_(concat.W.weight[:, :5])
        additive.U.weight.copy_(concat.W.weight[:, 5:])
        additive.U.bias.copy_(concat.W.bias)
        additive.v.weight.copy_(concat.v.weight)
    query, keys = randn(2, 3, 5, seed=1), randn(2, 6, 3, seed=2)
    torch.testing.assert_close(concat(query, keys), additive(query, keys))
    # and it is v^T tanh(W [q; k] + b) on the concatenation of each (query, key) pair
    naive = torch.empty(2, 3, 6)
    for n in range(2):
        for i in range(3):
            for j in range(6):
                pair = torch.cat([query[n, i], keys[n, j]])
                naive[n, i, j] = concat.v.weight[0] @ torch.tanh(concat.W.weight @ pair + concat.W.bias)
    torch.testing.assert_close(concat(query, keys), naive)


def test_bad_score_settings_get_clear_errors():
    with pytest.raises(ValueError, match="equal query and key sizes"):
        DotScore(4, 6)
    with pytest.raises(ValueError, match="one of"):
        make_score("cosine", 4, 4)
    with pytest.raises(ValueError, match="positive integer attention_size"):
        AdditiveScore(4, 4, 0)


# -- attention -------------------------------------------------------------------------------
def test_attention_mixes_values_by_weights_and_gradients_skip_padding():
    torch.manual_seed(0)
    score = AdditiveScore(4, 3, 5)
    query = randn(2, 2, 4, seed=1).requires_grad_()
    keys = randn(2, 5, 3, seed=2).requires_grad_()
    values = randn(2, 5, 6, seed=3).requires_grad_()
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    context, weights = attention(query, keys, values, mask, score)
    assert context.shape == (2, 2, 6) and weights.shape == (2, 2, 5)
    torch.testing.assert_close(context, torch.einsum("bqk,bkd->bqd", weights, values))
    context.square().sum().backward()
    for tensor in (query, keys, values, score.W.weight, score.U.weight, score.U.bias, score.v.weight):
        assert tensor.grad is not None and tensor.grad.abs().sum() > 0
    # padded keys and values neither receive gradient nor change the result
    assert torch.equal(values.grad[1, 2:], torch.zeros(3, 6))
    assert torch.equal(keys.grad[1, 2:], torch.zeros(3, 3))
    with torch.no_grad():
        short, _ = attention(query[1:], keys[1:, :2], values[1:, :2], None, score)
    torch.testing.assert_close(short, context[1:].detach())


def test_attention_rejects_mismatched_shapes():
    score = DotScore(4, 4)
    with pytest.raises(ValueError, match="same batch and as many values as keys"):
        attention(randn(2, 1, 4), randn(2, 5, 4), randn(2, 4, 3), None, score)
    with pytest.raises(ValueError, match="same batch"):
        attention(randn(3, 1, 4), randn(2, 5, 4), randn(2, 5, 3), None, score)
    with pytest.raises(TypeError, match="floating-point value of shape"):
        attention(randn(2, 1, 4), randn(2, 5, 4), torch.ones(2, 5, 3, dtype=torch.int64), None, score)


# -- encoder and model -----------------------------------------------------------------------
def test_bidirectional_encoder_gives_a_sentence_the_same_outputs_alone_and_padded():
    torch.manual_seed(0)
    encoder = BidirectionalEncoder(vocab_size=20, embed_size=5, hidden_size=6, decoder_size=8)
    src = torch.tensor([[5, 6, 7, 8, 9], [4, 10, 11, 0, 0]])
    lengths = torch.tensor([5, 3])
    outputs, initial = encoder(src, lengths)
    assert outputs.shape == (2, 5, 12) and initial.shape == (2, 8)
    alone, alone_initial = encoder(src[1:, :3], lengths[1:])
    torch.testing.assert_close(outputs[1:, :3], alone)
    torch.testing.assert_close(initial[1:], alone_initial)
    assert torch.equal(outputs[1, 3:], torch.zeros(2, 12))
    # the backward half at word 1 has read the whole sentence: changing the last word changes it
    changed, _ = encoder(torch.tensor([[4, 10, 12]]), torch.tensor([3]))
    assert not torch.allclose(changed[0, 0, 6:], alone[0, 0, 6:])
    torch.testing.assert_close(changed[0, 0, :6], alone[0, 0, :6])  # the forward half has not


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("score", SCORE_NAMES)
def test_model_logits_and_weights_do_not_depend_on_padding(corpus, style, score):
    splits, src_vocab, tgt_vocab = corpus
    model = small_model(corpus, score=score, **STYLES[style]).eval()
    pairs = sorted(splits.train[:6], key=lambda p: len(p.src))
    batch = make_batch(pairs, src_vocab, tgt_vocab)
    logits, weights = model.forward_with_attention(batch.src, batch.src_lengths, batch.tgt_in)
    assert logits.shape == (6, batch.tgt_in.shape[1], len(tgt_vocab))
    assert weights.shape == (6, batch.tgt_in.shape[1], batch.src.shape[1])
    assert torch.equal(weights * ~batch.src_mask[:, None, :], torch.zeros_like(weights))
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:2]))
    short = make_batch(pairs[:1], src_vocab, tgt_vocab)
    alone_logits, alone_weights = model.forward_with_attention(short.src, short.src_lengths, short.tgt_in)
    m, n = short.tgt_in.shape[1], short.src.shape[1]
    torch.testing.assert_close(logits[:1, :m], alone_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights[:1, :m, :n], alone_weights, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("style", STYLES)
def test_greedy_with_attention_is_greedy_decoding_and_shows_its_weights(corpus, style):
    splits, src_vocab, tgt_vocab = corpus
    model = small_model(corpus, score="general", seed=3, **STYLES[style]).eval()
    src = src_vocab.encode(splits.test[0].src)
    hyp = greedy(model.next_log_probs_fn(src), BOS, EOS, max_len=30)
    ids, weights = model.greedy_with_attention(src, max_len=30)
    assert ids == [t for t in hyp.tokens if t != EOS]
    assert weights.shape == (len(ids), len(src))
    torch.testing.assert_close(weights.sum(-1), torch.ones(len(ids)), atol=1e-5, rtol=0)


def test_attention_matrix_for_one_pair(corpus):
    splits, src_vocab, tgt_vocab = corpus
    model = small_model(corpus).eval()
    pair = splits.test[1]
    src, tgt = src_vocab.encode(pair.src), tgt_vocab.encode(pair.tgt)
    weights = model.attention_for(src, tgt)
    assert weights.shape == (len(tgt), len(src))
    torch.testing.assert_close(weights.sum(1), torch.ones(len(tgt)))
    batch = make_batch([pair], src_vocab, tgt_vocab)
    _, full = model.forward_with_attention(batch.src, batch.src_lengths, batch.tgt_in)
    torch.testing.assert_close(weights, full[0, :len(tgt)])  # the <eos> row is left out
    assert torch.equal(model.attention_for(torch.tensor(src), torch.tensor(tgt)), weights)


def test_model_rejects_bad_settings_and_inputs(corpus):
    with pytest.raises(ValueError, match="even hidden_size"):
        AttentionSeq2Seq(30, 30, hidden_size=15)
    with pytest.raises(ValueError, match="style"):
        small_model(corpus, style="vaswani")
    with pytest.raises(ValueError, match="input_feeding=False only with style='luong'"):
        small_model(corpus, style="bahdanau", input_feeding=False)
    with pytest.raises(ValueError, match="score"):
        small_model(corpus, score="cosine")
    model = small_model(corpus)
    with pytest.raises(TypeError, match=r"src of dtype torch.int64"):
        model(torch.ones(2, 3), torch.tensor([3, 3]), torch.ones(2, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="src_lengths between 1 and 3"):
        model(torch.ones(2, 3, dtype=torch.int64), torch.tensor([3, 0]), torch.ones(2, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="source's batch of 2"):
        model(torch.ones(2, 3, dtype=torch.int64), torch.tensor([3, 3]), torch.ones(3, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="one sentence"):
        model.next_log_probs_fn(torch.ones(2, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"tgt_ids as an int64 tensor of shape \(time,\)"):
        model.attention_for([4, 5, 6], torch.ones(2, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="tgt_ids with at least one token"):
        model.attention_for([4, 5, 6], [])


def test_training_on_the_translation_corpus_lowers_the_loss_and_is_deterministic(corpus):
    splits, src_vocab, tgt_vocab = corpus
    short = [p for p in splits.train if len(p.src) <= 12]
    batches = make_batches(short, src_vocab, tgt_vocab, batch_size=16, by_length=True)
    long_run = train_translation(small_model(corpus, seed=1), batches, steps=30, lr=2e-2, seed=0, device="cpu")
    again = train_translation(small_model(corpus, seed=1), batches, steps=5, lr=2e-2, seed=0, device="cpu")
    assert again.loss == long_run.loss[:5]  # same seeds, same device: the same run
    other = train_translation(small_model(corpus, seed=2), batches, steps=5, lr=2e-2, seed=0, device="cpu")
    assert other.loss != again.loss
    first, last = sum(long_run.loss[:5]) / 5, sum(long_run.loss[-5:]) / 5
    assert last < first - 1.0, (first, last)


def test_scheduled_sampling_runs_through_start_and_step(corpus):
    splits, src_vocab, tgt_vocab = corpus
    model = small_model(corpus, style="luong").eval()
    batch = make_batch(splits.train[:4], src_vocab, tgt_vocab)
    with torch.no_grad():
        forced = model(batch.src, batch.src_lengths, batch.tgt_in)
        scheduled = model.forward_scheduled(batch.src, batch.src_lengths, batch.tgt_in, 1.0, generator(0))
        free = model.forward_scheduled(batch.src, batch.src_lengths, batch.tgt_in, 0.0, generator(0))
    torch.testing.assert_close(scheduled, forced, atol=1e-5, rtol=1e-5)  # always the gold token: the same
    assert not torch.allclose(free, forced)  # its own (untrained) predictions instead
