"""Bidirectional and stacked wrappers against PyTorch, and the negation task."""

import pytest
import torch
from torch import nn

from seqbook.bidirectional import (IGNORE, NOT, Bidirectional, Stacked, Tagger, negation_task, negation_vocab,
                                   tag_accuracy, train_tagger)
from seqbook.gated import GRUScratch, LSTMScratch


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_bidirectional_matches_torch(cls, device):
    torch.manual_seed(0)
    ref = cls(3, 4, batch_first=True, bidirectional=True).to(device)
    scratch = Bidirectional.from_torch(ref)
    X = torch.randn(2, 6, 3).to(device)
    out_ref, _ = ref(X)
    out, _ = scratch(X)
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-5)
    out_ref.pow(2).sum().backward()
    out.pow(2).sum().backward()
    back = scratch.backward_layer
    grad = back.W_hh.grad.T if cls is nn.RNN else back.weight_hh.grad
    torch.testing.assert_close(grad, ref.weight_hh_l0_reverse.grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_stacked_matches_torch(bidirectional, device):
    torch.manual_seed(0)
    ref = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=bidirectional).to(device)
    scratch = Stacked.from_torch(ref)
    X = torch.randn(2, 5, 3).to(device)
    out_ref, (h_ref, c_ref) = ref(X)
    out, states = scratch(X)
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-5)
    top = states[-1][0] if bidirectional else states[-1]
    torch.testing.assert_close(top[1], c_ref[2 if bidirectional else 1], atol=1e-5, rtol=1e-5)
    out_ref.sum().backward()
    out.sum().backward()
    first = scratch.layers[0].forward_layer if bidirectional else scratch.layers[0]
    torch.testing.assert_close(first.weight_hh.grad, ref.weight_hh_l0.grad, atol=1e-5, rtol=1e-5)


def test_residual_stack_adds_each_layers_input_to_its_output():
    torch.manual_seed(0)
    layers = [GRUScratch(4, 4), LSTMScratch(4, 4), GRUScratch(4, 4)]
    X = torch.randn(2, 5, 4)
    out, states = Stacked(layers, residual=True)(X)
    H = X
    for layer in layers:
        H = H + layer(H)[0]
    torch.testing.assert_close(out, H)
    assert len(states) == 3 and isinstance(states[1], tuple)
    plain, _ = Stacked(layers)(X)
    assert not torch.allclose(out, plain)                      # the connection changes the function
    # with every layer's weights at zero a residual stack passes its input through unchanged
    for layer in layers:
        for p in layer.parameters():
            p.data.zero_()
    torch.testing.assert_close(Stacked(layers, residual=True)(X)[0], X)


def test_residual_stack_shortens_the_gradient_path():
    torch.manual_seed(0)
    X = torch.randn(4, 10, 16, requires_grad=True)
    norms = {}
    for residual in (False, True):
        torch.manual_seed(1)
        stack = Stacked([nn.LSTM(16, 16, batch_first=True) for _ in range(8)], residual=residual)
        grad, = torch.autograd.grad(stack(X)[0][:, -1].sum(), X)
        norms[residual] = grad.norm().item()
    assert norms[True] > 10 * norms[False]


def test_residual_stack_needs_equal_widths():
    with pytest.raises(ValueError, match="output as many features as it reads"):
        Stacked([LSTMScratch(2, 3), LSTMScratch(3, 3)], residual=True)
    with pytest.raises(ValueError, match="output as many features"):
        Stacked([Bidirectional(GRUScratch(3, 3), GRUScratch(3, 3))], residual=True)


def test_bidirectional_output_at_t_sees_the_future_and_forward_does_not():
    torch.manual_seed(0)
    bi = Bidirectional(GRUScratch(2, 3), GRUScratch(2, 3))
    X = torch.randn(1, 6, 2)
    Y = X.clone()
    Y[0, 5] += 1.0  # change only the last step
    a, _ = bi(X)
    b, _ = bi(Y)
    assert torch.allclose(a[0, :5, :3], b[0, :5, :3])          # forward half: unchanged before step 5
    assert not torch.allclose(a[0, 0, 3:], b[0, 0, 3:])        # backward half at step 0 has seen it


def test_wrapper_errors():
    with pytest.raises(ValueError, match="same input and hidden sizes"):
        Bidirectional(LSTMScratch(2, 3), LSTMScratch(2, 4))
    with pytest.raises(ValueError, match="input_size 3"):
        Stacked([LSTMScratch(2, 3), LSTMScratch(4, 3)])
    with pytest.raises(ValueError, match="bidirectional=True"):
        Bidirectional.from_torch(nn.GRU(2, 3, batch_first=True))
    with pytest.raises(ValueError, match="built with batch_first=True"):
        Stacked.from_torch(nn.GRU(2, 3, num_layers=2))
    with pytest.raises(ValueError, match="one state per layer"):
        Stacked([LSTMScratch(2, 3)])(torch.zeros(1, 2, 2), [None, None])


def test_negation_task_labels_flip_after_not():
    vocab = negation_vocab()
    tokens, labels, negated = negation_task(400, 12, seed=4)
    assert tokens.shape == labels.shape == (400, 12) and tokens.dtype == torch.int64
    assert ((labels != IGNORE).sum(1) == 1).all()
    not_id = vocab.id_of(NOT)
    assert torch.equal((tokens == not_id).any(1), negated)
    where = (labels != IGNORE).float().argmax(1)
    assert (where < 6).all()
    for row in range(400):
        adjective = vocab.itos[int(tokens[row, where[row]])]
        positive = adjective in ("good", "great", "tasty", "fresh")
        assert int(labels[row, where[row]]) == int(positive != bool(negated[row]))
        if negated[row]:
            assert int((tokens[row] == not_id).nonzero()[0]) >= int(where[row]) + 2
    assert 0.4 < negated.float().mean() < 0.6
    assert torch.equal(negation_task(5, seed=1)[0], negation_task(5, seed=1)[0])
    with pytest.raises(ValueError, match="length >= 6"):
        negation_task(3, 4)


def test_bidirectional_tagger_beats_left_to_right():
    vocab = negation_vocab()
    torch.manual_seed(0)
    uni = train_tagger(Tagger(len(vocab), "gru"), steps=150, device=torch.device("cpu"), n_test=500)
    torch.manual_seed(0)
    bi = train_tagger(Tagger(len(vocab), "gru", bidirectional=True), steps=150, device=torch.device("cpu"),
                      n_test=500)
    assert bi["all"] > 0.95 and uni["all"] < 0.62
    with pytest.raises(ValueError, match=r"token ids in 0..20, got ids from 25 to 25"):
        Tagger(len(vocab))(torch.tensor([[25]]))
    tokens, labels, negated = negation_task(50, seed=9)
    tagger = Tagger(len(vocab))
    with torch.no_grad():
        pred = tagger(tokens).argmax(-1)
    where = labels != IGNORE
    right = (pred == labels) & where
    expected = float(right[negated].sum()) / float(where[negated].sum())
    assert tag_accuracy(tagger, tokens, labels, negated) == pytest.approx(expected)
    assert tagger.training  # tag_accuracy restores the mode
