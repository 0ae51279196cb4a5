"""The sine/cosine position encoding: the paper's formula, rotations, and the three modules."""

import math

import pytest
import torch

from seqbook.positions import (LearnedPositions, NoPositions, SinusoidalPositions, frequencies,
                               make_positions, positional_encoding, rotation_matrix)


def test_table_follows_the_paper_formula():
    pe = positional_encoding(50, 16)
    assert pe.shape == (50, 16) and pe.dtype == torch.float32
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert frequencies(16)[0] == 1 and frequencies(16)[-1] == pytest.approx(10000 ** (-14 / 16))


def test_odd_or_bad_sizes_are_rejected():
    with pytest.raises(ValueError, match="expected an even d_model"):
        positional_encoding(10, 7)
    with pytest.raises(ValueError, match="positive integer max_len"):
        positional_encoding(0, 8)
    with pytest.raises(ValueError, match="even d_model"):
        SinusoidalPositions(5)
    with pytest.raises(TypeError, match="integer offset"):
        rotation_matrix(1.5, 8)


@pytest.mark.parametrize("k", [1, 3, 17, -4])
def test_shifting_by_k_is_a_fixed_rotation(k):
    pe = positional_encoding(80, 12, dtype=torch.float64)
    R = rotation_matrix(k, 12)
    rows = torch.arange(max(0, -k), 80 - max(k, 0))
    torch.testing.assert_close(pe[rows] @ R, pe[rows + k], atol=1e-10, rtol=0)
    torch.testing.assert_close(R @ R.T, torch.eye(12, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(rotation_matrix(-k, 12), R.T, atol=1e-12, rtol=0)
    # The shift does change the rows, so the equality above is not trivially true.
    assert (pe[rows] - pe[rows + k]).abs().max() > 0.1


def test_rotations_compose():
    torch.testing.assert_close(rotation_matrix(3, 8) @ rotation_matrix(5, 8), rotation_matrix(8, 8),
                               atol=1e-12, rtol=0)


def test_dot_product_depends_only_on_the_offset():
    pe = positional_encoding(100, 32, dtype=torch.float64)
    for k in (0, 1, 5, 20):
        dots = (pe[:100 - k] * pe[k:]).sum(-1)  # PE(pos) . PE(pos + k) for every pos
        expected = torch.cos(k * frequencies(32)).sum()
        torch.testing.assert_close(dots, expected.expand_as(dots), atol=1e-10, rtol=0)
    assert (pe[0] @ pe[1]) > (pe[0] @ pe[20])  # nearer positions look more alike here


def test_modules_share_one_call():
    x = torch.randn(2, 9, 8, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    modules = {kind: make_positions(kind, 8, max_len=20) for kind in ("sinusoidal", "learned", "none")}
    torch.testing.assert_close(modules["sinusoidal"](x), x + positional_encoding(9, 8))
    assert torch.equal(modules["none"](x), x)
    learned = modules["learned"]
    assert isinstance(learned, LearnedPositions) and learned.table.shape == (20, 8)
    torch.testing.assert_close(learned(x), x + learned.table[:9].detach())
    learned(x).sum().backward()
    assert torch.all(learned.table.grad[:9] == 2) and torch.all(learned.table.grad[9:] == 0)
    assert len(list(modules["sinusoidal"].parameters())) == 0
    assert modules["sinusoidal"].state_dict() == {}
    assert isinstance(modules["none"], NoPositions)


def test_learned_table_starts_at_the_sinusoids_scale():
    torch.manual_seed(0)
    table = LearnedPositions(64, 400).table.detach()
    assert abs(table.pow(2).mean().item() - 0.5) < 0.02
    assert positional_encoding(400, 64).pow(2).mean().item() == pytest.approx(0.5, abs=1e-6)


def test_positions_reject_bad_input():
    sine = SinusoidalPositions(8, max_len=10)
    with pytest.raises(ValueError, match=r"expected the embeddings of shape \(batch, time, 8\), got \(10, 8\)"):
        sine(torch.randn(10, 8))
    with pytest.raises(ValueError, match="at most max_len = 10 positions, got 11"):
        sine(torch.randn(1, 11, 8))
    with pytest.raises(TypeError, match="floating-point the embeddings.*token ids go through an embedding"):
        sine(torch.zeros(1, 3, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="one of"):
        make_positions("rotary", 8)
