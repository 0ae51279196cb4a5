"""Pick the compute device once: CUDA when present, else CPU."""

from __future__ import annotations

import os

import torch


def exact_float32() -> None:
    """Make CUDA compute float32 matrix products and cuDNN RNNs in full float32.

    By default PyTorch lets cuDNN (which runs ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU`` on a GPU) use
    TensorFloat-32, which keeps only 10 bits of mantissa: a GPU run then differs from the CPU run by
    about 1e-3 relative per product, far more than float32 rounding. The book's numbers are meant
    to agree across devices, so it trades that speed for precision."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def pick_device() -> torch.device:
    """CUDA if a GPU is visible, else CPU. ``SEQBOOK_DEVICE=cpu`` forces a choice.

    On CUDA, TensorFloat-32 is switched off (:func:`exact_float32`)."""
    forced = os.environ.get("SEQBOOK_DEVICE")
    device = torch.device(forced) if forced else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        exact_float32()
    return device
