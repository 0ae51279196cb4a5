"""Scaled dot-product and multi-head attention against PyTorch's: outputs, weights, gradients."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.multihead import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention

TOL = dict(atol=1e-5, rtol=1e-5)


def _qkv(batch=3, heads=2, n_q=5, n_k=6, d_k=8, d_v=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, heads, n_q, d_k, generator=gen),
            torch.randn(batch, heads, n_k, d_k, generator=gen),
            torch.randn(batch, heads, n_k, d_v, generator=gen))


def _torch_keep_mask(n_q, n_k, key_padding_mask=None, causal=False, attn_mask=None):
    """Our masks (True = blocked) as torch SDPA's boolean attn_mask (True = may attend)."""
    device = next((m.device for m in (key_padding_mask, attn_mask) if m is not None), None)
    blocked = torch.zeros(n_q, n_k, dtype=torch.bool, device=device)
    if causal:
        blocked |= torch.ones(n_q, n_k, dtype=torch.bool, device=device).triu(1)
    if attn_mask is not None:
        blocked |= attn_mask
    if key_padding_mask is not None:
        blocked = blocked | key_padding_mask[:, None, None, :]
    return ~blocked


def test_masks():
    assert causal_mask(3).tolist() == [[False, True, True], [False, False, True], [False, False, False]]
    assert padding_mask(torch.tensor([2, 3]), 4).tolist() == [[False, False, True, True],
                                                             [False, False, False, True]]
    with pytest.raises(ValueError, match="between 1 and 4"):
        padding_mask(torch.tensor([5]), 4)


@pytest.mark.parametrize("masks", ["none", "padding", "causal", "padding+causal", "pattern"])
def test_attention_equals_torch_sdpa(masks, device):
    q, k, v = (t.to(device) for t in _qkv(n_q=6, n_k=6))
    kpm = torch.tensor([[False] * 6, [False] * 4 + [True] * 2, [False] * 2 + [True] * 4], device=device)
    pattern = (torch.rand(6, 6, generator=torch.Generator().manual_seed(3)) < 0.3).to(device)
    pattern.fill_diagonal_(False)  # keep every row something to look at
    kw = dict(key_padding_mask=kpm if "padding" in masks else None, causal="causal" in masks,
              attn_mask=pattern if masks == "pattern" else None)
    out, weights = scaled_dot_product_attention(q, k, v, **kw)
    keep = _torch_keep_mask(6, 6, **kw).to(device)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    torch.testing.assert_close(out, ref, **TOL)
    assert weights.shape == (3, 2, 6, 6)
    assert torch.all(weights[~keep.expand_as(weights)] == 0)  # exactly zero, not just small
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 6, device=device), **TOL)
    if masks == "causal":  # torch's own causal flag means the same thing as ours
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), **TOL)


def test_attention_without_heads_axis_and_with_more_keys_than_queries():
    q, k, v = _qkv(heads=1, n_q=3, n_k=7)
    q, k, v = q[:, 0], k[:, 0], v[:, 0]
    kpm = torch.zeros(3, 7, dtype=torch.bool)
    kpm[1, 5:] = True
    out, weights = scaled_dot_product_attention(q, k, v, key_padding_mask=kpm, causal=True)
    assert out.shape == (3, 3, 4) and weights.shape == (3, 3, 7)
    keep = ~(torch.ones(3, 7, dtype=torch.bool).triu(1) | kpm[:, None, :])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=keep), **TOL)


def test_fully_masked_row_gives_zeros_not_nan():
    q, k, v = _qkv(batch=2)
    q.requires_grad_(True)
    kpm = torch.zeros(2, 6, dtype=torch.bool)
    kpm[1] = True  # the second sequence has no key at all
    out, weights = scaled_dot_product_attention(q, k, v, key_padding_mask=kpm)
    assert torch.all(out[1] == 0) and torch.all(weights[1] == 0)
    assert not torch.isnan(out).any()
    out.sum().backward()
    assert not torch.isnan(q.grad).any() and torch.all(q.grad[1] == 0)
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(2, 5), **TOL)


def test_attention_rejects_bad_input():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"expected k of shape \(batch, heads, keys, 8\), got \(3, 2, 6, 4\)"):
        scaled_dot_product_attention(q, k[..., :4], v)
    with pytest.raises(ValueError, match="as many values as keys"):
        scaled_dot_product_attention(q, k, v[:, :, :5])
    with pytest.raises(TypeError, match="bool tensor"):
        scaled_dot_product_attention(q, k, v, key_padding_mask=torch.zeros(3, 6))
    with pytest.raises(ValueError, match=r"key_padding_mask of shape \(3, 6\)"):
        scaled_dot_product_attention(q, k, v, key_padding_mask=torch.zeros(3, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="floating-point q"):
        scaled_dot_product_attention(q.long(), k, v)


def _mha_pair(d_model=24, heads=4, seed=0):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, heads, batch_first=True)
    with torch.no_grad():  # non-zero biases, so copying them is tested too
        ref.in_proj_bias.normal_()
        ref.out_proj.bias.normal_()
    return ref, MultiHeadAttention.from_torch(ref)


