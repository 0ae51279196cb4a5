"""What a layer costs, measured: the longest chain of dependent operations behind a result, and
the time of one training step.

Vaswani et al. (2017, Table 1) compare self-attention with a recurrent layer by *sequential
operations*: how many operations must run one after another, however many processors there are.
:func:`longest_chain` counts them without a clock, as the longest path in the autograd graph
behind a tensor. :func:`seconds_per_training_step` does use a clock (forward, backward, Adam), so
its numbers belong to the machine that produced them.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from . import checks
from .seeding import generator
from .translator import masked_cross_entropy

__all__ = ["longest_chain", "seconds_per_training_step"]


def longest_chain(output: torch.Tensor) -> int:
    """The number of operations on the longest path of the autograd graph behind ``output``
    (a tensor computed from inputs that require a gradient)."""
    if not isinstance(output, torch.Tensor) or output.grad_fn is None:
        raise ValueError("expected a tensor computed with autograd (from an input with requires_grad=True)")
    order, seen, stack = [], set(), [(output.grad_fn, False)]
    while stack:                                    # depth-first: every child before its parent
        fn, expanded = stack.pop()
        if expanded:
            order.append(fn)
        elif fn not in seen:
            seen.add(fn)
            stack.append((fn, True))
            stack.extend((child, False) for child, _ in fn.next_functions if child is not None)
    depth: dict = {}
    for fn in order:                                # 1 + the deepest of the operations it needs
        depth[fn] = 1 + max((depth[c] for c, _ in fn.next_functions if c is not None), default=0)
    return depth[output.grad_fn]


def seconds_per_training_step(model: nn.Module, length: int, src_vocab_size: int, tgt_vocab_size: int,
                              batch_size: int = 32, repeats: int = 3, seed: int = 0) -> float:
    """The fastest of ``repeats`` timed training steps (forward, backward and an Adam update at a
    tiny learning rate, after one untimed warm-up step) of a translator on random sentence pairs
    whose source and target both have ``length`` tokens, on the model's device. Wall-clock seconds:
    they depend on the machine, its load and its thread count."""
    length, batch_size, repeats = checks.positive_ints(length=length, batch_size=batch_size, repeats=repeats)
    device = next(model.parameters()).device
    gen = generator(seed)
    src = torch.randint(4, src_vocab_size, (batch_size, length), generator=gen).to(device)
    tgt = torch.randint(4, tgt_vocab_size, (batch_size, length + 1), generator=gen).to(device)
    lengths = torch.full((batch_size,), length, device=device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-9)
    was_training = model.training
    model.train()
    times = []
    for r in range(repeats + 1):
        if device.type == "cuda":
            torch.cuda.synchronize()
        tic = time.perf_counter()
        loss = masked_cross_entropy(model(src, lengths, tgt[:, :-1]), tgt[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if r:                                       # the first step only warms up
            times.append(time.perf_counter() - tic)
    model.train(was_training)
    return min(times)
