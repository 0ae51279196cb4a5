"""Chapter 4's checkers accept right answers, name typical mistakes, and never raise."""

import math

import torch

from seqbook.decoding import gnmt_penalty
from seqbook.exercises.ch04 import (LONG_HYPOTHESIS, SHORT_HYPOTHESIS, SIGMOID_K, beam_step_reference,
                                    check_beam_step, check_bleu_by_hand, check_inverse_sigmoid,
                                    check_length_penalty, check_search_sizes, inverse_sigmoid_reference)


def _verdict(v, passed, *words):
    assert bool(v) is passed, v.message
    for w in words:
        assert w in v.message, v.message


# -- BLEU by hand ---------------------------------------------------------------------------------
P = [1.0, 4 / 5, 2 / 4, 1 / 3]
BP = math.exp(1 - 7 / 6)
BLEU = 100 * BP * (P[0] * P[1] * P[2] * P[3]) ** 0.25


def test_bleu_by_hand(capsys):
    _verdict(check_bleu_by_hand(P, BP, BLEU), True, "51.")
    assert "✅" in capsys.readouterr().out
    _verdict(check_bleu_by_hand(torch.tensor(P), torch.tensor(BP), round(BLEU, 4)), True)
    _verdict(check_bleu_by_hand([100 * p for p in P], BP, BLEU), False, "fractions")
    _verdict(check_bleu_by_hand([1.0, 1.0, 2 / 4, 1 / 3], BP, BLEU), False, "p_2", "5 2-grams")
    _verdict(check_bleu_by_hand(P, 1.0, BLEU), False, "only when")
    _verdict(check_bleu_by_hand(P, math.exp(1 - 6 / 7), BLEU), False, "upside down")
    _verdict(check_bleu_by_hand(P, BP, BLEU / 100), False, "0..1")
    _verdict(check_bleu_by_hand(P, BP, BLEU / BP), False, "brevity penalty")
    _verdict(check_bleu_by_hand(P, BP, 100 * BP * sum(P) / 4), False, "arithmetic")
    _verdict(check_bleu_by_hand(P, BP, 40.0), False, "not it")
    _verdict(check_bleu_by_hand(P[:3], BP, BLEU), False, "four numbers")
    _verdict(check_bleu_by_hand(..., ..., ...), False, "placeholder")
    _verdict(check_bleu_by_hand(P, "big", BLEU), False, "text")


# -- search sizes -------------------------------------------------------------------------------
def test_search_sizes():
    _verdict(check_search_sizes(150 ** 20, 5 * 150 * 20), True, "15,000")
    _verdict(check_search_sizes(3.3253e43, 15000.0), True)   # a rounded float is fine
    _verdict(check_search_sizes(20 ** 150, 15000), False, "m^|V|")
    _verdict(check_search_sizes(150 * 20, 15000), False, "greedy")
    _verdict(check_search_sizes(5 ** 20, 15000), False, "k^m")
    _verdict(check_search_sizes(150 ** 20, 3000), False, "greedy")
    _verdict(check_search_sizes(150 ** 20, 25 * 20), False, "every token")
    _verdict(check_search_sizes(150 ** 20, 5 * 150.0 ** 20), False, "adds up")
    _verdict(check_search_sizes(150 ** 20, 15001), False, "not it")
    # counting that the first step extends only <bos>: 150 + 19 * 750 is right too
    _verdict(check_search_sizes(150 ** 20, 150 + 19 * 5 * 150), True, "14,400")
    _verdict(check_search_sizes(150 ** 20, 14400.0), True, "only <bos>")
    _verdict(check_search_sizes(..., 15000), False, "placeholder")


# -- one beam step --------------------------------------------------------------------------------
def test_beam_step_right_answers():
    _verdict(check_beam_step(beam_step_reference), True, "four random cases")

    def loop_version(sums, log_probs, beam_size):   # a plain-Python version is just as right
        cands = sorted(((float(s + lp), p, t) for p, (s, row) in enumerate(zip(sums, log_probs))
                        for t, lp in enumerate(row)), reverse=True)[:beam_size]
        return [c[1] for c in cands], [c[2] for c in cands], [c[0] for c in cands]

    _verdict(check_beam_step(loop_version), True)


