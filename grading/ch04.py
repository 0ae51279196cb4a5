"""How chapter 4's exercises are graded (sequence to sequence, teacher forcing, beam search).

Each hidden test is a self-contained function: its parameters name the notebook variables it
reads, and it computes its own reference answer (never from ``seqbook.exercises``).
"""

from seqbook.authoring.grader import GradingSpec

spec = GradingSpec()

spec.auto("ch4-ex-bleu-by-hand", written=1)


@spec.hidden("ch4-ex-bleu-by-hand", points=1)
def modified_precisions(precisions):
    ref, hyp = "le chat noir voit la souris .".split(), "le chat voit la souris .".split()
    right = []
    for n in range(1, 5):
        grams = [tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1)]
        ref_grams = [tuple(ref[i:i + n]) for i in range(len(ref) - n + 1)]
        right.append(sum(min(grams.count(g), ref_grams.count(g)) for g in set(grams)) / len(grams))
    got = [float(p) for p in precisions]
    assert len(got) == 4 and all(abs(g - r) < 1e-3 for g, r in zip(got, right)), f"p_1..p_4 are not {got}"


@spec.hidden("ch4-ex-bleu-by-hand", points=1)
def brevity_penalty(bp):
    import math
    right = math.exp(1 - 7 / 6)   # a 6-token output against a 7-token reference
    assert abs(float(bp) - right) < 1e-3, f"the brevity penalty is not {bp!r}"


@spec.hidden("ch4-ex-bleu-by-hand", points=1)
def bleu_score(bleu):
    import math
    right = 100 * math.exp(1 - 7 / 6) * (1 * 4 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert abs(float(bleu) - right) < 0.05, f"BLEU (0..100) is not {bleu!r}"


spec.auto("ch4-ex-bleu-code")


@spec.hidden("ch4-ex-bleu-code", points=2)
def corpus_bleu_on_a_new_corpus(my_corpus_bleu):
    import math
    from collections import Counter
    hyps = [s.split() for s in ("the the cat sat on a mat .", "a dog runs .", "birds fly high")]
    refs = [s.split() for s in ("the cat sat on the mat .", "a big dog runs fast .", "birds fly high")]

    def grams(tokens, n):
        return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    logs = []
    for n in range(1, 5):
        matched = sum(sum(min(c, grams(r, n)[g]) for g, c in grams(h, n).items())
                      for h, r in zip(hyps, refs))
        total = sum(sum(grams(h, n).values()) for h in hyps)
        logs.append(math.log(matched / total))
    c, r = sum(map(len, hyps)), sum(map(len, refs))
    right = 100 * min(1.0, math.exp(1 - r / c)) * math.exp(sum(logs) / 4)
    got = float(my_corpus_bleu([list(h) for h in hyps], [list(x) for x in refs]))
    assert abs(got - right) < 1e-3 * max(1.0, right), f"corpus BLEU is {right:.3f}, not {got:.3f}"


spec.auto("ch4-ex-search-sizes", written=1)


@spec.hidden("ch4-ex-search-sizes", points=1)
def exhaustive_search(exhaustive):
    assert abs(float(exhaustive) / 150 ** 20 - 1) < 1e-6, f"{exhaustive!r} is not the number of 20-token sequences"


@spec.hidden("ch4-ex-search-sizes", points=1)
def beam_search_scores(beam_scored):
    assert int(beam_scored) == beam_scored and int(beam_scored) in (5 * 150 * 20, 150 + 19 * 5 * 150), \
        f"{beam_scored!r} is not the number of extension scores of a width-5 beam"


spec.auto("ch4-ex-beam-step", written=1)


@spec.hidden("ch4-ex-beam-step", points=2)
def beam_step_on_a_new_beam(beam_step):
    import torch
    gen = torch.Generator().manual_seed(90)
    sums = -5 * torch.rand(4, generator=gen, dtype=torch.float64)
    log_probs = torch.log_softmax(3 * torch.randn(4, 9, generator=gen, dtype=torch.float64), -1)
    every = [(float(sums[p] + log_probs[p, t]), p, t) for p in range(4) for t in range(9)]
    best = sorted(every, reverse=True)[:6]
    parents, tokens, totals = beam_step(sums.clone(), log_probs.clone(), 6)
    got = [(float(s), int(p), int(t)) for s, p, t in zip(totals, parents, tokens)]
    assert len(got) == 6, f"expected 6 extensions, got {len(got)}"
    assert all(abs(g[0] - b[0]) < 1e-9 and g[1:] == b[1:] for g, b in zip(got, best)), \
        "the 6 best extensions over all hypotheses and tokens, best first, are not these"


@spec.hidden("ch4-ex-beam-step", points=1)
def beam_step_can_extend_one_hypothesis_twice(beam_step):
    import torch
    sums = torch.tensor([0.0, -10.0], dtype=torch.float64)
    log_probs = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.9, 0.05, 0.05]], dtype=torch.float64))
    parents, tokens, totals = beam_step(sums, log_probs, 2)
    assert [int(p) for p in parents] == [0, 0] and [int(t) for t in tokens] == [0, 1], \
        "both of the 2 best extensions continue hypothesis 0: all k |V| extensions compete together"


