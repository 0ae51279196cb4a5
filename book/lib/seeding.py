"""Reproducible randomness: one seed fixes Python's, NumPy's and PyTorch's generators."""

from __future__ import annotations

import random

import numpy as np
import torch


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"expected an integer seed, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"expected a non-negative seed, got {seed}")
    return int(seed)


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and PyTorch (CPU and CUDA)."""
    seed = _check_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A fresh ``torch.Generator`` seeded with ``seed``, for code that must not touch global state."""
    gen = torch.Generator(device=device)
    gen.manual_seed(_check_seed(seed))
    return gen


def numpy_rng(seed: int) -> np.random.Generator:
    """A fresh NumPy ``Generator`` seeded with ``seed``."""
    return np.random.default_rng(_check_seed(seed))
