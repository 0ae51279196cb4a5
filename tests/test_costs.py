"""Measuring what a layer costs: the longest chain of dependent operations, the time of a step."""

import math

import pytest
import torch
from torch import nn

from seqbook.costs import longest_chain, seconds_per_training_step
from seqbook.transformer import EncoderLayer, Transformer


def test_a_chain_of_k_operations_is_k_long_and_parallel_branches_do_not_add():
    x = torch.randn(3, requires_grad=True)
    y = x
    for _ in range(5):
        y = y * 2                      # five multiplications, one after another
    assert longest_chain(y) == 5 + 1   # and the leaf's accumulation node
    branches = [x * k for k in range(10)]  # ten independent products, then one sum
    assert longest_chain(torch.stack(branches).sum()) == longest_chain((x * 2).sum()) + 1


def test_a_recurrence_grows_with_the_length_and_self_attention_does_not():
    torch.manual_seed(0)
    cell, layer = nn.GRUCell(8, 8), EncoderLayer(8, 2, 16)
    gru, attention = [], []
    for n in (4, 8, 16):
        x = torch.randn(1, n, 8, requires_grad=True)
        h = torch.zeros(1, 8)
        for t in range(n):
            h = cell(x[:, t], h)
        gru.append(longest_chain(h.sum()))
        attention.append(longest_chain(layer(x).sum()))
    assert gru[1] - gru[0] == (gru[2] - gru[1]) / 2 > 0          # linear in n
    assert len(set(attention)) == 1                              # the same for every n


def test_longest_chain_needs_an_autograd_result():
    with pytest.raises(ValueError, match="computed with autograd"):
        longest_chain(torch.ones(3))


def test_a_training_step_is_timed_and_leaves_the_model_as_it_was():
    model = Transformer(12, 10, d_model=16, num_heads=2, d_ff=32, num_layers=1, dropout=0.0, seed=0).eval()
    before = [p.detach().clone() for p in model.parameters()]
    seconds = seconds_per_training_step(model, 6, 12, 10, batch_size=4, repeats=2)
    assert math.isfinite(seconds) and 0 < seconds < 10
    assert not model.training                                     # mode restored
    drift = max((p - b).abs().max().item() for p, b in zip(model.parameters(), before))
    assert drift < 1e-6                                           # a learning rate of 1e-9
    with pytest.raises(ValueError, match="positive integer length"):
        seconds_per_training_step(model, 0, 12, 10)