spec.manual("ch4-ex-teacher-forcing", points=4)

spec.auto("ch4-ex-length-penalty", written=2)


@spec.hidden("ch4-ex-length-penalty", points=1)
def gnmt_scores(short_score, long_score):
    def score(log_p, length, alpha=1.0):
        return log_p / ((5 + length) / 6) ** alpha
    assert abs(float(short_score) - score(-3.0, 4)) < 1e-3, f"the short translation's score is not {short_score!r}"
    assert abs(float(long_score) - score(-4.2, 11)) < 1e-3, f"the long translation's score is not {long_score!r}"


@spec.hidden("ch4-ex-length-penalty", points=1)
def normalised_winner(winner):
    assert isinstance(winner, str) and winner.strip().lower() == "long", \
        f"{winner!r}: after length normalisation the 11-token translation scores higher"


spec.auto("ch4-ex-scheduled", written=3,
          note="only `teacher_forcing_at` is autograded. Part (b) trains the chapter's models: run it in "
               "the chapter's notebook and report what you measured in the written part below.")


@spec.hidden("ch4-ex-scheduled", points=2)
def inverse_sigmoid_schedule(teacher_forcing_at):
    import math
    for step in (0, 1, 99, 250, 461, 900, 2000):
        right = 100 / (100 + math.exp(step / 100))
        got = float(teacher_forcing_at(step))
        assert abs(got - right) < 1e-6, f"at step {step}: expected {right:.6f}, got {got:.6f}"


spec.auto("ch4-ex-teacher-forced-loss", written=1)


@spec.hidden("ch4-ex-teacher-forced-loss", points=2)
def stepwise_loss_equals_the_parallel_pass(teacher_forced_loss):
    import torch
    import torch.nn.functional as F
    from seqbook.seq2seq import Seq2Seq
    from seqbook.translation import Batch, pad
    gen = torch.Generator().manual_seed(41)
    model = Seq2Seq(10, 11, embed_size=6, hidden_size=12, cell="gru", feed_context=True, seed=41)
    src = [torch.randint(4, 10, (n,), generator=gen).tolist() for n in (3, 6, 2)]
    tgt = [torch.randint(4, 11, (m,), generator=gen).tolist() for m in (5, 1, 3)]
    src_ids = pad(src)
    batch = Batch(src_ids, torch.tensor([len(s) for s in src]), pad([[1] + t for t in tgt]),
                  pad([t + [2] for t in tgt]), src_ids != 0)
    logits = model(batch.src, batch.src_lengths, batch.tgt_in)
    right = F.cross_entropy(logits.reshape(-1, 11), batch.tgt_out.reshape(-1), ignore_index=0)
    loss, right = float(teacher_forced_loss(model, batch).detach()), float(right.detach())
    assert abs(loss - right) < 1e-4, f"the loss {loss:.5f} is not {right:.5f}"