def test_beam_step_typical_mistakes():
    def best_per_parent(sums, log_probs, beam_size):
        totals = sums[:, None] + log_probs
        best, tokens = totals.max(1)
        order = best.argsort(descending=True)[:beam_size]
        return order, tokens[order], best[order]

    _verdict(check_beam_step(best_per_parent), False, "best token of each hypothesis")

    def ignores_sums(sums, log_probs, beam_size):
        best, index = log_probs.flatten().topk(beam_size)
        v = log_probs.shape[1]
        return index // v, index % v, best + sums[index // v]

    _verdict(check_beam_step(ignores_sums), False, "alone")

    def worst_first(sums, log_probs, beam_size):
        p, t, s = beam_step_reference(sums, log_probs, beam_size)
        return p.flip(0), t.flip(0), s.flip(0)

    _verdict(check_beam_step(worst_first), False, "best first")

    def forgets_parent_sum(sums, log_probs, beam_size):
        p, t, _ = beam_step_reference(sums, log_probs, beam_size)
        return p, t, log_probs[p, t]

    _verdict(check_beam_step(forgets_parent_sum), False, "totals are off")

    def keeps_too_many(sums, log_probs, beam_size):
        return beam_step_reference(sums, log_probs, beam_size + 1)

    _verdict(check_beam_step(keeps_too_many), False, "keep")

    def crashes(sums, log_probs, beam_size):
        return sums[10]

    _verdict(check_beam_step(crashes), False, "IndexError")
    _verdict(check_beam_step(lambda s, lp, k: 3), False, "three things")

    def stub(sums, log_probs, beam_size):
        raise NotImplementedError

    _verdict(check_beam_step(stub), False, "placeholder")
    _verdict(check_beam_step(42), False, "function")


# -- length penalty --------------------------------------------------------------------------------
def test_length_penalty():
    short = SHORT_HYPOTHESIS[0] / gnmt_penalty(SHORT_HYPOTHESIS[1], 1.0)
    long = LONG_HYPOTHESIS[0] / gnmt_penalty(LONG_HYPOTHESIS[1], 1.0)
    assert long > short and SHORT_HYPOTHESIS[0] > LONG_HYPOTHESIS[0]   # the exercise's point
    _verdict(check_length_penalty(short, long, "long"), True, "long hypothesis wins")
    _verdict(check_length_penalty(short, long, "short"), False, "higher")
    _verdict(check_length_penalty(SHORT_HYPOTHESIS[0], long, "long"), False, "plain log-probability")
    _verdict(check_length_penalty(short, LONG_HYPOTHESIS[0] / LONG_HYPOTHESIS[1], "long"), False,
             "length itself")
    _verdict(check_length_penalty(short, LONG_HYPOTHESIS[0] * gnmt_penalty(LONG_HYPOTHESIS[1], 1.0), "long"),
             False, "multiplies")
    _verdict(check_length_penalty(short, -1.0, "long"), False, "not it")
    _verdict(check_length_penalty(short, long, "longer"), False, "'short' or 'long'")
    _verdict(check_length_penalty(short, long, ...), False, "placeholder")


# -- inverse-sigmoid decay ---------------------------------------------------------------------------
def test_inverse_sigmoid():
    _verdict(check_inverse_sigmoid(inverse_sigmoid_reference), True, "461")
    _verdict(check_inverse_sigmoid(lambda s: SIGMOID_K / (SIGMOID_K + math.exp(s / SIGMOID_K))), True)
    _verdict(check_inverse_sigmoid(lambda s: 1 - inverse_sigmoid_reference(s)), False, "own token")
    _verdict(check_inverse_sigmoid(lambda s: SIGMOID_K / (SIGMOID_K + math.exp(min(s, 700)))), False,
             "step / kappa")
    _verdict(check_inverse_sigmoid(lambda s: max(0.0, 1 - s / 1000)), False, "expected")
    _verdict(check_inverse_sigmoid(lambda s: "one"), False, "text")
    _verdict(check_inverse_sigmoid(None), False, "placeholder")


# -- byte-pair encoding ---------------------------------------------------------------------------
def test_first_merges():
    from seqbook.exercises.ch04 import check_first_merges

    right = [("c", "h"), ("a", "t"), ("ch", "at")]
    _verdict(check_first_merges(right), True, "10 times")
    _verdict(check_first_merges([list(p) for p in right]), True)            # lists are fine
    # each word counted once: a-t ties c-h and sorts first
    _verdict(check_first_merges([("a", "t"), ("c", "h"), ("at", "</w>")]), False, "weight every pair")
    # the top three pairs of the first count, never recounted
    _verdict(check_first_merges([("c", "h"), ("a", "t"), ("h", "a")]), False, "count again")
    _verdict(check_first_merges([("c", "h"), ("a", "t"), ("at", "</w>")]), False, "merge 3")
    _verdict(check_first_merges(right[:2]), False, "first 3")
    _verdict(check_first_merges(["ch", "at", "chat"]), False, "pair of two symbols")
    _verdict(check_first_merges("ch at"), False, "list of pairs")
    _verdict(check_first_merges(...), False, "placeholder")


def _encode_right(word, merges):
    symbols = list(word) + ["</w>"]
    for a, b in merges:
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


