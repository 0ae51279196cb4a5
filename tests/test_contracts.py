"""Every model keeps its contract of seqbook.interfaces: the translators of chapters 4-6 work with
chapter 4's trainer, batched greedy decoding, greedy and beam search unchanged; the language
models of chapters 1-2 with one sampler; the recurrent layers of chapters 2-3 with any model
around them. One parametrised test per promise, instead of a near-copy per model (a chapter-7
model joins by adding a line to TRANSLATORS or LANGUAGE_MODELS)."""

import pytest
import torch

from torch import nn

from seqbook import decoding
from seqbook.attention_model import AttentionSeq2Seq
from seqbook.bidirectional import Bidirectional, Stacked
from seqbook.gated import GRUScratch, LSTMScratch
from seqbook.interfaces import (DecoderState, LanguageModel, NextLogProbs, RecurrentLayer, ShowsAttention,
                                Translator)
from seqbook.bidirectional import Tagger
from seqbook.lm import RecurrentLM
from seqbook.long_lag import LastStepRegressor
from seqbook.multihead import MultiHeadAttention
from seqbook.ngram import NGramLM
from seqbook.rnn import RNNScratch
from seqbook.seeding import generator
from seqbook.seq2seq import Seq2Seq
from seqbook.transformer import Transformer
from seqbook.translation import BOS, EOS, build_vocabs, make_batch, make_batches, make_splits
from seqbook.translator import greedy_batch, train_translation, translate, translation_bleu

TRANSLATORS = {
    "seq2seq-gru": lambda S, T: Seq2Seq(S, T, embed_size=12, hidden_size=16, seed=0),
    "seq2seq-lstm-reversed-2-layers": lambda S, T: Seq2Seq(S, T, embed_size=12, hidden_size=16, cell="lstm",
                                                           num_layers=2, reverse_source=True, feed_context=False,
                                                           seed=0),
    "bahdanau": lambda S, T: AttentionSeq2Seq(S, T, embed_size=8, hidden_size=16, seed=0),
    "luong-general": lambda S, T: AttentionSeq2Seq(S, T, embed_size=8, hidden_size=16, score="general",
                                                   style="luong", seed=0),
    "luong-dot-no-feeding": lambda S, T: AttentionSeq2Seq(S, T, embed_size=8, hidden_size=16, score="dot",
                                                          style="luong", input_feeding=False, seed=0),
    "transformer": lambda S, T: Transformer(S, T, d_model=16, num_heads=2, d_ff=32, num_layers=2,
                                            dropout=0.0, seed=0),
    "transformer-pre-norm-learned": lambda S, T: Transformer(S, T, d_model=16, num_heads=2, d_ff=32, num_layers=1,
                                                             dropout=0.0, positions="learned", norm_first=True,
                                                             seed=0),
}
TOL = dict(atol=1e-5, rtol=1e-5)


@pytest.fixture(scope="module")
def corpus():
    splits = make_splits(200, 0, 12, seed=0, max_len=12)
    src_vocab, tgt_vocab = build_vocabs(splits.train)
    return splits, src_vocab, tgt_vocab


@pytest.fixture(params=list(TRANSLATORS))
def model(request, corpus):
    _, src_vocab, tgt_vocab = corpus
    return TRANSLATORS[request.param](len(src_vocab), len(tgt_vocab)).eval()


def test_it_meets_the_protocol(model):
    assert isinstance(model, Translator)
    assert isinstance(model.next_log_probs_fn([4, 5, 6]), NextLogProbs)


def test_stepping_from_start_gives_the_teacher_forced_logits(model, corpus):
    splits, src_vocab, tgt_vocab = corpus
    b = make_batch(splits.test[:5], src_vocab, tgt_vocab)
    with torch.no_grad():
        forced = model(b.src, b.src_lengths, b.tgt_in)
        state = model.start(b.src, b.src_lengths)
        assert isinstance(state, DecoderState)
        stepped = []
        for t in range(b.tgt_in.shape[1]):
            logits, state = model.step(b.tgt_in[:, t], state)
            stepped.append(logits)
    torch.testing.assert_close(torch.stack(stepped, 1), forced, **TOL)


