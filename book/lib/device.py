"""Pick the compute device once: CUDA when present, else CPU."""

from __future__ import annotations

import os

import torch


def pick_device() -> torch.device:
    """CUDA if a GPU is visible, else CPU. ``SEQBOOK_DEVICE=cpu`` forces a choice."""
    forced = os.environ.get("SEQBOOK_DEVICE")
    if forced:
        return torch.device(forced)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
