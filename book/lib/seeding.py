"""Reproducible randomness: one seed fixes Python's, NumPy's and PyTorch's generators.

Two kinds of seed appear in the book. *Data* seeds (the corpus splits, the chosen example
sentences, a Monte-Carlo measurement without training) are fixed numbers in the chapters and
never change. *Training* seeds (initial weights, batch order, dropout, sampling during training)
go through :func:`training_seed`, which shifts them by the reader's choice of ``SEQBOOK_SEED``
(default 0). Setting ``SEQBOOK_SEED=3`` before starting the kernel gives a fresh, independent run
of every trained model in a chapter while its data stay the same: every claim the book makes
about a trained model is checked for ``SEQBOOK_SEED`` = 0 to 4 (``make seeds``).
"""

from __future__ import annotations

import contextlib
import os
import random
from typing import Iterator

import numpy as np
import torch

from . import checks

SEED_VARIABLE = "SEQBOOK_SEED"
# Training seed s under SEQBOOK_SEED = k becomes s + k * SEED_STRIDE, so that the runs of one
# chapter (seeds 0, 1, 2, ...) never coincide with the runs of another k.
SEED_STRIDE = 1000


def book_seed() -> int:
    """The reader's training seed: the environment variable ``SEQBOOK_SEED`` (0 when unset)."""
    raw = os.environ.get(SEED_VARIABLE, "").strip()
    if not raw:
        return 0
    if not raw.isdigit():
        raise ValueError(f"expected {SEED_VARIABLE} to be a non-negative integer, got {raw!r}")
    return int(raw)


def training_seed(seed: int = 0) -> int:
    """The seed of one training run: ``seed`` shifted by the reader's ``SEQBOOK_SEED``.

    With ``SEQBOOK_SEED`` unset or 0 it returns ``seed`` itself (the run printed on the website).
    """
    return checks.integer(seed, "seed", 0) + SEED_STRIDE * book_seed()


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and PyTorch (CPU and CUDA)."""
    seed = checks.integer(seed, "seed", 0)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A fresh ``torch.Generator`` seeded with ``seed``, for code that must not touch global state."""
    gen = torch.Generator(device=device)
    gen.manual_seed(checks.integer(seed, "seed", 0))
    return gen


@contextlib.contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Run a block with PyTorch's global CPU generator seeded with ``seed``, then put the
    generator back as it was: ``with seeded(0): layer = nn.LSTM(8, 16)`` gives the same weights
    every time and leaves the reader's own random stream untouched. ``seed=None`` does nothing
    (the block draws from the global generator, as without the ``with``)."""
    if seed is None:
        yield
        return
    seed = checks.integer(seed, "seed", 0)
    with torch.random.fork_rng(devices=[]):  # saves and restores the CPU generator only,
        torch.default_generator.manual_seed(seed)  # so only that one is seeded (not CUDA's)
        yield


def numpy_rng(seed: int) -> np.random.Generator:
    """A fresh NumPy ``Generator`` seeded with ``seed``."""
    return np.random.default_rng(checks.integer(seed, "seed", 0))