def _grads(ref, mha):
    g = {n: p.grad for n, p in mha.named_parameters()}
    mine = {"in_proj_weight": torch.cat([g[f"{x}_proj.weight"] for x in "qkv"]),
            "in_proj_bias": torch.cat([g[f"{x}_proj.bias"] for x in "qkv"]),
            "out_proj.weight": g["out_proj.weight"], "out_proj.bias": g["out_proj.bias"]}
    return {n: (p.grad, mine[n]) for n, p in ref.named_parameters()}


@pytest.mark.parametrize("kind", ["self", "cross"])
def test_multihead_attention_equals_torch(kind, device):
    ref, mha = (m.to(device) for m in _mha_pair())
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 5, 24, generator=gen).to(device).requires_grad_()
    memory = torch.randn(3, 7, 24, generator=gen).to(device).requires_grad_() if kind == "cross" else x
    n_k = memory.shape[1]
    kpm = torch.zeros(3, n_k, dtype=torch.bool, device=device)
    kpm[1, -2:], kpm[2, -3:] = True, True
    causal = kind == "self"
    attn_mask = causal_mask(5, device) if causal else None
    out_ref, w_ref = ref(x, memory, memory, key_padding_mask=kpm, attn_mask=attn_mask)
    _, heads_ref = ref(x, memory, memory, key_padding_mask=kpm, attn_mask=attn_mask,
                       average_attn_weights=False)
    out, w = mha(x, memory, memory, key_padding_mask=kpm, causal=causal)
    torch.testing.assert_close(out, out_ref, **TOL)
    torch.testing.assert_close(w.mean(dim=1), w_ref, **TOL)
    torch.testing.assert_close(w, heads_ref, **TOL)
    target = torch.randn(out.shape, generator=gen).to(device)
    (x_grad_ref,) = torch.autograd.grad((out_ref * target).sum(), x, retain_graph=True)
    (out_ref * target).sum().backward()
    (x_grad,) = torch.autograd.grad((out * target).sum(), x, retain_graph=True)
    (out * target).sum().backward()
    torch.testing.assert_close(x_grad, x_grad_ref, **TOL)
    for name, (g_ref, g) in _grads(ref, mha).items():
        assert g is not None and g.abs().sum() > 0, name
        torch.testing.assert_close(g, g_ref, **TOL, msg=name)


def test_self_attention_is_permutation_equivariant():
    _, mha = _mha_pair()
    x = torch.randn(2, 6, 24, generator=torch.Generator().manual_seed(2))
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    out, w = mha(x, x, x)
    out_p, w_p = mha(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(out_p, out[:, perm], **TOL)
    torch.testing.assert_close(w_p, w[:, :, perm][:, :, :, perm], **TOL)


def test_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, dropout=0.5)
    x = torch.randn(2, 6, 16)
    mha.train()
    a, b = mha(x, x, x)[0], mha(x, x, x)[0]
    assert (a - b).abs().max() > 1e-3
    mha.eval()
    assert torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])


def test_multihead_rejects_bad_input_and_modules():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match="batch_first=True"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2))
    with pytest.raises(ValueError, match="kdim = vdim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4, batch_first=True))
    with pytest.raises(TypeError, match="nn.MultiheadAttention"):
        MultiHeadAttention.from_torch(nn.Linear(8, 8))
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"expected query of shape \(batch, queries, 8\), got \(3, 8\)"):
        mha(torch.randn(3, 8), torch.randn(3, 8), torch.randn(3, 8))
    x = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match=r"query, key, value with the same batch and as many values as keys"):
        mha(x, x, torch.randn(2, 4, 8))


def test_softmax_saturation_measures_why_scores_are_scaled():
    from seqbook.multihead import softmax_saturation

    small, large = softmax_saturation(4, samples=500), softmax_saturation(256, samples=500)
    assert abs(large["variance"] / 256 - 1) < 0.1 and abs(small["variance"] / 4 - 1) < 0.1
    # Unscaled, the softmax turns nearly one-hot as d_k grows and its gradient dies away...
    assert large["max_weight_unscaled"] > 0.85 and large["grad_norm_unscaled"] < 0.5 * small["grad_norm_unscaled"]
    # ...scaled, it looks the same at every d_k.
    assert abs(large["max_weight_scaled"] - small["max_weight_scaled"]) < 0.05
    assert abs(large["grad_norm_scaled"] - small["grad_norm_scaled"]) < 0.05
    with pytest.raises(ValueError, match="positive integer d_k"):
        softmax_saturation(0)