@spec.hidden("ch4-ex-teacher-forced-loss", points=1)
def stepwise_loss_can_train(teacher_forced_loss):
    import torch
    from seqbook.seq2seq import Seq2Seq
    from seqbook.translation import Batch, pad
    model = Seq2Seq(10, 11, embed_size=6, hidden_size=12, cell="lstm", feed_context=False, seed=42)
    src_ids, tgt = pad([[5, 6, 7], [8, 9]]), [[4, 5], [6, 7, 8, 9]]
    batch = Batch(src_ids, torch.tensor([3, 2]), pad([[1] + t for t in tgt]),
                  pad([t + [2] for t in tgt]), src_ids != 0)
    loss = teacher_forced_loss(model, batch)
    assert isinstance(loss, torch.Tensor) and loss.requires_grad, "the loss must be a tensor with a gradient"
    loss.backward()
    assert model.encoder.embedding.weight.grad is not None, "the gradient must reach the encoder"


spec.auto("ch4-ex-context-decoder", written=1)


@spec.hidden("ch4-ex-context-decoder", points=2)
def form_c_from_its_parts(context_logits):
    import torch
    from seqbook.seq2seq import Seq2Seq
    from seqbook.translation import pad
    gen = torch.Generator().manual_seed(43)
    model = Seq2Seq(9, 12, embed_size=5, hidden_size=7, cell="lstm", feed_context=True, seed=43)
    src = [torch.randint(4, 9, (n,), generator=gen).tolist() for n in (5, 2, 6, 3)]
    tgt = [torch.randint(4, 12, (m,), generator=gen).tolist() for m in (2, 4, 1, 3)]
    src_ids, lengths, tgt_in = pad(src), torch.tensor([len(s) for s in src]), pad([[1] + t for t in tgt])
    with torch.no_grad():
        right = model(src_ids, lengths, tgt_in)
        got = context_logits(model, src_ids, lengths, tgt_in)
    assert isinstance(got, torch.Tensor) and got.shape == right.shape, \
        f"expected logits of shape {tuple(right.shape)}"
    assert torch.allclose(got, right, atol=1e-5), "the logits are not those of form (C)"


@spec.hidden("ch4-ex-context-decoder", points=1)
def form_c_with_two_layers(context_logits):
    import torch
    from seqbook.seq2seq import Seq2Seq
    from seqbook.translation import pad
    model = Seq2Seq(8, 9, embed_size=4, hidden_size=6, num_layers=2, cell="lstm", feed_context=True,
                    seed=44)
    src_ids, lengths = pad([[4, 5, 6, 7], [5, 6]]), torch.tensor([4, 2])
    tgt_in = pad([[1, 4, 5], [1, 6]])
    with torch.no_grad():
        right = model(src_ids, lengths, tgt_in)
        got = context_logits(model, src_ids, lengths, tgt_in)
    assert torch.allclose(got, right, atol=1e-5), "with two layers, v is the top layer's h"


spec.auto("ch4-ex-bpe", written=2)


@spec.hidden("ch4-ex-bpe", points=1)
def the_first_three_merges(first_merges):
    counts = {"chat": 5, "chats": 2, "chien": 3, "rat": 1}
    words = {w: list(w) + ["</w>"] for w in counts}
    right = []
    for _ in range(3):
        pairs = {}
        for w, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] = pairs.get(pair, 0) + counts[w]
        best = min(pairs, key=lambda p: (-pairs[p], p))
        right.append(best)
        for w, symbols in words.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            words[w] = out
    assert [tuple(p) for p in first_merges] == right, f"{first_merges!r} are not the first three merges"


@spec.hidden("ch4-ex-bpe", points=2)
def the_encoder_on_new_words(encode_word):
    cases = {("banana", (("a", "n"), ("an", "a"), ("b", "an"))): ["ban", "ana", "</w>"],
             ("aaaa", (("a", "a"), ("aa", "a"))): ["aa", "aa", "</w>"],
             ("ends", (("s", "</w>"), ("d", "s</w>"))): ["e", "n", "ds</w>"],
             ("xyz", ()): ["x", "y", "z", "</w>"]}
    for (word, merges), right in cases.items():
        got = list(encode_word(word, [tuple(m) for m in merges]))
        assert got == right, f"{word!r} with merges {merges}: expected {right}, got {got}"