def test_scheduled_sampling_at_ratio_one_is_teacher_forcing(model, corpus):
    splits, src_vocab, tgt_vocab = corpus
    b = make_batch(splits.test[:4], src_vocab, tgt_vocab)
    with torch.no_grad():
        forced = model(b.src, b.src_lengths, b.tgt_in)
        torch.testing.assert_close(model.forward_scheduled(b.src, b.src_lengths, b.tgt_in, 1.0, generator(0)),
                                   forced, **TOL)
        free = model.forward_scheduled(b.src, b.src_lengths, b.tgt_in, 0.0, generator(0))
    assert not torch.allclose(free, forced)


def test_a_state_splits_into_sentences_and_joins_again(model, corpus):
    splits, src_vocab, tgt_vocab = corpus
    b = make_batch(splits.test[:3], src_vocab, tgt_vocab)
    with torch.no_grad():
        state = model.start(b.src, b.src_lengths)
        _, state = model.step(b.tgt_in[:, 0], state)
        rejoined = type(state).cat([state.select([2]), state.select([0]), state.select([1])])
        a, _ = model.step(b.tgt_in[:, 1], state)
        c, _ = model.step(b.tgt_in[[2, 0, 1], 1], rejoined)
    torch.testing.assert_close(c, a[[2, 0, 1]], **TOL)


def test_cached_next_log_probs_equal_the_teacher_forced_forward(model, corpus):
    splits, src_vocab, tgt_vocab = corpus
    pair = splits.test[0]
    src = src_vocab.encode(pair.src)
    gold = [BOS] + tgt_vocab.encode(pair.tgt)
    next_log_probs = model.next_log_probs_fn(src)
    for t in range(1, len(gold) + 1):  # one prefix at a time, each extending the cached parent
        with torch.no_grad():
            forced = model(torch.tensor([src]), torch.tensor([len(src)]), torch.tensor([gold[:t]]))
        torch.testing.assert_close(next_log_probs(torch.tensor([gold[:t]]))[0],
                                   torch.log_softmax(forced[0, -1], -1), **TOL)
    # several prefixes at once, one of them with parents never asked for
    prefixes = torch.tensor([gold[:4], [BOS, 7, 8, 9], gold[:4]])
    out = next_log_probs(prefixes)
    assert out.shape == (3, len(tgt_vocab))
    torch.testing.assert_close(out[1], model.next_log_probs_fn(src)(prefixes[1:2])[0], **TOL)
    torch.testing.assert_close(out[0], out[2])
    torch.testing.assert_close(out.exp().sum(-1), torch.ones(3), **TOL)


def test_a_sentence_reads_the_same_alone_and_in_a_padded_batch(model, corpus):
    splits, src_vocab, tgt_vocab = corpus
    pairs = sorted(splits.test, key=lambda p: len(p.src))[:2][::-1] + [max(splits.test, key=lambda p: len(p.src))]
    b = make_batch(pairs, src_vocab, tgt_vocab)
    alone = make_batch(pairs[:1], src_vocab, tgt_vocab)
    assert b.src.shape[1] > alone.src.shape[1]  # the sentence is padded in the batch
    with torch.no_grad():
        batched = model(b.src, b.src_lengths, b.tgt_in)[0, :alone.tgt_in.shape[1]]
        single = model(alone.src, alone.src_lengths, alone.tgt_in)[0]
    torch.testing.assert_close(batched, single, **TOL)


def test_chapter_4s_decoders_agree_on_it(model, corpus, device):
    splits, src_vocab, tgt_vocab = corpus
    model.to(device)
    b = make_batch(splits.test, src_vocab, tgt_vocab).to(device)
    rows = greedy_batch(model, b.src, b.src_lengths, max_len=15)
    for row, pair in zip(rows, splits.test):
        fn = model.next_log_probs_fn(src_vocab.encode(pair.src))
        assert decoding.greedy(fn, BOS, EOS, max_len=15).tokens == row
        assert decoding.beam_search(fn, BOS, EOS, beam_size=1, max_len=15)[0].tokens == row
    words = translate(model, [p.src for p in splits.test], src_vocab, tgt_vocab, max_len=15)
    assert words == [tgt_vocab.decode(row) for row in rows]
    assert 0 <= translation_bleu(model, splits.test, src_vocab, tgt_vocab).score <= 100
    assert not model.training  # translate puts the model back in the mode it was in


