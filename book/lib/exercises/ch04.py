"""Checkers for the exercises of chapter 4 (sequence to sequence, teacher forcing, greedy and
beam search, BLEU).

Right answers are computed here from the exercise's data (never typed in), and each checker
tries the usual mistakes first so that a wrong answer gets a hint that names the mistake.
"""

from __future__ import annotations

import math

import torch

from ..bleu import brevity_penalty, clipped_matches, corpus_bleu
from ..checks import describe
from ..decoding import gnmt_penalty
from .core import Wrong, checker, close, number, require_function

# -- the data of the exercises (the chapter's exercise text states them) --------------------------
BLEU_REFERENCE = "le chat noir voit la souris .".split()
BLEU_HYPOTHESIS = "le chat voit la souris .".split()
SEARCH_SIZES = dict(vocab_size=150, length=20, beam_size=5)
# two finished hypotheses of one source sentence: (log-probability, length with <eos>)
SHORT_HYPOTHESIS = (-3.0, 4)
LONG_HYPOTHESIS = (-4.2, 11)
LENGTH_ALPHA = 1.0
SIGMOID_K = 100.0   # the inverse-sigmoid decay's constant kappa (Bengio et al. 2015)

__all__ = ["check_bleu_by_hand", "check_search_sizes", "check_beam_step", "beam_step_reference",
           "check_length_penalty", "check_inverse_sigmoid", "inverse_sigmoid_reference",
           "BLEU_REFERENCE", "BLEU_HYPOTHESIS", "SEARCH_SIZES", "SHORT_HYPOTHESIS",
           "LONG_HYPOTHESIS", "LENGTH_ALPHA", "SIGMOID_K"]


# -- exercise: BLEU by hand ----------------------------------------------------------------------
def _bleu_parts():
    precisions = []
    for n in range(1, 5):
        m, t = clipped_matches(BLEU_HYPOTHESIS, [BLEU_REFERENCE], n)
        precisions.append(m / t)
    bp = brevity_penalty(len(BLEU_HYPOTHESIS), len(BLEU_REFERENCE))
    return precisions, bp, corpus_bleu([BLEU_HYPOTHESIS], [BLEU_REFERENCE]).score


@checker
def check_bleu_by_hand(precisions, bp, bleu) -> str:
    """The four modified precisions (fractions), the brevity penalty and BLEU (0..100) of
    :data:`BLEU_HYPOTHESIS` against :data:`BLEU_REFERENCE`."""
    if precisions is Ellipsis or bp is Ellipsis or bleu is Ellipsis:
        raise NotImplementedError
    if isinstance(precisions, (str, bytes)) or not hasattr(precisions, "__len__") or len(precisions) != 4:
        raise Wrong(f"expected precisions as a list of four numbers (p_1, p_2, p_3, p_4), got {precisions!r:.60}.")
    values = [number(p, f"p_{n}", "0.8") for n, p in enumerate(precisions, start=1)]
    right_p, right_bp, right_bleu = _bleu_parts()
    if all(close(v, 100 * r) for v, r in zip(values, right_p)):
        raise Wrong("give the precisions as fractions between 0 and 1 (0.8, not 80).")
    for n, (v, r) in enumerate(zip(values, right_p), start=1):
        if not close(v, r):
            t = len(BLEU_HYPOTHESIS) - n + 1
            raise Wrong(f"p_{n} = {v:.4g} is not it: the hypothesis has {t} {n}-grams; count those that "
                        f"also occur in the reference (each at most as often as it does there).")
    bp = number(bp, "the brevity penalty")
    if close(bp, 1.0):
        raise Wrong("the brevity penalty is 1 only when the hypothesis is at least as long as the reference; "
                    f"here c = {len(BLEU_HYPOTHESIS)} and r = {len(BLEU_REFERENCE)}.")
    if close(bp, math.exp(1 - len(BLEU_HYPOTHESIS) / len(BLEU_REFERENCE))):
        raise Wrong(f"brevity penalty {bp:.4g}: the ratio is upside down, BP = exp(1 - r / c) with r the "
                    "reference's length and c the hypothesis's.")
    if not close(bp, right_bp):
        raise Wrong(f"brevity penalty {bp:.4g} is not it: BP = exp(1 - r / c) when c < r.")
    bleu = number(bleu, "BLEU on the 0..100 scale")
    geometric = math.exp(sum(math.log(p) for p in right_p) / 4)
    if close(bleu, right_bleu / 100):
        raise Wrong(f"{bleu:.4g} is BLEU on the 0..1 scale: multiply by 100 (BLEU is reported in 0..100).")
    if close(bleu, 100 * geometric):
        raise Wrong(f"BLEU {bleu:.4g} leaves out the brevity penalty: multiply the geometric mean by BP.")
    if close(bleu, 100 * right_bp * sum(right_p) / 4):
        raise Wrong(f"BLEU {bleu:.4g} uses the arithmetic mean of the precisions; BLEU takes the "
                    "geometric mean, exp of the mean of the logs.")
    if not close(bleu, right_bleu):
        raise Wrong(f"BLEU {bleu:.4g} is not it: BP times the geometric mean of p_1..p_4, times 100.")
    return (f"p = {', '.join(f'{p:.3g}' for p in right_p)}, BP = {right_bp:.4f}, "
            f"BLEU = {right_bleu:.2f}.")