def test_bpe_encode_right_answers():
    from seqbook.exercises.ch04 import check_bpe_encode

    _verdict(check_bpe_encode(_encode_right), True, "['r', 'at', 's', '</w>']")
    _verdict(check_bpe_encode(lambda w, m: tuple(_encode_right(w, m))), True)


def test_bpe_encode_names_the_usual_mistakes():
    from seqbook.exercises.ch04 import check_bpe_encode

    def first_only(word, merges):                 # each merge joins only its first occurrence
        symbols = list(word) + ["</w>"]
        for a, b in merges:
            for i in range(len(symbols) - 1):
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i:i + 2] = [a + b]
                    break
        return symbols

    def leftmost_pair(word, merges):              # merges whichever listed pair comes first in the word
        symbols, ranks = list(word) + ["</w>"], set(map(tuple, merges))
        changed = True
        while changed:
            changed = False
            for i in range(len(symbols) - 1):
                if (symbols[i], symbols[i + 1]) in ranks:
                    symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
                    changed = True
                    break
        return symbols

    def right_to_left(word, merges):              # scans from the end: 'aaa' -> a, aa
        symbols = list(word) + ["</w>"]
        for a, b in merges:
            i = len(symbols) - 2
            while i >= 0:
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i:i + 2] = [a + b]
                    i -= 2
                else:
                    i -= 1
        return symbols

    def end_added_last(word, merges):             # </w> appended after merging
        return _encode_right(word, [m for m in merges if "</w>" not in m[1]])[:-1] + ["</w>"]

    def no_end(word, merges):
        return _encode_right(word, merges)[:-1] if _encode_right(word, merges)[-1] == "</w>" else list(word)

    _verdict(check_bpe_encode(first_only), False, "every occurrence")
    _verdict(check_bpe_encode(leftmost_pair), False, "one after another")
    _verdict(check_bpe_encode(right_to_left), False, "left to right")
    _verdict(check_bpe_encode(end_added_last), False, "before merging")
    _verdict(check_bpe_encode(no_end), False, "end every word")
    _verdict(check_bpe_encode(lambda w, m: "".join(_encode_right(w, m))), False, "the string")
    _verdict(check_bpe_encode(lambda w, m: None), False, "list of symbols")
    _verdict(check_bpe_encode(lambda w, m: 1 / 0), False, "ZeroDivisionError")
    _verdict(check_bpe_encode("not a function"), False, "expected a function")


# -- the teacher-forced loss, step by step -----------------------------------------------------------
def _step_logits(model, batch, inputs):
    state = model.start(batch.src, batch.src_lengths)
    steps = []
    for j in range(inputs.shape[1]):
        logits, state = model.step(inputs[:, j], state)
        steps.append(logits)
    return torch.stack(steps, 1)


def _ce(logits, targets, **kwargs):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), **kwargs)


def test_teacher_forced_loss_right_answers():
    from seqbook.exercises.ch04 import check_teacher_forced_loss

    def right(model, batch):
        return _ce(_step_logits(model, batch, batch.tgt_in), batch.tgt_out, ignore_index=0)

    def masked(model, batch):                     # the same, with an explicit mask
        logits = _step_logits(model, batch, batch.tgt_in)
        real = batch.tgt_out != 0
        per_token = _ce(logits, batch.tgt_out, reduction="none").reshape(batch.tgt_out.shape)
        return (per_token * real).sum() / real.sum()

    _verdict(check_teacher_forced_loss(right), True, "two padded batches")
    _verdict(check_teacher_forced_loss(masked), True)


def test_teacher_forced_loss_names_the_usual_mistakes():
    from seqbook.exercises.ch04 import check_teacher_forced_loss

    def with_padding(model, batch):
        return _ce(_step_logits(model, batch, batch.tgt_in), batch.tgt_out)

    def summed(model, batch):
        return _ce(_step_logits(model, batch, batch.tgt_in), batch.tgt_out, ignore_index=0, reduction="sum")

    def reads_tgt_out(model, batch):
        return _ce(_step_logits(model, batch, batch.tgt_out), batch.tgt_out, ignore_index=0)

    def own_predictions(model, batch):
        state, token, steps = model.start(batch.src, batch.src_lengths), batch.tgt_in[:, 0], []
        for _ in range(batch.tgt_in.shape[1]):
            logits, state = model.step(token, state)
            steps.append(logits)
            token = logits.argmax(-1)
        return _ce(torch.stack(steps, 1), batch.tgt_out, ignore_index=0)

    def parallel(model, batch):
        return _ce(model(batch.src, batch.src_lengths, batch.tgt_in), batch.tgt_out, ignore_index=0)

    def as_number(model, batch):
        return _ce(_step_logits(model, batch, batch.tgt_in), batch.tgt_out, ignore_index=0).item()

    def detached(model, batch):
        with torch.no_grad():
            return _ce(_step_logits(model, batch, batch.tgt_in), batch.tgt_out, ignore_index=0)

    _verdict(check_teacher_forced_loss(with_padding), False, "<pad> positions")
    _verdict(check_teacher_forced_loss(summed), False, "their mean")
    _verdict(check_teacher_forced_loss(reads_tgt_out), False, "you fed it tgt_out")
    _verdict(check_teacher_forced_loss(own_predictions), False, "free running")
    _verdict(check_teacher_forced_loss(parallel), False, "one decoder step per target")
    _verdict(check_teacher_forced_loss(as_number), False, "one-element tensor")
    _verdict(check_teacher_forced_loss(detached), False, "no gradient")
    _verdict(check_teacher_forced_loss(lambda m, b: torch.tensor(3.0, requires_grad=True) * 1), False,
             "step")