def test_beam_search_scores_are_the_models_own_log_probabilities(model, corpus):
    splits, src_vocab, tgt_vocab = corpus
    src = src_vocab.encode(splits.test[1].src)
    hyps = decoding.beam_search(model.next_log_probs_fn(src), BOS, EOS, beam_size=3, max_len=6)
    assert hyps and all(a.score >= b.score for a, b in zip(hyps, hyps[1:]))
    for hyp in hyps:
        with torch.no_grad():
            forced = model(torch.tensor([src]), torch.tensor([len(src)]), torch.tensor([[BOS] + hyp.tokens[:-1]]))
        log_probs = torch.log_softmax(forced[0], -1)
        total = log_probs[torch.arange(len(hyp.tokens)), torch.tensor(hyp.tokens)].sum().item()
        assert hyp.log_prob == pytest.approx(total, abs=1e-4)


def test_chapter_4s_trainer_trains_it_and_repeats_itself(model, corpus, device):
    splits, src_vocab, tgt_vocab = corpus
    batches = make_batches(splits.train, src_vocab, tgt_vocab, 32, seed=0)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    history = train_translation(model, batches, 20, lr=1e-2, seed=0, device=device)
    assert next(model.parameters()).device.type == device.type
    assert len(history.loss) == len(history.teacher_forcing) == 20 and history.diverged_at is None
    assert sum(history.loss[-5:]) < sum(history.loss[:5]) - 1.0
    model.load_state_dict(initial)
    again = train_translation(model, batches, 5, lr=1e-2, seed=0, device=device)
    if device.type == "cpu":
        assert again.loss == history.loss[:5]  # same seeds, same device: the same run
    else:  # CUDA sums an embedding's gradient with atomic adds, in no fixed order
        assert again.loss == pytest.approx(history.loss[:5], rel=1e-4)


def test_the_attention_models_show_where_they_look(model, corpus):
    splits, src_vocab, tgt_vocab = corpus
    pair = splits.test[2]
    if not isinstance(model, ShowsAttention):
        assert isinstance(model, Seq2Seq)  # chapter 4's model has no attention to show
        return
    weights = model.attention_for(src_vocab.encode(pair.src), tgt_vocab.encode(pair.tgt))
    assert weights.shape == (len(pair.tgt), len(pair.src)) and weights.device.type == "cpu"
    torch.testing.assert_close(weights.sum(-1), torch.ones(len(pair.tgt)), **TOL)


# -- recurrent layers and language models -----------------------------------------------------------
LAYERS = {
    "RNNScratch": lambda: RNNScratch(4, 6, seed=0),
    "LSTMScratch": lambda: LSTMScratch(4, 6, seed=0),
    "GRUScratch": lambda: GRUScratch(4, 6, seed=0),
    "Stacked": lambda: Stacked([GRUScratch(4, 6, seed=0), LSTMScratch(6, 6, seed=1)]),
    "Bidirectional": lambda: Bidirectional(GRUScratch(4, 3, seed=0), GRUScratch(4, 3, seed=1)),
    "nn.LSTM": lambda: nn.LSTM(4, 6, batch_first=True),
    "nn.GRU, 2 layers": lambda: nn.GRU(4, 6, num_layers=2, batch_first=True),
}


@pytest.mark.parametrize("name", LAYERS)
def test_a_recurrent_layer_reads_in_pieces_as_in_one_go(name):
    torch.manual_seed(0)
    layer = LAYERS[name]()
    assert isinstance(layer, RecurrentLayer)
    X = torch.randn(2, 7, 4, generator=generator(1))
    outputs, state = layer(X)
    width = 2 * layer.hidden_size if getattr(layer, "bidirectional", False) else layer.hidden_size
    assert outputs.shape == (2, 7, width)
    if getattr(layer, "bidirectional", False):
        return  # its backward half reads from the end: a piece is not a prefix
    first, carried = layer(X[:, :3])
    second, _ = layer(X[:, 3:], carried)
    torch.testing.assert_close(torch.cat([first, second], 1), outputs, **TOL)