# -- exercise: corpus BLEU in code ----------------------------------------------------------------
__all__ += ["check_corpus_bleu", "BLEU_CORPORA"]

# two small test corpora (hypotheses, references): in the first the outputs are shorter than the
# references in total, in the second longer; repeated words make clipping matter in both
BLEU_CORPORA = [
    (["le le le chat voit la souris .", "la femme mange une pomme .", "un chien noir dort ."],
     ["le chat noir voit la souris .", "la femme mange une pomme rouge .",
      "un petit chien noir dort ."]),
    (["les enfants voient les les grandes maisons blanches .", "il ne mange pas pas la soupe ."],
     ["les enfants voient les grandes maisons .", "il ne mange pas la soupe ."]),
]


def _bleu_variant(hyps, refs, clip=True, bp="short", macro=False, mean="geometric",
                  scale=100.0, max_n=4) -> float:
    """BLEU with one of the usual mistakes switched on (the defaults give corpus BLEU)."""
    if macro:
        return sum(_bleu_variant([h], [r], clip, bp, False, mean, scale, max_n)
                   for h, r in zip(hyps, refs)) / len(hyps)
    precisions = []
    for n in range(1, max_n + 1):
        matched = total = 0
        for h, r in zip(hyps, refs):
            if clip:
                m, t = clipped_matches(h, [r], n)
            else:
                ref_grams = {tuple(r[i:i + n]) for i in range(len(r) - n + 1)}
                grams = [tuple(h[i:i + n]) for i in range(len(h) - n + 1)]
                m, t = sum(g in ref_grams for g in grams), len(grams)
            matched, total = matched + m, total + t
        precisions.append(matched / total if total else 0.0)
    hyp_len, ref_len = sum(map(len, hyps)), sum(map(len, refs))
    penalty = {"short": brevity_penalty(hyp_len, ref_len), "none": 1.0,
               "always": math.exp(1 - ref_len / hyp_len)}[bp]
    if mean == "arithmetic":
        return scale * penalty * sum(precisions) / max_n
    if min(precisions) == 0:
        return 0.0
    return scale * penalty * math.exp(sum(math.log(p) for p in precisions) / max_n)


@checker
def check_corpus_bleu(my_corpus_bleu) -> str:
    """``my_corpus_bleu(hypotheses, references) -> float``: corpus BLEU (0..100) of token lists
    against one reference each, compared with :func:`seqbook.bleu.corpus_bleu` on
    :data:`BLEU_CORPORA`."""
    require_function(my_corpus_bleu)
    mistakes = [
        (dict(scale=1.0), "that is BLEU on the 0..1 scale: multiply by 100."),
        (dict(clip=False), "the n-gram counts are not clipped: a hypothesis n-gram may count at "
                           "most as often as it occurs in the reference."),
        (dict(macro=True), "that is the mean of the sentence scores. Corpus BLEU sums the matches, "
                           "the n-gram totals and the lengths over all sentences first, then divides."),
        (dict(bp="none"), "the brevity penalty is missing: exp(1 - r/c) when the outputs' total "
                          "length c is below the references' r."),
        (dict(bp="always"), "the brevity penalty applies only when the outputs are shorter than "
                            "the references; when they are longer it is 1."),
        (dict(mean="arithmetic"), "BLEU takes the geometric mean of p_1..p_4 (the exponential of "
                                  "the mean of their logarithms), not the arithmetic mean."),
    ]
    for number_, (hyp_text, ref_text) in enumerate(BLEU_CORPORA, start=1):
        hyps = [h.split() for h in hyp_text]
        refs = [r.split() for r in ref_text]
        right = corpus_bleu(hyps, refs).score
        got = my_corpus_bleu([list(h) for h in hyps], [list(r) for r in refs])
        value = number(got, f"the BLEU of test corpus {number_}")
        if close(value, right, rel=1e-4, abs_=1e-3):
            continue
        for options, hint in mistakes:
            if close(value, _bleu_variant(hyps, refs, **options), rel=1e-4, abs_=1e-3):
                raise Wrong(f"test corpus {number_}: {hint}")
        raise Wrong(f"test corpus {number_}: {value:.4g} is not its corpus BLEU. Check the four "
                    "clipped precisions and the brevity penalty against the formula.")
    return "your corpus BLEU matches seqbook.bleu on both test corpora."


