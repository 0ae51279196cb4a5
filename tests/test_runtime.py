"""Device choice and progress bars."""

import torch

from seqbook.device import pick_device
from seqbook.progress import progress


def test_pick_device(monkeypatch):
    monkeypatch.delenv("SEQBOOK_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device().type == expected
    monkeypatch.setenv("SEQBOOK_DEVICE", "cpu")
    assert pick_device() == torch.device("cpu")


def test_progress_wraps_and_can_be_silenced(monkeypatch, capsys):
    monkeypatch.setenv("SEQBOOK_QUIET", "1")
    assert list(progress(range(5), desc="x")) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("SEQBOOK_QUIET", "0")
    assert sum(progress(range(3), desc="counting")) == 3
    assert "counting" in capsys.readouterr().err


def test_a_cuda_device_computes_in_full_float32(monkeypatch):
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        monkeypatch.setenv("SEQBOOK_DEVICE", "cuda")        # no GPU needed to pick it by name
        assert pick_device().type == "cuda"
        assert torch.backends.cuda.matmul.allow_tf32 is False
        assert torch.backends.cudnn.allow_tf32 is False
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
