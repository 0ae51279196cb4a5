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