# -- exercise: how big is each search? -----------------------------------------------------------
@checker
def check_search_sizes(exhaustive, beam_scored) -> str:
    """The number of complete sequences of exactly m tokens over |V| (exhaustive search) and the
    number of next-token scores beam search computes over m steps (``k * |V| * m``)."""
    V, m, k = SEARCH_SIZES["vocab_size"], SEARCH_SIZES["length"], SEARCH_SIZES["beam_size"]
    ex = number(exhaustive, "the number of sequences exhaustive search scores", "150 ** 20")
    right = float(V) ** m
    wrongs = [(float(m) ** V, "that is m^|V|; each of the m positions can hold any of the |V| tokens."),
              (float(V * m), "that is |V| m, what greedy search scores; exhaustive search scores whole "
                             "sequences, one for every choice at every position."),
              (float(k) ** m, "that is k^m; the tokens, not the beam, give the choices at each position.")]
    if not close(ex, right):
        for w, hint in wrongs:
            if close(ex, w):
                raise Wrong(f"exhaustive search: {ex:.4g}: {hint}")
        raise Wrong(f"exhaustive search: {ex:.4g} is not it: count the sequences of exactly m = {m} "
                    f"tokens over a vocabulary of {V}.")
    beam = number(beam_scored, "the number of next-token scores beam search computes")
    if close(beam, float(V * m)):
        raise Wrong(f"beam search: {beam:g} is greedy search's count: beam search extends k hypotheses "
                    "at every step.")
    if close(beam, float(k * k * m)):
        raise Wrong(f"beam search: {beam:g} counts only the k kept extensions of each hypothesis; it must "
                    "score every token after each of the k hypotheses before choosing.")
    if close(beam, float(k) * V ** m):
        raise Wrong(f"beam search: {beam:.4g}: the beam keeps only k hypotheses at each step, so the "
                    "work adds up over the steps rather than multiplying.")
    first_step_alone = float(V + (m - 1) * k * V)
    if close(beam, first_step_alone, rel=1e-9):
        # also right: at step 1 the beam holds only <bos>, so that step scores |V|, not k |V|
        return (f"|V|^m = {right:.3g} sequences; beam search scores |V| + (m-1) k |V| = "
                f"{int(first_step_alone):,} extensions, counting that the first step extends "
                f"only <bos> (with a full beam at every step it is k |V| m = {k * V * m:,}).")
    if not close(beam, float(k * V * m), rel=1e-9):
        raise Wrong(f"beam search: {beam:g} is not it: k hypotheses, each scored against all |V| "
                    f"tokens, at each of m steps.")
    return f"|V|^m = {right:.3g} sequences; beam search scores k |V| m = {k * V * m:,} extensions."


# -- exercise: one step of beam search ------------------------------------------------------------
def beam_step_reference(sums: torch.Tensor, log_probs: torch.Tensor, beam_size: int):
    """(parents, tokens, totals) of the ``beam_size`` best extensions, best first."""
    totals = sums[:, None] + log_probs
    best, index = totals.flatten().topk(min(beam_size, totals.numel()))
    vocab = log_probs.shape[1]
    return index // vocab, index % vocab, best


def _step_case(seed: int, k: int, vocab: int):
    gen = torch.Generator().manual_seed(seed)
    sums = -torch.rand(k, generator=gen, dtype=torch.float64) * 5
    log_probs = torch.log_softmax(torch.randn(k, vocab, generator=gen, dtype=torch.float64) * 2, -1)
    return sums, log_probs


def _as_ints(x, what: str) -> list[int]:
    if isinstance(x, torch.Tensor):
        x = x.tolist()
    try:
        return [int(v) for v in x]
    except (TypeError, ValueError):
        raise Wrong(f"expected {what} as a list or 1-d tensor of integers, got {x!r:.60}.") from None


