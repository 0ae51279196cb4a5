"""How chapter 6's exercises are graded (the Transformer).

Each hidden test is a self-contained function: its parameters name the notebook variables it
reads, and it computes its own reference answer (never from ``seqbook.exercises``).
"""

from seqbook.authoring.grader import GradingSpec

spec = GradingSpec()

spec.auto("ch6-ex-variance", written=3)


@spec.hidden("ch6-ex-variance", points=1)
def variance_of_the_dot_product(variance_unscaled):
    assert abs(float(variance_unscaled) - 64) < 1e-6, f"Var(q . k) for d_k = 64 is not {variance_unscaled!r}"


@spec.hidden("ch6-ex-variance", points=1)
def variance_of_the_scaled_score(variance_scaled):
    assert abs(float(variance_scaled) - 1) < 1e-6, f"Var(q . k / sqrt(d_k)) is not {variance_scaled!r}"


spec.auto("ch6-ex-rotation", written=3)


@spec.hidden("ch6-ex-rotation", points=2)
def rotation_shifts_the_encoding(rotation):
    import math
    import torch
    d = 12
    pos = torch.arange(80, dtype=torch.float64)[:, None]
    omega = torch.tensor([10000 ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    pe = torch.zeros(80, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * omega), torch.cos(pos * omega)
    for k in (2, 7, 25):
        R = torch.as_tensor(rotation(k, d)).double()
        assert tuple(R.shape) == (d, d), f"rotation({k}, {d}) has shape {tuple(R.shape)}"
        assert torch.allclose(pe[:50] @ R, pe[k:k + 50], atol=1e-6), f"PE(pos) R_{k} is not PE(pos + {k}) for d_model = {d}"
    assert math.isfinite(float(R.sum()))


@spec.hidden("ch6-ex-rotation", points=1)
def rotations_compose(rotation):
    import torch
    R = {k: torch.as_tensor(rotation(k, 6)).double() for k in (3, 5, 8)}
    assert torch.allclose(R[3] @ R[5], R[8], atol=1e-6), "R_3 R_5 must be R_8"
    assert torch.allclose(R[3] @ R[3].T, torch.eye(6, dtype=torch.float64), atol=1e-6), "R_k must be orthogonal"


spec.auto("ch6-ex-attention")


@spec.hidden("ch6-ex-attention", points=1)
def attention_without_masks(masked_attention):
    import math
    import torch
    gen = torch.Generator().manual_seed(120)
    q, k, v = torch.randn(2, 4, 6, generator=gen), torch.randn(2, 5, 6, generator=gen), torch.randn(2, 5, 3, generator=gen)
    weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(6), dim=-1)
    out, w = masked_attention(q, k, v)
    assert torch.allclose(w, weights, atol=1e-5), "the weights are not softmax(q k^T / sqrt(d_k))"
    assert torch.allclose(out, weights @ v, atol=1e-5), "the output is not weights @ v"


@spec.hidden("ch6-ex-attention", points=1)
def attention_with_padding(masked_attention):
    import math
    import torch
    gen = torch.Generator().manual_seed(121)
    q, k, v = torch.randn(2, 3, 4, generator=gen), torch.randn(2, 5, 4, generator=gen), torch.randn(2, 5, 2, generator=gen)
    padding = torch.tensor([[False] * 5, [False, False, True, True, True]])
    scores = (q @ k.transpose(1, 2) / math.sqrt(4)).masked_fill(padding[:, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out, w = masked_attention(q, k, v, key_padding_mask=padding)
    assert bool((w[1, :, 2:] == 0).all()), "padding keys must get weight exactly 0"
    assert torch.allclose(w, weights, atol=1e-5) and torch.allclose(out, weights @ v, atol=1e-5), \
        "with a padding mask the weights or the output differ"


@spec.hidden("ch6-ex-attention", points=1)
def attention_with_causal_mask(masked_attention):
    import math
    import torch
    gen = torch.Generator().manual_seed(122)
    x = torch.randn(1, 6, 4, generator=gen)
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    weights = torch.softmax((x @ x.transpose(1, 2) / 2).masked_fill(future, float("-inf")), dim=-1)
    out, w = masked_attention(x, x, x, causal=True)
    assert bool((w[0][future] == 0).all()), "under the causal mask every key j > i must get weight exactly 0"
    assert torch.allclose(w, weights, atol=1e-5) and torch.allclose(out, weights @ x, atol=1e-5), \
        "with the causal mask the weights or the output differ"
    assert math.isfinite(float(out.sum()))


spec.auto("ch6-ex-params", written=1)


@spec.hidden("ch6-ex-params", points=1)
def attention_sublayer_parameters(attention_params):
    d = 512
    assert int(attention_params) == attention_params and int(attention_params) == 4 * (d * d + d), \
        f"{attention_params!r} is not the number of parameters of W_Q, W_K, W_V, W_O with biases"


@spec.hidden("ch6-ex-params", points=1)
def encoder_layer_parameters(layer_params):
    d, f = 512, 2048
    right = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d
    assert int(layer_params) == layer_params and int(layer_params) == right, \
        f"{layer_params!r} is not the number of parameters of one encoder layer"


spec.auto("ch6-ex-causal")


@spec.hidden("ch6-ex-causal", points=2)
def causal_weights_by_hand(causal_weights):
    import math
    Q = [[2, 0, 0, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
    K = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 1, 1]]
    right = []
    for i, q in enumerate(Q):
        scores = [sum(a * b for a, b in zip(q, k)) / 2 for k in K[:i + 1]]
        total = sum(math.exp(s) for s in scores)
        right.append([math.exp(s) / total for s in scores] + [0.0] * (2 - i))
    got = [[float(x) for x in row] for row in causal_weights]
    assert len(got) == 3 and all(len(r) == 3 for r in got), "expected a 3 x 3 matrix"
    assert all(abs(g - r) < 2e-3 for gr, rr in zip(got, right) for g, r in zip(gr, rr)), \
        f"the causal weights are not {[[round(x, 3) for x in r] for r in got]}"


spec.auto("ch6-ex-prenorm", written=4)


@spec.hidden("ch6-ex-prenorm", points=2)
def pre_norm_on_a_new_layer(pre_norm_forward):
    import torch
    from seqbook.transformer import EncoderLayer
    torch.manual_seed(130)
    layer = EncoderLayer(8, 2, 24, dropout=0.0)
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2):
            norm.weight.uniform_(0.3, 2.0)
            norm.bias.uniform_(-1.0, 1.0)
    layer.eval()
    x = 2 * torch.randn(3, 5, 8)
    with torch.no_grad():
        h = layer.norm1(x)
        y = x + layer.self_attn(h, h, h)[0]
        right = y + layer.ffn(layer.norm2(y))
        got = pre_norm_forward(layer, x.clone())
    assert tuple(got.shape) == (3, 5, 8), f"expected (3, 5, 8), got {tuple(got.shape)}"
    assert torch.allclose(got, right, atol=1e-5), "the output is not x + SelfAttn(LN1(x)), then + FFN(LN2(.))"


spec.auto("ch6-ex-kv-cache", written=2)


@spec.hidden("ch6-ex-kv-cache", points=1)
def scores_counted_with_and_without_a_cache(scores_without_cache, scores_with_cache):
    m = 20
    assert int(scores_without_cache) == sum(t * t for t in range(1, m + 1)), \
        f"{scores_without_cache!r} is not the number of scores without a cache"
    assert int(scores_with_cache) == m * (m + 1) // 2, f"{scores_with_cache!r} is not the number with a cache"


@spec.hidden("ch6-ex-kv-cache", points=2)
def cached_steps_equal_full_causal_attention(cached_self_attention):
    import torch
    from seqbook.multihead import MultiHeadAttention
    torch.manual_seed(140)
    attn = MultiHeadAttention(12, 3, dropout=0.0).eval()
    x = torch.randn(3, 5, 12)
    cache = {}
    with torch.no_grad():
        for t in range(1, 6):
            out = cached_self_attention(attn, x[:, t - 1:t], cache)
            full = attn(x[:, :t], x[:, :t], x[:, :t], causal=True)[0][:, -1:]
            assert tuple(out.shape) == (3, 1, 12), f"step {t}: expected (3, 1, 12), got {tuple(out.shape)}"
            assert torch.allclose(out, full, atol=1e-5), f"step {t} differs from full causal self-attention"
            assert tuple(cache["k"].shape) == tuple(cache["v"].shape) == (3, 3, t, 4), \
                f"after step {t} the cache should hold (batch, heads, {t}, d_k) keys and values"


spec.auto("ch6-ex-smoothing", written=1)


@spec.hidden("ch6-ex-smoothing", points=2)
def smoothed_loss_of_a_new_padded_batch(my_smoothed_loss):
    import torch
    import torch.nn.functional as F
    gen = torch.Generator().manual_seed(150)
    logits = 2 * torch.randn(3, 7, 13, generator=gen)
    targets = torch.randint(1, 13, (3, 7), generator=gen)
    targets[1, 4:], targets[2, 2:] = 0, 0               # right padding with PAD = 0
    for eps in (0.1, 0.25):
        right = F.cross_entropy(logits.reshape(-1, 13), targets.reshape(-1), label_smoothing=eps,
                                ignore_index=0)
        got = float(my_smoothed_loss(logits.clone(), targets.clone(), eps))
        assert abs(got - float(right)) < 1e-4, \
            f"epsilon {eps}: the loss is {got:.5f}, not the mean smoothed loss over the real positions"
