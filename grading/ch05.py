"""How chapter 5's exercises are graded (attention: Bahdanau and Luong, alignments).

Each hidden test is a self-contained function: its parameters name the notebook variables it
reads, and it computes its own reference answer (never from ``seqbook.exercises``).
"""

from seqbook.authoring.grader import GradingSpec

spec = GradingSpec(
    # the local-window exercise measures the AER of the chapter's trained attention model
    experiments=["attn", "splits", "src_vocab", "tgt_vocab"],
)

spec.auto("ch5-ex-by-hand", written=1)


@spec.hidden("ch5-ex-by-hand", points=1)
def attention_weights_by_hand(weights_by_hand):
    import math
    scores = [1 * 1 + 1 * 0, 1 * 0 + 1 * -1, 1 * 2 + 1 * 1]
    right = [math.exp(s) / sum(math.exp(t) for t in scores) for s in scores]
    got = [float(a) for a in weights_by_hand]
    assert len(got) == 3 and all(abs(g - r) < 2e-3 for g, r in zip(got, right)), f"the weights are not {got}"


@spec.hidden("ch5-ex-by-hand", points=1)
def context_computed_by_hand(context_by_hand):
    import math
    scores = [1, -1, 3]
    a = [math.exp(s) / sum(math.exp(t) for t in scores) for s in scores]
    values = [(1, 0), (0, 1), (2, 2)]
    right = [sum(w * v[d] for w, v in zip(a, values)) for d in range(2)]
    got = [float(c) for c in context_by_hand]
    assert len(got) == 2 and all(abs(g - r) < 2e-3 for g, r in zip(got, right)), f"the context is not {got}"


spec.auto("ch5-ex-masked-softmax", written=1)


@spec.hidden("ch5-ex-masked-softmax", points=2)
def masked_softmax_on_new_scores(my_masked_softmax):
    import torch
    gen = torch.Generator().manual_seed(100)
    scores = 4 * torch.randn(2, 3, 7, generator=gen)
    lengths = torch.tensor([7, 3])
    right = torch.zeros_like(scores)
    for b in range(2):
        real = int(lengths[b])
        right[b, :, :real] = torch.softmax(scores[b, :, :real], dim=-1)
    got = my_masked_softmax(scores.clone(), lengths.clone())
    assert tuple(got.shape) == (2, 3, 7), f"expected weights of shape (2, 3, 7), got {tuple(got.shape)}"
    assert torch.allclose(got, right, atol=1e-6), "each row must be a softmax over its real keys only"
    assert bool((got[1, :, 3:] == 0).all()), "padded keys must get weight exactly 0"


@spec.hidden("ch5-ex-masked-softmax", points=1)
def masked_softmax_of_large_scores(my_masked_softmax):
    import torch
    scores = torch.tensor([[[1000.0, 999.0, 5.0]]])
    got = my_masked_softmax(scores, torch.tensor([2]))
    e = torch.exp(torch.tensor(-1.0))
    assert torch.isfinite(got).all() and torch.allclose(got, torch.tensor([[[1 / (1 + e), e / (1 + e), 0.0]]]), atol=1e-6), \
        "scores near 1000 must not overflow (subtract the row's maximum, or use torch.softmax)"


spec.auto("ch5-ex-general-attention", written=1)


@spec.hidden("ch5-ex-general-attention", points=2)
def general_weights_on_new_inputs(my_general_attention):
    import torch
    gen = torch.Generator().manual_seed(120)
    queries, keys = torch.randn(2, 3, 6, generator=gen), torch.randn(2, 5, 4, generator=gen)
    W = torch.randn(6, 4, generator=gen)
    mask = torch.arange(5)[None, :] < torch.tensor([[5], [2]])
    right = torch.zeros(2, 3, 5)
    for b in range(2):
        real = int(mask[b].sum())
        for i in range(3):
            scores = torch.stack([queries[b, i] @ (W @ keys[b, j]) for j in range(real)])
            right[b, i, :real] = torch.softmax(scores, dim=0)
    context, weights = my_general_attention(queries.clone(), keys.clone(), W.clone(), mask.clone())
    assert tuple(weights.shape) == (2, 3, 5), f"expected weights of shape (2, 3, 5), got {tuple(weights.shape)}"
    assert torch.allclose(weights, right, atol=1e-5), "the weights are not a softmax of q^T W k over the real keys"
    assert bool((weights[1, :, 2:] == 0).all()), "padded keys must get weight exactly 0"