# -- corpus BLEU in code ---------------------------------------------------------------------------
def test_corpus_bleu_right_and_typical_mistakes():
    from seqbook.bleu import corpus_bleu
    from seqbook.exercises.ch04 import _bleu_variant, check_corpus_bleu

    def with_(**options):
        return lambda hyps, refs: _bleu_variant(hyps, refs, **options)

    assert bool(check_corpus_bleu(lambda h, r: corpus_bleu(h, r).score))
    assert bool(check_corpus_bleu(with_()))                      # the variant's defaults are BLEU
    for options, words in ((dict(scale=1.0), "100"), (dict(clip=False), "clipped"),
                           (dict(macro=True), "mean of the sentence scores"),
                           (dict(bp="none"), "brevity penalty is missing"),
                           (dict(bp="always"), "only when the outputs are shorter"),
                           (dict(mean="arithmetic"), "geometric mean")):
        v = check_corpus_bleu(with_(**options))
        assert not v and words in v.message, (options, v.message)
    v = check_corpus_bleu(lambda h, r: 12.0)
    assert not v and "is not its corpus BLEU" in v.message
    v = check_corpus_bleu(lambda h, r: "high")
    assert not v and "test corpus 1" in v.message
    assert not check_corpus_bleu(None) and "placeholder" in check_corpus_bleu(None).message


# -- form (C) from its parts -----------------------------------------------------------------------
def test_context_logits_right_answer():
    from seqbook.exercises.ch04 import _context_variant, check_context_logits

    def by_hand(model, src, src_lengths, tgt_in):  # written out as a student would
        from torch.nn.utils.rnn import pack_padded_sequence
        packed = pack_padded_sequence(model.encoder.embedding(src), src_lengths, batch_first=True,
                                      enforce_sorted=False)
        _, (h, c) = model.encoder.rnn(packed)
        x = model.decoder.embedding(tgt_in)
        x = torch.cat([x, h[-1].unsqueeze(1).repeat(1, x.shape[1], 1)], dim=-1)
        outputs, _ = model.decoder.rnn(x, (h, c))
        return model.decoder.out(outputs)

    _verdict(check_context_logits(by_hand), True, "two padded batches")
    _verdict(check_context_logits(_context_variant), True)


def test_context_logits_names_the_usual_mistakes():
    from seqbook.exercises.ch04 import _context_variant, check_context_logits

    def mistake(**options):
        return lambda m, s, l, t: _context_variant(m, s, l, t, **options)

    _verdict(check_context_logits(mistake(packed=False)), False, "pack_padded_sequence")
    _verdict(check_context_logits(mistake(context="c")), False, "cell state c")
    _verdict(check_context_logits(mistake(context_first=True)), False, "the embedding first")
    _verdict(check_context_logits(mistake(start="zeros")), False, "not from zeros")
    _verdict(check_context_logits(lambda m, s, l, t: m(s, l, t)), False, "you called forward")
    _verdict(check_context_logits(lambda m, s, l, t: m.decoder(t, m.start(s, l))[0]), False, "you called")
    _verdict(check_context_logits(lambda m, s, l, t: m.encoder(s, l)[0]), False, "you called Encoder")
    _verdict(check_context_logits(lambda m, s, l, t: _context_variant(m, s, l, t)[:, :-1]), False,
             "shape")
    _verdict(check_context_logits(lambda m, s, l, t: _context_variant(m, s, l, t) + 0.1), False,
             "differ from the model's")


def test_context_logits_junk_input():
    from seqbook.exercises.ch04 import check_context_logits

    assert not check_context_logits(None) and "placeholder" in check_context_logits(None).message
    _verdict(check_context_logits(42), False, "expected a function")
    _verdict(check_context_logits(lambda m, s, l, t: "logits"), False, "as a tensor")
    _verdict(check_context_logits(lambda m, s, l, t: [[0.0]]), False, "as a tensor")
    v = check_context_logits(lambda m, s, l, t: 1 / 0)
    assert not v and v.message
