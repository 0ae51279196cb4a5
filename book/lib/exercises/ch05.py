"""Checkers for the exercises of chapter 5 (attention).

Right answers are computed here from the exercise's data (never typed in), and each checker
tries the usual mistakes first so that a wrong answer gets a hint that names the mistake.
"""

from __future__ import annotations


import torch

from ..alignment import alignment_error_rate
from ..attention import GeneralScore, attention, masked_softmax
from .core import Wrong, checker, close, number, require_function

# -- the data of the exercises (the chapter's exercise text states them) --------------------------
BY_HAND_QUERY = (1.0, 1.0)                          # q
BY_HAND_KEYS = ((1.0, 0.0), (0.0, -1.0), (2.0, 1.0))  # k_1, k_2, k_3 (dot score)
BY_HAND_VALUES = ((1.0, 0.0), (0.0, 1.0), (2.0, 2.0))  # v_1, v_2, v_3

# "the cat does not eat ." -> "le chat ne mange pas ."
AER_SOURCE = ("the", "cat", "does", "not", "eat", ".")
AER_TARGET = ("le", "chat", "ne", "mange", "pas", ".")
AER_SURE = ((0, 0), (1, 1), (2, 2), (2, 4), (3, 2), (3, 4), (4, 3), (5, 5))
AER_PREDICTED = ((0, 0), (1, 1), (3, 2), (4, 3), (4, 4), (5, 5))

COST_SOURCE_LEN, COST_TARGET_LEN = 30, 35         # one sentence pair
COST_BATCH, COST_PADDED_SOURCE, COST_PADDED_TARGET = 64, 40, 45   # a padded batch

SIZES_D_H = 64      # the decoder state's size; the annotations have 2 * SIZES_D_H entries

__all__ = ["check_weights_and_context", "check_masked_softmax", "check_general_attention",
           "general_attention_reference", "check_aer", "check_attention_cost", "check_general_sizes",
           "check_local_window", "local_window_reference", "by_hand_answer",
           "BY_HAND_QUERY", "BY_HAND_KEYS", "BY_HAND_VALUES", "AER_SOURCE", "AER_TARGET", "AER_SURE",
           "AER_PREDICTED", "COST_SOURCE_LEN", "COST_TARGET_LEN", "COST_BATCH", "COST_PADDED_SOURCE",
           "COST_PADDED_TARGET", "SIZES_D_H"]