def _diagnose_step(sums, log_probs, size: int, parents: list[int], tokens: list[int]) -> str | None:
    """The usual mistake behind a wrong choice of extensions, when the choice shows it clearly."""
    k, vocab = log_probs.shape
    chosen = set(zip(parents, tokens))
    per_parent = sorted(((float(sums[p] + log_probs[p].max()), p) for p in range(k)), reverse=True)
    best_each = chosen == {(p, int(log_probs[p].argmax())) for _, p in per_parent[:size]}
    by_token = log_probs.flatten().topk(min(size, log_probs.numel())).indices.tolist()
    token_only = chosen == {(i // vocab, i % vocab) for i in by_token}
    if best_each and not token_only:
        return ("you kept the best token of each hypothesis; beam search compares all k |V| "
                "extensions together, so two may share a parent.")
    if token_only and not best_each:
        return ("you ranked the extensions by the next token's log-probability alone; rank them by "
                "the total, the hypothesis's sum plus the new token's log-probability.")
    return None


@checker
def check_beam_step(beam_step) -> str:
    """``beam_step(sums (k,), log_probs (k, |V|), beam_size) -> (parents, tokens, totals)``:
    the ``beam_size`` best one-token extensions of the k hypotheses, best first."""
    require_function(beam_step)
    mistake = None   # a wrong choice whose cause is not clear yet: a later case may show it
    for seed, (k, vocab, size) in enumerate([(5, 6, 3), (3, 7, 3), (4, 11, 5), (1, 9, 4)]):
        sums, log_probs = _step_case(seed, k, vocab)
        out = beam_step(sums.clone(), log_probs.clone(), size)
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise Wrong(f"expected beam_step to return three things (parents, tokens, totals), got {out!r:.80}.")
        parents, tokens = _as_ints(out[0], "parents"), _as_ints(out[1], "tokens")
        totals = out[2].tolist() if isinstance(out[2], torch.Tensor) else list(out[2])
        r_parents, r_tokens, r_totals = (t.tolist() for t in beam_step_reference(sums, log_probs, size))
        if not (len(parents) == len(tokens) == len(totals)):
            raise Wrong(f"parents, tokens and totals should have the same length, got {len(parents)}, "
                        f"{len(tokens)} and {len(totals)}.")
        if len(parents) != size:
            raise Wrong(f"with {k} hypotheses, |V| = {vocab} and beam_size = {size}, keep {size} "
                        f"extensions, got {len(parents)}.")
        if sorted(zip(parents, tokens)) == sorted(zip(r_parents, r_tokens)) and (parents, tokens) != (r_parents, r_tokens):
            raise Wrong("the right extensions, in the wrong order: return them best first.")
        if (parents, tokens) != (r_parents, r_tokens) and \
                sorted(zip(parents, tokens)) != sorted(zip(r_parents, r_tokens)):
            hint = _diagnose_step(sums, log_probs, size, parents, tokens)
            if hint:
                raise Wrong(hint)
        if (parents, tokens) != (r_parents, r_tokens):
            if mistake is None:
                mistake = (f"on a case with k = {k}, |V| = {vocab}, beam_size = {size} you chose (parent, "
                        f"token) {list(zip(parents, tokens))}, expected {list(zip(r_parents, r_tokens))}.")
            continue
        if not all(close(float(a), b, rel=1e-6, abs_=1e-6) for a, b in zip(totals, r_totals)):
            raise Wrong("the right extensions, but the totals are off: each is the parent's sum plus the "
                        "token's log-probability.")
    if mistake:
        raise Wrong(mistake)
    return "your step keeps the same extensions, in the same order, as the reference on four random cases."


# -- exercise: length normalisation -----------------------------------------------------------------
@checker
def check_length_penalty(short_score, long_score, winner) -> str:
    """GNMT scores (alpha = :data:`LENGTH_ALPHA`) of the two hypotheses, and which one wins
    ("short" or "long") once normalised."""
    scores = []
    for name, value, (lp, n) in (("short", short_score, SHORT_HYPOTHESIS), ("long", long_score, LONG_HYPOTHESIS)):
        v = number(value, f"the {name} hypothesis's score", "-3.0 / 1.5")
        right = lp / gnmt_penalty(n, LENGTH_ALPHA)
        if close(v, lp):
            raise Wrong(f"{name}: {v:g} is the plain log-probability; divide by ((5 + m + 1) / 6) ** alpha.")
        if close(v, lp / n):
            raise Wrong(f"{name}: {v:.4g} divides by the length itself; GNMT divides by ((5 + m + 1) / 6) ** alpha.")
        if close(v, lp * gnmt_penalty(n, LENGTH_ALPHA)):
            raise Wrong(f"{name}: {v:.4g} multiplies by the penalty; the score divides the log-probability by it.")
        if not close(v, right):
            raise Wrong(f"{name}: {v:.4g} is not it: score = log P / ((5 + m + 1) / 6) ** alpha with m + 1 = {n} tokens.")
        scores.append(right)
    if winner is Ellipsis or winner is None:
        raise NotImplementedError
    if winner not in ("short", "long"):
        raise Wrong(f"expected winner as the text 'short' or 'long', got {winner!r:.40}.")
    right_winner = "short" if scores[0] > scores[1] else "long"
    if winner != right_winner:
        raise Wrong(f"the scores are right, but the higher (less negative) score wins: {right_winner}.")
    return (f"scores {scores[0]:.3f} and {scores[1]:.3f}: normalised, the {right_winner} hypothesis wins; "
            f"by plain log-probability the short one would.")


# -- exercise: scheduled sampling's inverse-sigmoid decay -----------------------------------------------
def inverse_sigmoid_reference(step: int, kappa: float = SIGMOID_K) -> float:
    """Bengio et al.'s inverse-sigmoid decay: the probability of feeding the gold token."""
    return kappa / (kappa + math.exp(step / kappa))


@checker
def check_inverse_sigmoid(teacher_forcing_at) -> str:
    """``teacher_forcing_at(step) -> float``, the inverse-sigmoid decay with kappa = :data:`SIGMOID_K`."""
    require_function(teacher_forcing_at)
    steps = [0, 50, 300, 460, 700, 1500]
    got = []
    for s in steps:
        got.append(number(teacher_forcing_at(s), f"teacher_forcing_at({s})"))
    right = [inverse_sigmoid_reference(s) for s in steps]
    if all(close(g, 1 - r, rel=1e-6) for g, r in zip(got, right)):
        raise Wrong("that is the probability of feeding the model's own token; return the probability of "
                    "the gold one, which starts near 1 and falls.")
    no_scale = [SIGMOID_K / (SIGMOID_K + math.exp(min(s, 700))) for s in steps]
    if all(close(g, r, rel=1e-6, abs_=1e-12) for g, r in zip(got, no_scale)):
        raise Wrong("divide the step by kappa inside the exponential: exp(step / kappa).")
    for s, g, r in zip(steps, got, right):
        if not close(g, r, rel=1e-6):
            raise Wrong(f"teacher_forcing_at({s}) = {g:.6g}, expected {r:.6g}: kappa / (kappa + exp(step / kappa)) "
                        f"with kappa = {SIGMOID_K:g}.")
    half = SIGMOID_K * math.log(SIGMOID_K)
    return f"it passes 0.5 at step kappa ln kappa = {half:.0f} and is {right[-1]:.2g} at step 1500."


# -- exercise: byte-pair encoding ---------------------------------------------------------------------
BPE_COUNTS = {"chat": 5, "chats": 2, "chien": 3, "rat": 1}   # the exercise's corpus: word -> count
BPE_MERGES = 3

__all__ += ["check_first_merges", "check_bpe_encode", "BPE_COUNTS", "BPE_MERGES"]


def _as_pairs(merges, what: str) -> list[tuple[str, str]]:
    if merges is Ellipsis or merges is None:
        raise NotImplementedError
    if isinstance(merges, (str, bytes)) or not hasattr(merges, "__iter__"):
        raise Wrong(f"expected {what} as a list of pairs such as [('c', 'h'), ...], got {merges!r:.60}.")
    pairs = []
    for pair in merges:
        if isinstance(pair, str) or not hasattr(pair, "__len__") or len(pair) != 2 \
                or not all(isinstance(s, str) for s in pair):
            raise Wrong(f"expected each merge as a pair of two symbols, such as ('c', 'h'), got {pair!r:.40}.")
        pairs.append((pair[0], pair[1]))
    return pairs


@checker
def check_first_merges(first_merges) -> str:
    """The first :data:`BPE_MERGES` merges learned from :data:`BPE_COUNTS`, in order."""
    from ..bpe import END, learn_bpe

    got = _as_pairs(first_merges, "first_merges")
    right = list(learn_bpe(BPE_COUNTS, BPE_MERGES).merges)
    if got == right:
        return (f"the merges are {right}: c-h occurs {5 + 2 + 3} times, a-t {5 + 2 + 1}; once "
                f"c and h are one symbol, ch-at occurs {5 + 2} times, more than any other pair.")
    if len(got) != BPE_MERGES:
        raise Wrong(f"give the first {BPE_MERGES} merges, got {len(got)}.")
    if got == list(learn_bpe(list(BPE_COUNTS), BPE_MERGES).merges):
        raise Wrong("those are the merges of a corpus with each word once: weight every pair by how "
                    "often its word occurs (chat counts 5 times).")
    spelled = {w: list(w) + [END] for w in BPE_COUNTS}
    once = {}
    for w, symbols in spelled.items():
        for pair in zip(symbols, symbols[1:]):
            once[pair] = once.get(pair, 0) + BPE_COUNTS[w]
    top = sorted(once, key=lambda p: (-once[p], p))[:BPE_MERGES]
    if got == top:
        raise Wrong("those are the three most frequent pairs of the first count; after each merge, "
                    "count again: the new symbol forms new pairs (ch followed by a...).")
    for n, (g, r) in enumerate(zip(got, right), start=1):
        if g != r:
            raise Wrong(f"merge {n}: {g} is not it. Count every adjacent pair of symbols (the letters "
                        f"and {END}), weighted by the word counts, after the merges before it.")
    raise Wrong("not yet: compare your merges, in order, with the counts of the pairs.")


def _reference_encode(word: str, merges) -> list[str]:
    from ..bpe import END, merge_pair

    symbols = list(word) + [END]
    for pair in merges:
        symbols = merge_pair(symbols, tuple(pair))
    return symbols


# (word, merges, what a wrong encoder typically gets wrong on it)
_ENCODE_CASES = [
    ("low", [("l", "o"), ("lo", "w")], None),
    ("abab", [("a", "b")], "every"),
    ("abc", [("b", "c"), ("a", "b")], "order"),
    ("aaa", [("a", "a")], "overlap"),
    ("cats", [("s", "</w>"), ("a", "t")], "end"),
    ("rats", [("c", "h"), ("a", "t"), ("ch", "at")], None),
    ("chiens", [("c", "h"), ("a", "t"), ("ch", "at")], None),
]


@checker
def check_bpe_encode(encode_word) -> str:
    """``encode_word(word, merges) -> list of symbols``: the letters and ``</w>``, with each merge
    applied in turn to every occurrence of its pair, left to right."""
    from ..bpe import END, learn_bpe

    require_function(encode_word)
    hints = {
        "every": "a merge joins every occurrence of its pair in the word, not only the first.",
        "order": "apply the merges one after another in the order they were learned, each to the "
                 "whole word; do not merge whichever listed pair you meet first from the left.",
        "overlap": "scan left to right and skip past a pair once it is merged: 'aaa' with the merge "
                   "('a', 'a') gives ['aa', 'a', '</w>'].",
        "end": f"add {END} to the letters before merging: a merge may involve it (('s', '{END}')).",
    }
    learned = learn_bpe(["chat"] * 5 + ["chats", "chaton", "rat", "rats", "chien", "niche"], 12)
    cases = _ENCODE_CASES + [(w, list(learned.merges), None)
                             for w in ("chatons", "ratiche", "nichat", "t", "hh")]
    for word, merges, kind in cases:
        got = encode_word(word, [tuple(m) for m in merges])
        if isinstance(got, str):
            raise Wrong(f"expected a list of symbols, such as ['ch', 'at', '{END}'], got the string {got!r}.")
        if not isinstance(got, (list, tuple)) or not all(isinstance(s, str) for s in got):
            raise Wrong(f"expected a list of symbols (strings), got {got!r:.60}.")
        got, right = list(got), _reference_encode(word, merges)
        if got == right:
            continue
        if not "".join(got).endswith(END):
            raise Wrong(f"end every word with {END}: {word!r} -> {right}, got {got}.")
        if kind in hints:
            raise Wrong(f"{word!r} with merges {merges}: expected {right}, got {got}. {hints[kind]}")
        raise Wrong(f"{word!r} with merges {merges[:4]}{'...' if len(merges) > 4 else ''}: expected "
                    f"{right}, got {got}.")
    rats = _reference_encode("rats", _ENCODE_CASES[5][1])
    return (f"your encoder agrees with the reference on {len(cases)} words; with the three merges, "
            f"'rats' becomes {rats}.")


# -- exercise: the teacher-forced loss, one decoder step at a time ------------------------------------
__all__ += ["check_teacher_forced_loss"]


def _loss_case(seed: int):
    """A small untrained Seq2Seq and a padded batch of four made-up sentence pairs."""
    from ..seq2seq import Seq2Seq
    from ..translation import BOS, EOS, PAD, Batch, pad

    gen = torch.Generator().manual_seed(seed)
    model = Seq2Seq(12, 14, embed_size=8, hidden_size=16, cell="lstm", feed_context=False, seed=seed)
    lengths = [(5, 6), (3, 2), (7, 4), (4, 1)]
    src = [torch.randint(4, 12, (n,), generator=gen).tolist() for n, _ in lengths]
    tgt = [torch.randint(4, 14, (m,), generator=gen).tolist() for _, m in lengths]
    src_ids = pad(src)
    batch = Batch(src=src_ids, src_lengths=torch.tensor([len(s) for s in src]),
                  tgt_in=pad([[BOS] + t for t in tgt]), tgt_out=pad([t + [EOS] for t in tgt]),
                  src_mask=src_ids != PAD)
    return model, batch


def _loss_variants(model, batch) -> dict[str, float]:
    """What the usual mistakes compute on one batch (the parallel pass, for the comparison)."""
    import torch.nn.functional as F

    from ..translation import PAD

    with torch.no_grad():
        logits = model(batch.src, batch.src_lengths, batch.tgt_in)      # (batch, time, |V|)
        flat, targets = logits.reshape(-1, logits.shape[-1]), batch.tgt_out.reshape(-1)
        shifted = model(batch.src, batch.src_lengths, batch.tgt_out)
        state, token, own = model.start(batch.src, batch.src_lengths), batch.tgt_in[:, 0], []
        for _ in range(batch.tgt_in.shape[1]):
            step_logits, state = model.step(token, state)
            own.append(step_logits)
            token = step_logits.argmax(-1)
        own = torch.stack(own, 1).reshape(-1, logits.shape[-1])
        return {
            "right": float(F.cross_entropy(flat, targets, ignore_index=PAD)),
            "with padding": float(F.cross_entropy(flat, targets)),
            "sum": float(F.cross_entropy(flat, targets, ignore_index=PAD, reduction="sum")),
            "tgt_out read": float(F.cross_entropy(shifted.reshape(-1, logits.shape[-1]), targets,
                                                  ignore_index=PAD)),
            "own predictions": float(F.cross_entropy(own, targets, ignore_index=PAD)),
        }


@checker
def check_teacher_forced_loss(teacher_forced_loss) -> str:
    """``teacher_forced_loss(model, batch) -> loss``: the mean cross-entropy over the target tokens
    that are not ``<pad>``, computed with ``model.start`` and one ``model.step`` per position,
    the decoder reading ``batch.tgt_in``; it must equal the parallel teacher-forced pass."""
    require_function(teacher_forced_loss)
    hints = {
        "with padding": "your mean includes the <pad> positions; average over the real target "
                        "tokens only (ignore_index=PAD, or a mask).",
        "sum": "that is the sum over the target tokens; return their mean (nats per token).",
        "tgt_out read": "the decoder reads tgt_in (<bos> first) and is scored against tgt_out, the "
                        "same words one position later; you fed it tgt_out.",
        "own predictions": "that is the decoder reading its own predictions (free running); teacher "
                           "forcing feeds it the reference word tgt_in[:, j] at every position.",
    }
    for seed in (0, 1):
        model, batch = _loss_case(seed)
        calls = []
        step = model.step

        def counting_step(tokens, state):
            calls.append(tokens.shape)
            return step(tokens, state)

        model.step = counting_step
        loss = teacher_forced_loss(model, batch)
        del model.step
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise Wrong(f"expected the loss as a one-element tensor (a scalar), got {describe(loss)}.")
        if not loss.requires_grad:
            raise Wrong("the loss has no gradient: keep it a tensor of the graph (no .item(), no "
                        "torch.no_grad()), so that loss.backward() can train the model.")
        if not calls:
            raise Wrong("write it with model.start and model.step, one decoder step per target "
                        "position, rather than model(...) in one call.")
        value, variants = float(loss.detach()), _loss_variants(model, batch)
        if close(value, variants["right"], rel=1e-4):
            if len(calls) != batch.tgt_in.shape[1]:
                raise Wrong(f"the right value, but model.step ran {len(calls)} times for "
                            f"{batch.tgt_in.shape[1]} target positions: one step per position.")
            continue
        for name, hint in hints.items():
            if close(value, variants[name], rel=1e-4):
                raise Wrong(hint)
        raise Wrong(f"loss {value:.5f}, expected {variants['right']:.5f} (the mean cross-entropy of "
                    "the step-by-step logits against tgt_out over the non-<pad> positions).")
    return ("your step-by-step loss equals the parallel teacher-forced pass on two padded batches: "
            "with the reference as input, every position's input is known in advance.")


# -- exercise: form (C) from its parts ------------------------------------------------------------
__all__ += ["check_context_logits"]


def _context_case(seed: int):
    """A small untrained form-(C) LSTM model and a padded batch of three made-up pairs."""
    from ..seq2seq import Seq2Seq
    from ..translation import BOS, pad

    gen = torch.Generator().manual_seed(seed)
    model = Seq2Seq(11, 13, embed_size=6, hidden_size=10, cell="lstm", feed_context=True, seed=seed)
    src = [torch.randint(4, 11, (n,), generator=gen).tolist() for n in (4, 7, 2)]
    tgt = [torch.randint(4, 13, (m,), generator=gen).tolist() for m in (3, 5, 1)]
    return model, pad(src), torch.tensor([len(s) for s in src]), pad([[BOS] + t for t in tgt])


def _context_variant(model, src, src_lengths, tgt_in, packed=True, context="h",
                             context_first=False, start="encoder"):
    """Form (C)'s teacher-forced logits from the model's parts; the keywords give the usual
    mistakes: no packing, the cell state c as v, [v; E] for [E; v], a zero starting state."""
    from torch.nn.utils.rnn import pack_padded_sequence

    embedded = model.encoder.embedding(src)                          # (batch, T_x, d)
    if packed:
        embedded = pack_padded_sequence(embedded, src_lengths.cpu(), batch_first=True,
                                        enforce_sorted=False)
    _, (h, c) = model.encoder.rnn(embedded)                          # (layers, batch, d_h) each
    v = (h if context == "h" else c)[-1]                             # (batch, d_h)
    x = model.decoder.embedding(tgt_in)                              # (batch, m, d)
    v_each = v[:, None, :].expand(-1, x.shape[1], -1)
    x = torch.cat([v_each, x] if context_first else [x, v_each], dim=-1)
    state = (h, c) if start == "encoder" else (torch.zeros_like(h), torch.zeros_like(c))
    outputs, _ = model.decoder.rnn(x, state)
    return model.decoder.out(outputs)                                # (batch, m, |V_tgt|)


@checker
def check_context_logits(context_logits) -> str:
    """``context_logits(model, src, src_lengths, tgt_in) -> logits`` (batch, m, |V_tgt|): form (C)
    built from the model's parts; it must equal ``model(src, src_lengths, tgt_in)``."""
    require_function(context_logits)
    hints = {
        "unpacked": "each sentence's final state must be taken at its own last word: pack the "
                    "padded batch (pack_padded_sequence) before the encoder's LSTM.",
        "c as v": "you fed the cell state c as the context; v is the top layer's hidden state h.",
        "v first": "the decoder's input is [E_y[y_{i-1}]; v], the embedding first, then v.",
        "zero start": "the decoder starts from the encoder's final state (h, c), not from zeros.",
    }
    variants = {"unpacked": dict(packed=False), "c as v": dict(context="c"),
                "v first": dict(context_first=True), "zero start": dict(start="zeros")}
    forbidden = ("forward", "start", "step")
    for seed in (0, 1):
        model, src, lengths, tgt_in = _context_case(seed)
        with torch.no_grad():
            right = model(src, lengths, tgt_in)
        calls = []
        for name in forbidden:                  # the whole model's own methods are off limits
            original = getattr(model, name)
            setattr(model, name,
                    lambda *a, _n=name, _f=original, **k: calls.append(_n) or _f(*a, **k))
        for part in (model.encoder, model.decoder):
            part.register_forward_hook(lambda module, args, out: calls.append(type(module).__name__))
        with torch.no_grad():
            logits = context_logits(model, src.clone(), lengths.clone(), tgt_in.clone())
        if calls:
            raise Wrong(f"you called {calls[0]}: build form (C) from the parts (the embeddings, "
                        "the two LSTMs and decoder.out), not with the model's own methods.")
        if not isinstance(logits, torch.Tensor):
            raise Wrong(f"expected the logits as a tensor, got {describe(logits)}.")
        if tuple(logits.shape) != tuple(right.shape):
            raise Wrong(f"expected logits of shape {tuple(right.shape)} (batch, target length, "
                        f"|V_tgt|), got {tuple(logits.shape)}.")
        if torch.allclose(logits.double(), right.double(), atol=1e-5):
            continue
        with torch.no_grad():
            for name, options in variants.items():
                mistake = _context_variant(model, src, lengths, tgt_in, **options)
                if torch.allclose(logits, mistake, atol=1e-5):
                    raise Wrong(hints[name])
        worst = float((logits - right).abs().max())
        raise Wrong(f"your logits differ from the model's by up to {worst:.3g}: the decoder reads "
                    "[E_y[y_{i-1}]; v] at every step, starting from the encoder's final (h, c).")
    return ("your form (C) gives the model's own logits on two padded batches: the context v "
            "enters every decoder step, beside the previous word's embedding.")