TEXT = "the cat sat on the mat and the dog sat on the log " * 20
LANGUAGE_MODELS = {
    "NGramLM": lambda ids, V: NGramLM(3, alpha=0.1).fit(ids, vocab=range(V)),
    "RecurrentLM": lambda ids, V: RecurrentLM(V, nn.GRU(8, 16, batch_first=True), embedding_dim=8, seed=0),
}


@pytest.mark.parametrize("name", LANGUAGE_MODELS)
def test_a_language_model_is_sampled_by_decoding_sample(name):
    vocab = sorted(set(TEXT))
    ids = [vocab.index(c) for c in TEXT]
    model = LANGUAGE_MODELS[name](ids, len(vocab))
    assert isinstance(model, LanguageModel)
    next_log_probs = model.next_log_probs_fn()
    assert isinstance(next_log_probs, NextLogProbs)
    log_probs = next_log_probs(torch.tensor([ids[:5], ids[5:10]]))
    assert log_probs.shape == (2, len(vocab))
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(2, dtype=log_probs.dtype), **TOL)
    prefix = ids[:4]
    greedy = decoding.sample(model.next_log_probs_fn(), prefix, 6, temperature=0)
    for t, token in enumerate(greedy):  # temperature 0: the argmax after every prefix
        assert token == int(next_log_probs(torch.tensor([prefix + greedy[:t]]))[0].argmax())
    if name == "RecurrentLM":  # the model's own sample is decoding.sample with a torch generator
        assert model.sample(prefix, 6, temperature=0) == greedy
        assert model.sample(prefix, 20, seed=2) == decoding.sample(model.next_log_probs_fn(), prefix, 20, seed=2)
    else:  # the n-gram model's prefix is its context; it draws with NumPy's generator
        assert model.sample(6, temperature=0, context=prefix) == greedy
        assert model.sample(20, seed=2, context=prefix) == decoding.sample(
            model.next_log_probs_fn(prefix), [], 20, seed=2, draw=decoding.numpy_draw(2))


# -- seeds ----------------------------------------------------------------------------------------
MODELS = {
    "RNNScratch": lambda seed: RNNScratch(3, 4, seed=seed),
    "LSTMScratch": lambda seed: LSTMScratch(3, 4, seed=seed),
    "GRUScratch": lambda seed: GRUScratch(3, 4, seed=seed),
    "RecurrentLM": lambda seed: RecurrentLM(7, GRUScratch(3, 4, seed=0), embedding_dim=3, seed=seed),
    "Tagger": lambda seed: Tagger(9, seed=seed),
    "LastStepRegressor": lambda seed: LastStepRegressor("lstm", 4, seed=seed),
    "MultiHeadAttention": lambda seed: MultiHeadAttention(8, 2, seed=seed),
    "Seq2Seq": lambda seed: Seq2Seq(9, 9, embed_size=4, hidden_size=6, seed=seed),
    "AttentionSeq2Seq": lambda seed: AttentionSeq2Seq(9, 9, embed_size=4, hidden_size=6, seed=seed),
    "Transformer": lambda seed: Transformer(9, 9, d_model=8, num_heads=2, d_ff=8, num_layers=1, seed=seed),
}


def _parameters(module):
    return [p.detach().clone() for p in module.parameters()]


@pytest.mark.parametrize("name", MODELS)
def test_every_model_takes_its_seed_the_same_way(name):
    build = MODELS[name]
    torch.manual_seed(0)
    before = torch.get_rng_state()
    a, b, c = (_parameters(build(seed)) for seed in (3, 3, 4))
    assert torch.equal(torch.get_rng_state(), before), "a seeded model must not move the global generator"
    assert all(torch.equal(x, y) for x, y in zip(a, b)) and not all(torch.equal(x, z) for x, z in zip(a, c))
    # seed=None draws from the global generator, so torch.manual_seed fixes it and it moves on
    torch.manual_seed(3)
    unseeded = _parameters(build(None))
    assert all(torch.equal(x, y) for x, y in zip(unseeded, a)), "seed=s is the global generator seeded with s"
    assert not torch.equal(torch.get_rng_state(), before)