@spec.hidden("ch5-ex-general-attention", points=1)
def general_context_mixes_the_keys(my_general_attention):
    import torch
    gen = torch.Generator().manual_seed(121)
    queries, keys = torch.randn(1, 2, 3, generator=gen), torch.randn(1, 4, 3, generator=gen)
    W = torch.randn(3, 3, generator=gen)
    mask = torch.tensor([[True, True, True, False]])
    context, weights = my_general_attention(queries, keys, W, mask)
    assert tuple(context.shape) == (1, 2, 3), f"expected a context of shape (1, 2, 3), got {tuple(context.shape)}"
    want = sum(weights[0, :, j, None] * keys[0, j] for j in range(3))
    assert torch.allclose(context[0], want, atol=1e-5), "the context must be sum_j a_ij k_j over the real keys"


spec.auto("ch5-ex-expectation", written=2,
          note="only the sizes of part (b) are autograded; the argument of part (a) and the reasons "
               "of part (b) are graded by hand.")


@spec.hidden("ch5-ex-expectation", points=1)
def general_score_sizes(general_shape, general_params):
    shape = tuple(general_shape.shape) if hasattr(general_shape, "shape") else tuple(general_shape)
    assert tuple(int(x) for x in shape) == (64, 128), \
        f"{general_shape!r}: W_a has one row per entry of s (64) and one column per entry of h (128)"
    assert int(general_params) == general_params and int(general_params) == 64 * 128, \
        f"{general_params!r}: the entries of a 64 x 128 matrix"

spec.auto("ch5-ex-aer", written=2)


@spec.hidden("ch5-ex-aer", points=2)
def alignment_error_rate(aer_by_hand):
    sure = {(0, 0), (1, 1), (2, 2), (2, 4), (3, 2), (3, 4), (4, 3), (5, 5)}
    predicted = {(0, 0), (1, 1), (3, 2), (4, 3), (4, 4), (5, 5)}
    right = 1 - 2 * len(predicted & sure) / (len(predicted) + len(sure))
    assert abs(float(aer_by_hand) - right) < 2e-3, f"the AER is not {aer_by_hand!r}"


spec.auto("ch5-ex-cost", written=1)


@spec.hidden("ch5-ex-cost", points=1)
def scores_counted(scores_one_pair, scores_batch):
    assert int(scores_one_pair) == scores_one_pair and int(scores_one_pair) == 30 * 35, \
        f"{scores_one_pair!r}: every decoder step scores every source word"
    assert int(scores_batch) == scores_batch and int(scores_batch) == 64 * 40 * 45, \
        f"{scores_batch!r}: a padded batch scores every padded position too"


@spec.hidden("ch5-ex-cost", points=1)
def bidirectional_encoder_steps(encoder_steps):
    assert int(encoder_steps) == encoder_steps and int(encoder_steps) == 2 * 30, \
        f"{encoder_steps!r}: two recurrences over the 30 words"


spec.auto("ch5-ex-local-window", written=3,
          note="only `my_local_window` is autograded. The AER measurement needs the chapter's trained "
               "model: run it in the chapter's notebook and report the numbers, with your answers, in "
               "the written part below.")


@spec.hidden("ch5-ex-local-window", points=2)
def local_window_on_new_weights(my_local_window):
    import torch
    gen = torch.Generator().manual_seed(110)
    for m, n, width in ((5, 8, 1), (7, 4, 0), (6, 6, 2)):
        weights = torch.softmax(2 * torch.randn(m, n, generator=gen), dim=-1)
        right = torch.zeros(m, n)
        for i in range(m):
            centre = round(i * (n - 1) / max(m - 1, 1))
            keep = [j for j in range(n) if abs(j - centre) <= width]
            right[i, keep] = weights[i, keep] / weights[i, keep].sum()
        got = my_local_window(weights.clone(), width)
        assert tuple(got.shape) == (m, n) and torch.allclose(got, right, atol=1e-6), \
            f"for ({m} x {n}) weights and width {width} the windowed, renormalised weights differ"


@spec.hidden("ch5-ex-local-window", points=1)
def empty_window_falls_back_to_the_centre(my_local_window):
    import torch
    weights = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    got = my_local_window(weights, 0)
    assert torch.allclose(got, torch.eye(3)), "a row with no weight left in its window gets its centre word"