def _vector(value, size: int, what: str) -> torch.Tensor:
    """A list, tuple, array or tensor of ``size`` numbers as a float64 tensor."""
    if value is None or value is Ellipsis:
        raise NotImplementedError
    try:
        out = torch.as_tensor(value.tolist() if hasattr(value, "tolist") else value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise Wrong(f"expected {what} as {size} numbers (a list or a tensor), got {type(value).__name__}.") from None
    out = out.reshape(-1) if out.numel() == size else out
    if tuple(out.shape) != (size,):
        raise Wrong(f"expected {what} as {size} numbers, got shape {tuple(out.shape)}.")
    if not bool(torch.isfinite(out).all()):
        raise Wrong(f"expected finite numbers in {what}, got {out.tolist()}.")
    return out


def _near(a: torch.Tensor, b: torch.Tensor, tol: float = 2e-3) -> bool:
    return bool((a - b).abs().max() <= tol)


# -- exercise: attention weights and context by hand -------------------------------------------
def by_hand_answer() -> tuple[torch.Tensor, torch.Tensor]:
    """The right weights (3,) and context (2,) of the by-hand exercise (dot score)."""
    q, K, V = (torch.tensor(x, dtype=torch.float64) for x in (BY_HAND_QUERY, BY_HAND_KEYS, BY_HAND_VALUES))
    weights = torch.softmax(K @ q, dim=0)
    return weights, weights @ V


@checker
def check_weights_and_context(weights, context) -> str:
    """The dot-score attention weights a_j (3 numbers) and context c (2 numbers) for
    :data:`BY_HAND_QUERY`, :data:`BY_HAND_KEYS` and :data:`BY_HAND_VALUES`."""
    a = _vector(weights, 3, "the weights a_1, a_2, a_3")
    c = _vector(context, 2, "the context c")
    q, K, V = (torch.tensor(x, dtype=torch.float64) for x in (BY_HAND_QUERY, BY_HAND_KEYS, BY_HAND_VALUES))
    scores = K @ q
    right_a, right_c = by_hand_answer()
    if not _near(a, right_a):
        if _near(a, scores):
            raise Wrong(f"{a.tolist()} are the scores e_j = q . k_j themselves; the weights are their "
                        "softmax, exp(e_j) / sum_j' exp(e_j').")
        if _near(a, torch.exp(scores)):
            raise Wrong("these are exp(e_j) without dividing by their sum: the weights must add up to 1.")
        if abs(float(scores.sum())) > 1e-9 and _near(a, scores / scores.sum()):
            raise Wrong("the scores divided by their sum are not a softmax (and a negative score would give "
                        "a negative weight): take exp(e_j) first, then normalise.")
        if _near(a, torch.nn.functional.one_hot(scores.argmax(), 3).double()):
            raise Wrong("a one-hot vector at the best key is hard attention (an argmax); soft attention gives "
                        "every key the weight exp(e_j) / sum_j' exp(e_j').")
        if _near(a, torch.full((3,), 1 / 3, dtype=torch.float64)):
            raise Wrong("equal weights ignore the query: score each key with q . k_j first.")
        raise Wrong(f"the weights {[round(x, 4) for x in a.tolist()]} are not softmax(q . k_j). Compute the "
                    "three dot products, then the softmax.")
    if not _near(c, right_c):
        if _near(c, right_a @ K):
            raise Wrong("that mixes the keys; the context mixes the values, c = sum_j a_j v_j.")
        if _near(c, V.mean(0)):
            raise Wrong("that is the plain average of the values; weight each value by its a_j.")
        if _near(c, V[int(scores.argmax())]):
            raise Wrong("that is the value of the best key only; the context is the weighted sum of all three.")
        raise Wrong(f"the weights are right, but the context {[round(x, 4) for x in c.tolist()]} is not "
                    "sum_j a_j v_j.")
    w = ", ".join(f"{x:.4f}" for x in right_a.tolist())
    return f"weights ({w}), context ({right_c[0]:.4f}, {right_c[1]:.4f})."


# -- exercise: a masked softmax ----------------------------------------------------------------
def _masked_cases():
    gen = torch.Generator().manual_seed(5)
    scores = torch.randn(3, 4, 6, generator=gen) * 3
    lengths = torch.tensor([5, 4, 1])                        # real keys per sentence
    big = torch.tensor([[[1000.0, 999.0, 1001.0]]])          # would overflow a naive exp
    return [(scores, lengths), (big, torch.tensor([2]))]


def _mask_of(lengths: torch.Tensor, n_keys: int, shift: int = 0) -> torch.Tensor:
    """(batch, keys), True at the first ``lengths[b] + shift`` keys of row b."""
    return torch.arange(n_keys)[None, :] < (lengths[:, None] + shift)


@checker
def check_masked_softmax(student_masked_softmax) -> str:
    """``student_masked_softmax(scores (batch, queries, keys), lengths (batch,) int64: the number
    of real keys of each sentence, padding after them)`` must equal
    :func:`seqbook.attention.masked_softmax` with the mask those lengths describe, with weight
    exactly 0 at padding."""
    require_function(student_masked_softmax)
    for scores, lengths in _masked_cases():
        n_keys = scores.shape[-1]
        mask = _mask_of(lengths, n_keys)
        right = masked_softmax(scores, mask)
        out = student_masked_softmax(scores.clone(), lengths.clone())
        if out is None or out is Ellipsis:      # a stub whose body is only `...`
            raise NotImplementedError
        if not isinstance(out, torch.Tensor):
            raise Wrong(f"expected a tensor of weights, got {type(out).__name__}.")
        if tuple(out.shape) != tuple(right.shape):
            raise Wrong(f"expected weights of the scores' shape {tuple(right.shape)}, got {tuple(out.shape)}.")
        out = out.detach().float()
        if not bool(torch.isfinite(out).all()):
            raise Wrong("some weights are nan or inf: subtract the row's maximum before exp, or fill the padded "
                        "scores with -inf and let torch.softmax do it.")
        padded = ~mask[:, None, :].expand_as(out)
        if not _near(right, torch.softmax(scores, -1), 1e-5) and _near(out, torch.softmax(scores, -1), 1e-5):
            raise Wrong("the lengths are ignored: padded keys still get weight. Build a mask from them (key j "
                        "of sentence b is real when j < lengths[b]) and give the padded keys a score of -inf "
                        "before the softmax.")
        for shift, what in ((1, "one key too many"), (-1, "one key too few")):
            shifted = _mask_of(lengths, n_keys, shift)
            if bool(shifted.any(-1).all()) and not torch.equal(shifted, mask) \
                    and _near(out, masked_softmax(scores, shifted), 1e-5):
                raise Wrong(f"each row keeps {what}: with 0-based positions, key j is real when "
                            "j < lengths[b], so a sentence of length L keeps keys 0 .. L-1.")
        inverted = ~mask
        if bool(inverted.any(-1).all()) and _near(out, masked_softmax(scores, inverted), 1e-5):
            raise Wrong("the mask is the wrong way round: the first lengths[b] keys are the real ones, to keep; "
                        "the padding comes after them.")
        if bool((out[padded] != 0).any()):
            raise Wrong(f"padded keys get weight up to {float(out[padded].abs().max()):.3g}; they must get "
                        "exactly 0.")
        if not _near(out.sum(-1), torch.ones(out.shape[:-1]), 1e-4):
            raise Wrong("the weights of a row do not sum to 1: after zeroing the padded keys, the softmax must "
                        "be normalised over the real keys only (mask the scores, not the weights).")
        if not _near(out, right, 1e-5):
            raise Wrong("the weights differ from a softmax over the real keys.")
    return "the mask built from the lengths gives padded keys exactly 0, and each row is a softmax over its real keys."


# -- exercise: Luong's general score and the masked weights, batched ----------------------------
def general_attention_reference(queries: torch.Tensor, keys: torch.Tensor, W: torch.Tensor,
                                mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The library's answer: :class:`seqbook.attention.GeneralScore` with its matrix set to ``W``
    (d_q, d_k), then :func:`seqbook.attention.attention` with the keys as values. Returns
    context (batch, queries, d_k) and weights (batch, queries, keys)."""
    score = GeneralScore(W.shape[0], W.shape[1])
    with torch.no_grad():
        score.W.weight.copy_(W)
        return attention(queries, keys, keys, mask, score)


def _general_cases():
    gen = torch.Generator().manual_seed(7)
    cases = []
    for batch, n_queries, n_keys, d_q, d_k, lengths in ((3, 4, 6, 5, 5, (5, 3, 1)),
                                                         (2, 3, 5, 4, 7, (2, 4))):
        queries = torch.randn(batch, n_queries, d_q, generator=gen)
        keys = torch.randn(batch, n_keys, d_k, generator=gen)
        W = torch.randn(d_q, d_k, generator=gen)
        mask = torch.arange(n_keys)[None, :] < torch.tensor(lengths)[:, None]   # True at real keys
        cases.append((queries, keys, W, mask))
    return cases


def _as_tensor_pair(out, shapes: tuple[tuple, tuple]) -> tuple[torch.Tensor, torch.Tensor]:
    if out is None or out is Ellipsis:      # a stub whose body is only `...`
        raise NotImplementedError
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        got = f"a {type(out).__name__}" + (f" of {len(out)}" if isinstance(out, (tuple, list)) else "")
        raise Wrong(f"expected two tensors, (context, weights), got {got}.")
    names = ("the context", "the weights")
    for value, shape, name in zip(out, shapes, names):
        if not isinstance(value, torch.Tensor):
            raise Wrong(f"expected {name} as a tensor of shape {shape}, got {type(value).__name__}.")
        if tuple(value.shape) != shape:
            raise Wrong(f"expected {name} of shape {shape} (batch, queries, "
                        f"{'d_k' if name == names[0] else 'keys'}), got {tuple(value.shape)}.")
    return out[0].detach().double(), out[1].detach().double()


@checker
def check_general_attention(student_general_attention) -> str:
    """``student_general_attention(queries (batch, queries, d_q), keys (batch, keys, d_k),
    W (d_q, d_k), mask (batch, keys) True at real keys) -> (context (batch, queries, d_k),
    weights (batch, queries, keys))`` with the general score ``e_ij = q_i^T W k_j``, must equal
    :func:`general_attention_reference` (the library's :class:`GeneralScore` and
    :func:`attention`), on random inputs with padded sentences."""
    require_function(student_general_attention)
    for queries, keys, W, mask in _general_cases():
        context, weights = general_attention_reference(queries, keys, W, mask)
        out = student_general_attention(queries.clone(), keys.clone(), W.clone(), mask.clone())
        got_c, got_w = _as_tensor_pair(out, (tuple(context.shape), tuple(weights.shape)))
        q, k, Wd = queries.double(), keys.double(), W.double()
        scores = q @ (k @ Wd.T).transpose(1, 2)                  # e_ij = q_i . (W k_j)
        if not bool(torch.isfinite(got_w).all()):
            raise Wrong("some weights are nan or inf: mask the scores with -inf before the softmax and "
                        "keep the padded weights at exactly 0 (or use masked_softmax).")
        if _near(got_w, scores, 1e-4):
            raise Wrong("the weights are the scores q^T W k themselves; turn them into weights with a "
                        "softmax over the real keys.")
        if _near(got_w, torch.softmax(scores, -1), 1e-5):
            raise Wrong("the mask is ignored: padded keys get weight. Give them a score of -inf before the "
                        "softmax (the mask is True at real keys).")
        if _near(got_w, torch.softmax(scores, 1), 1e-5):
            raise Wrong("the softmax runs over the queries (dim 1); each query's weights must sum to 1 over "
                        "the keys (the last dimension).")
        inverted = ~mask
        if bool(inverted.any(-1).all()) and _near(got_w, masked_softmax(scores, inverted), 1e-5):
            raise Wrong("the mask is the wrong way round: True marks a *real* key, the one to keep.")
        if W.shape[0] == W.shape[1]:
            if _near(got_w, masked_softmax(q @ (k @ Wd).transpose(1, 2), mask), 1e-5):
                raise Wrong("that is q^T W^T k: W maps a key to the query's space, so compute W k "
                            "(keys @ W.T) and take its dot product with q.")
            if _near(got_w, masked_softmax(q @ k.transpose(1, 2), mask), 1e-5):
                raise Wrong("that is the dot score q^T k: the general score puts W between them, q^T W k.")
            if _near(got_w, masked_softmax(scores / W.shape[0] ** 0.5, mask), 1e-5):
                raise Wrong("Luong's general score is not scaled: drop the division by sqrt(d) (the "
                            "Transformer of chapter 6 scales; this score does not).")
        padded = ~mask[:, None, :].expand_as(got_w)
        if bool((got_w[padded] != 0).any()):
            raise Wrong(f"padded keys get weight up to {float(got_w[padded].abs().max()):.3g}; they must get "
                        "exactly 0.")
        if not _near(got_w.sum(-1), torch.ones(got_w.shape[:-1], dtype=torch.float64), 1e-4):
            raise Wrong("a query's weights do not sum to 1: mask the scores before the softmax, not the "
                        "weights after it, so that it normalises over the real keys only.")
        if not _near(got_w, weights.double(), 1e-5):
            raise Wrong("the weights differ from a softmax of q^T W k over the real keys.")
        if W.shape[0] == W.shape[1] and _near(got_c, got_w @ (k @ Wd.T), 1e-4):
            raise Wrong("the weights are right, but the context mixes the projected keys W k; the values "
                        "are the keys themselves, c_i = sum_j a_ij k_j.")
        if not _near(got_c, context.double(), 1e-4):
            raise Wrong("the weights are right, but the context is not sum_j a_ij k_j (weights @ keys).")
    return ("the weights are a softmax of q^T W k over the real keys (exactly 0 at padding) and the "
            "context is weights @ keys, as the library's GeneralScore and attention compute them.")


# -- exercise: AER by hand ---------------------------------------------------------------------
@checker
def check_aer(aer) -> str:
    """The alignment error rate of :data:`AER_PREDICTED` against :data:`AER_SURE` (P = S)."""
    value = number(aer, "the AER", "0.25")
    a, s = set(AER_PREDICTED), set(AER_SURE)
    right = alignment_error_rate(a, s)
    hits = len(a & s)
    precision, recall = hits / len(a), hits / len(s)
    if close(value, right, rel=1e-3, abs_=2e-3):
        return (f"AER = 1 - 2 * {hits} / ({len(a)} + {len(s)}) = {right:.4f}, one minus the F1 of "
                f"precision {precision:.3f} and recall {recall:.3f}.")
    f1 = 2 * precision * recall / (precision + recall)
    if close(value, 1 - precision, abs_=2e-3):
        raise Wrong(f"{value:.4g} is 1 - precision ({hits}/{len(a)}): it ignores the {len(s) - hits} gold links "
                    "the prediction misses. AER divides by |A| + |S|.")
    if close(value, 1 - recall, abs_=2e-3):
        raise Wrong(f"{value:.4g} is 1 - recall ({hits}/{len(s)}): it ignores the predicted links that are "
                    "wrong. AER divides by |A| + |S|.")
    if close(value, f1, abs_=2e-3):
        raise Wrong(f"{value:.4g} is the F1 score itself; AER is an error rate, 1 minus it.")
    if close(value, 1 - hits / len(a | s), abs_=2e-3):
        raise Wrong(f"{value:.4g} is 1 minus the Jaccard overlap |A ∩ S| / |A ∪ S|; AER counts the hits "
                    "twice over |A| + |S|.")
    raise Wrong(f"{value:.4g} is not it. Count |A ∩ S|, |A| and |S|, then AER = 1 - 2|A ∩ S| / (|A| + |S|) "
                "when every gold link is sure.")


# -- exercise: the context as an expectation, and sizes (part b) ------------------------------------
def _pair_of_sizes(answer, what: str) -> tuple[int, int]:
    """A (rows, columns) pair of positive whole numbers, or :class:`Wrong` naming the form."""
    if answer is Ellipsis or answer is None:
        raise NotImplementedError
    if hasattr(answer, "shape") and not isinstance(answer, (tuple, list)):
        answer = tuple(answer.shape)       # a matrix of the right shape is accepted too
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise Wrong(f"expected {what} as a pair (rows, columns), for example (10, 20), got {answer!r:.60}.")
    sizes = tuple(number(x, f"a number of {('rows', 'columns')[i]}") for i, x in enumerate(answer))
    if any(x <= 0 or x != int(x) for x in sizes):
        raise Wrong(f"expected {what} as two positive whole numbers, got {answer!r}.")
    return int(sizes[0]), int(sizes[1])


@checker
def check_general_sizes(general_shape, general_params) -> str:
    """The shape of W_a in the general score s^T W_a h, for a state s of SIZES_D_H entries and an
    annotation h of 2 * SIZES_D_H, and its number of parameters."""
    d = SIZES_D_H
    rows, cols = _pair_of_sizes(general_shape, "the shape of W_a")
    if (rows, cols) != (d, 2 * d):
        if (rows, cols) == (2 * d, d):
            raise Wrong(f"({rows}, {cols}) is transposed: in s^T W_a h, W_a has one row per entry of s "
                        f"({d}) and one column per entry of h ({2 * d}).")
        if rows == cols:
            raise Wrong(f"({rows}, {cols}) is square, but s has {d} entries and h has {2 * d} (two "
                        f"directions of {d}): W_a maps between the two sizes.")
        raise Wrong(f"({rows}, {cols}) is not it: W_a has one row per entry of s and one column per "
                    "entry of h.")
    params = number(general_params, "the number of parameters")
    right = d * 2 * d
    if params != right:
        if params in (d * d, 4 * d * d):
            raise Wrong(f"{params:g} is the count of a square matrix; W_a is {d} x {2 * d}.")
        if params in (right + d, right + 2 * d):
            raise Wrong(f"{params:g} adds a bias; the general score s^T W_a h has none.")
        raise Wrong(f"{params:g} is not the number of entries of a {d} x {2 * d} matrix.")
    return (f"W_a is {d} x {2 * d}: {right:,} parameters, 2 d_h^2. It maps h into the space of s, so "
            "the two sizes never have to match, as they must for the dot score.")


# -- exercise: the cost of attention -----------------------------------------------------------
@checker
def check_attention_cost(sentence_scores, batch_scores, encoder_steps) -> str:
    """Score evaluations for one pair of :data:`COST_SOURCE_LEN` source and
    :data:`COST_TARGET_LEN` target steps; for a padded batch of :data:`COST_BATCH` pairs padded
    to :data:`COST_PADDED_SOURCE` and :data:`COST_PADDED_TARGET`; and recurrent steps of a
    bidirectional encoder over the one sentence."""
    n, m = COST_SOURCE_LEN, COST_TARGET_LEN
    one = number(sentence_scores, "the number of score evaluations for one pair")
    batch = number(batch_scores, "the number of score evaluations for the padded batch")
    steps = number(encoder_steps, "the number of encoder steps")
    if one != m * n:
        if one in (m + n, n, m):
            raise Wrong(f"{one:g}: every one of the {m} decoder steps scores every one of the {n} source "
                        "words, so the count is a product, not a sum or a length.")
        if one == m * n / 2 or one == n * (n + 1) / 2:
            raise Wrong(f"{one:g}: the decoder attends to the whole source at every step (no causal mask "
                        "here), so every pair (i, j) is scored.")
        raise Wrong(f"{one:g} is not the number of (decoder step, source word) pairs.")
    b, ns, ms = COST_BATCH, COST_PADDED_SOURCE, COST_PADDED_TARGET
    if batch != b * ns * ms:
        if batch == b * m * n:
            raise Wrong(f"{batch:g} uses the unpadded lengths; a padded batch computes a score for every "
                        f"padded position too (masked afterwards): {b} x {ns} x {ms}.")
        if batch == ns * ms:
            raise Wrong(f"{batch:g} is one sentence's count; the batch has {b}.")
        raise Wrong(f"{batch:g} is not it: batch x padded source x padded target.")
    if steps != 2 * n:
        if steps == n:
            raise Wrong(f"{steps:g} counts one direction; a bidirectional encoder runs a second recurrence "
                        "right to left over the same words.")
        raise Wrong(f"{steps:g} is not it: each direction takes one step per source word.")
    return (f"{m * n} scores for the pair, {b * ns * ms:,} for the padded batch (padded positions "
            f"included), and {2 * n} encoder steps (two recurrences of {n}; they can run in parallel, "
            "so the time is that of one).")


# -- exercise: a local window around the diagonal ----------------------------------------------
def local_window_reference(weights: torch.Tensor, width: int) -> torch.Tensor:
    """``weights`` (tgt_len, src_len) kept only where ``|j - p_i| <= width``, with the diagonal
    position ``p_i = round(i * (src_len - 1) / max(tgt_len - 1, 1))``, and renormalised so that
    each row sums to 1 (a row with no weight left in the window gets its diagonal word)."""
    m, n = weights.shape
    centre = torch.round(torch.arange(m, dtype=torch.float64) * (n - 1) / max(m - 1, 1))
    inside = (torch.arange(n)[None, :] - centre[:, None]).abs() <= width
    kept = weights.double() * inside
    total = kept.sum(-1, keepdim=True)
    fallback = torch.nn.functional.one_hot(centre.long(), n).double()
    return torch.where(total > 0, kept / total.clamp_min(1e-300), fallback).to(weights.dtype)


@checker
def check_local_window(student_local_window) -> str:
    """``student_local_window(weights (tgt_len, src_len), width) -> weights`` restricted to the
    window ``|j - p_i| <= width`` around the diagonal position and renormalised (see
    :func:`local_window_reference`)."""
    require_function(student_local_window)
    gen = torch.Generator().manual_seed(3)
    for m, n, width in ((5, 8, 1), (7, 4, 0), (6, 6, 2), (3, 9, 10)):
        weights = torch.softmax(torch.randn(m, n, generator=gen) * 2, -1)
        right = local_window_reference(weights, width)
        out = student_local_window(weights.clone(), width)
        if out is None or out is Ellipsis:      # a stub whose body is only `...`
            raise NotImplementedError
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (m, n):
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise Wrong(f"expected a ({m}, {n}) tensor of weights, got {got}.")
        out = out.detach().double()
        if _near(out, right.double(), 1e-5):
            continue
        unnormalised = weights.double() * (right > 0)
        if _near(out, unnormalised, 1e-5):
            raise Wrong("the window is right but the rows no longer sum to 1: divide each row by what is left.")
        if _near(out.sum(-1), torch.ones(m, dtype=torch.float64), 1e-4) and width == 0:
            raise Wrong(f"with width 0 only the diagonal word p_i = round(i (n-1)/(m-1)) survives "
                        f"(tgt_len {m}, src_len {n}): check the centre of your window.")
        raise Wrong(f"for tgt_len {m}, src_len {n}, width {width} the weights differ from the windowed, "
                    "renormalised ones: centre p_i = round(i (n-1)/(m-1)), keep |j - p_i| <= width.")
    return "the window keeps |j - p_i| <= width around the diagonal, and each row sums to 1."
