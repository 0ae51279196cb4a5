"""What every translation model of chapters 4-6 shares: the stepwise-decoding contract and the
toolkit built on it.

A translator (:class:`seqbook.interfaces.Translator`) has ``forward(src, src_lengths, tgt_in) ->
logits`` for teacher forcing and two methods for decoding one token at a time, ``start(src,
src_lengths) -> state`` and ``step(tokens, state) -> (logits, state)``, where the state has
``select(rows)`` and a static ``cat(states)`` (:class:`seqbook.interfaces.DecoderState`).
:class:`StepwiseTranslator` turns those two into scheduled sampling and the cached
``next_log_probs`` of :mod:`seqbook.decoding`; the functions below train any translator
(:func:`train_translation`, with the masked loss, label smoothing and any learning-rate
schedule), decode whole batches greedily
(:func:`greedy_batch`, :func:`translate`) and score them (:func:`translation_bleu`).
Chapter 4's :class:`seqbook.seq2seq.Seq2Seq`, chapter 5's
:class:`seqbook.attention_model.AttentionSeq2Seq` and chapter 6's
:class:`seqbook.transformer.Transformer` all use it.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from . import checks
from .bleu import BleuScore, corpus_bleu
from .decoding import beam_search
from .device import pick_device
from .interfaces import NextLogProbs, Translator
from .progress import progress
from .seeding import generator
from .training import History, clip_by_global_norm
from .translation import BOS, EOS, PAD, Batch, SentencePair, TranslationVocab, pad


def check_vocab_sizes(**sizes) -> None:
    """Every vocabulary size must be an integer above the special ids (which come first)."""
    for name, value in sizes.items():
        checks.integer(value, name, EOS + 1, note="the special tokens come first")


def check_source(src: torch.Tensor, src_lengths: torch.Tensor) -> None:
    """A padded batch of source ids (batch, src_len) and its lengths (batch,), each in 1..src_len."""
    checks.padded_batch(src, src_lengths, "src")


def _check_scheduled_arguments(tgt_in, teacher_forcing) -> None:
    """``tgt_in`` a (batch, m) tensor of token ids; ``teacher_forcing`` a probability."""
    checks.token_ids(tgt_in, "tgt_in", 2)
    checks.number(teacher_forcing, "teacher_forcing", at_least=0, at_most=1)


class StepwiseTranslator:
    """What every model that decodes one token at a time gets from two methods of its own,
    ``start(src, src_lengths) -> state`` and ``step(tokens, state) -> (logits, state)``, where a
    state has ``select(rows)`` and a static ``cat(states)``: scheduled sampling and the cached
    ``next_log_probs`` function of :mod:`seqbook.decoding`. (Chapter 4's ``Seq2Seq``, chapter 5's
    ``AttentionSeq2Seq`` and chapter 6's ``Transformer`` share it.)"""

    def one_source(self, src_ids) -> torch.Tensor:
        """One sentence's ids (a list or 1-d tensor) as a (1, src_len) tensor on the model's device."""
        src_ids = checks.as_token_ids(src_ids, "src_ids (one sentence)", 1)
        return src_ids.to(next(self.parameters()).device)[None]

    def forward_scheduled(self, src: torch.Tensor, src_lengths: torch.Tensor,
                          tgt_in: torch.Tensor, teacher_forcing: float,
                          gen: torch.Generator) -> torch.Tensor:
        """Logits like ``forward``, but at each step t > 0 each sentence reads the
        gold token with probability ``teacher_forcing`` and otherwise the argmax of
        its own previous prediction (Bengio et al. 2015). The coins come from
        ``gen``, a CPU generator. No gradient flows through the argmax."""
        _check_scheduled_arguments(tgt_in, teacher_forcing)
        state = self.start(src, src_lengths)
        tokens, steps = tgt_in[:, 0], []
        for t in range(tgt_in.shape[1]):
            if t > 0:   # one coin per sentence at this position
                gold = torch.rand(tgt_in.shape[0], generator=gen) < teacher_forcing
                own = steps[-1].argmax(-1)
                tokens = torch.where(gold.to(tgt_in.device), tgt_in[:, t], own)
            logits, state = self.step(tokens, state)
            steps.append(logits)
        return torch.stack(steps, dim=1)

    @torch.no_grad()
    def next_log_probs_fn(self, src_ids) -> NextLogProbs:
        """``next_log_probs(prefixes (k, t)) -> (k, |V_tgt|)`` for one source sentence.

        The decoder state after each prefix is cached (keyed by the prefix's ids), so a call
        only runs one decoder step from each new prefix's parent, as decoding extends prefixes
        one token at a time. Put the model in ``eval()`` mode first if it has dropout."""
        src = self.one_source(src_ids)
        root = self.start(src, torch.tensor([src.shape[1]]))
        cache: dict[tuple[int, ...], tuple] = {(): (root, None)}

        def extend(prefixes: list[tuple[int, ...]]) -> None:
            """Run one decoder step from the cached parents of ``prefixes`` (all of one length)."""
            parents = type(root).cat([cache[p[:-1]][0] for p in prefixes])
            tokens = torch.tensor([p[-1] for p in prefixes], device=src.device)
            logits, states = self.step(tokens, parents)
            log_probs = F.log_softmax(logits.float(), dim=-1)
            for row, p in enumerate(prefixes):
                cache[p] = (states.select([row]), log_probs[row:row + 1])

        @torch.no_grad()
        def next_log_probs(prefixes: torch.Tensor) -> torch.Tensor:
            checks.token_ids(prefixes, "prefixes (ids starting with <bos>)", 2)
            keys = [tuple(row) for row in prefixes.tolist()]
            missing = sorted({k[:n] for k in keys for n in range(1, len(k) + 1)} - cache.keys())
            for length in sorted({len(k) for k in missing}):  # parents before children
                extend([k for k in missing if len(k) == length])
            return torch.cat([cache[k][1] for k in keys])

        return next_log_probs


def masked_cross_entropy(logits: torch.Tensor, targets: torch.Tensor,
                         pad: int = PAD) -> torch.Tensor:
    """Mean cross-entropy (nats per token) over the target positions that are not
    ``pad``.

    logits (batch, time, |V|), targets (batch, time)."""
    checks.logits_and_targets(logits, targets, ignore=pad)
    flat_logits = logits.reshape(-1, logits.shape[-1]).float()   # (batch * time, |V|)
    return F.cross_entropy(flat_logits, targets.reshape(-1), ignore_index=pad)


def smoothed_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, epsilon: float,
                           pad: int = PAD) -> torch.Tensor:
    """Cross-entropy against a *smoothed* target (Szegedy et al. 2016; Vaswani et al. 2017 use
    ``epsilon = 0.1``): the right token gets probability ``1 - epsilon`` and the other
    ``epsilon`` is spread evenly over the whole vocabulary, so per target position

        loss = (1 - epsilon) * (-log p[y]) + epsilon * mean over v of (-log p[v]).

    The mean over the positions that are not ``pad``; ``epsilon = 0`` is
    :func:`masked_cross_entropy`. The same as PyTorch's ``F.cross_entropy(...,
    label_smoothing=epsilon, ignore_index=pad)``. logits (batch, time, |V|), targets (batch, time)."""
    epsilon = checks.number(epsilon, "label smoothing epsilon", at_least=0, below=1)
    checks.logits_and_targets(logits, targets, ignore=pad)
    log_p = F.log_softmax(logits.reshape(-1, logits.shape[-1]).float(), dim=-1)  # (N, |V|)
    targets = targets.reshape(-1)
    real = targets != pad
    right = -log_p[real].gather(1, targets[real, None])[:, 0]   # -log p[y], per real position
    uniform = -log_p[real].mean(dim=1)                           # mean over v of -log p[v]
    return ((1 - epsilon) * right + epsilon * uniform).mean()


@torch.no_grad()
def batch_loss(model: nn.Module, batches: Sequence[Batch], device=None) -> float:
    """Teacher-forced cross-entropy per target token over ``batches``."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    total = count = 0
    for b in batches:
        b = b.to(device)
        n = int((b.tgt_out != PAD).sum())
        total += float(masked_cross_entropy(model(b.src, b.src_lengths, b.tgt_in), b.tgt_out)) * n
        count += n
    model.train(was_training)
    return total / count


def train_translation(model: nn.Module, batches: Sequence[Batch], steps: int, *,
                      lr: float | Callable[[int], float] = 3e-3, clip: float | None = 1.0,
                      teacher_forcing: float | Callable[[int], float] = 1.0, label_smoothing: float = 0.0,
                      betas: tuple[float, float] = (0.9, 0.999), seed: int = 0, device=None,
                      valid_batches: Sequence[Batch] | None = None, eval_every: int | None = None,
                      evaluate: Callable[[nn.Module], float] | None = None,
                      stop_on_divergence: bool = True, desc: str = "training") -> History:
    """Train ``model`` (a :class:`seqbook.interfaces.Translator`) with Adam on ``batches`` (visited
    in a new seeded order every epoch) for ``steps`` steps; returns a :class:`seqbook.training.History`.

    ``lr`` is a learning rate, or a schedule: a function of the step number 1, 2, ... giving it
    (e.g. :class:`seqbook.schedules.WarmupInverseSqrt`); ``history.learning_rate`` records the
    rate of every step. ``label_smoothing`` is the epsilon of :func:`smoothed_cross_entropy` (0:
    plain cross-entropy); ``history.loss`` is the loss that was minimised. ``betas`` are Adam's.
    ``teacher_forcing`` is the probability of feeding the gold token (1: plain teacher forcing),
    or a function of the step number giving it (a scheduled-sampling decay). After the last step,
    and every ``eval_every`` steps if given, the history records the loss on ``valid_batches``
    and ``evaluate(model)`` (e.g. a validation BLEU), when given. Evaluation time is not counted
    in ``wall_time``. A step whose loss or gradient norm is not finite is recorded in
    ``diverged_at`` and not applied; training stops there unless ``stop_on_divergence=False``."""
    checks.positive_int(steps, "steps")
    if len(batches) == 0 or not all(isinstance(b, Batch) for b in batches):
        raise ValueError("expected a non-empty list of seqbook.translation.Batch (see make_batches)")
    ratio_at = teacher_forcing if callable(teacher_forcing) else (lambda step: teacher_forcing)
    rate_at = lr if callable(lr) else (lambda step: lr)
    epsilon = checks.number(label_smoothing, "label_smoothing", at_least=0, below=1)
    device = torch.device(device) if device is not None else pick_device()
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=float(rate_at(1)), betas=betas)
    gen = generator(seed)
    history, order, elapsed = History(), [], 0.0
    bar = progress(range(steps), desc=desc)
    for step in bar:
        tic = time.perf_counter()
        if not order:
            order = torch.randperm(len(batches), generator=gen).tolist()
        b = batches[order.pop()].to(device)
        ratio = float(ratio_at(step))
        if ratio >= 1.0:
            logits = model(b.src, b.src_lengths, b.tgt_in)
        else:
            logits = model.forward_scheduled(b.src, b.src_lengths, b.tgt_in, ratio, gen)
        if epsilon > 0:
            loss = smoothed_cross_entropy(logits, b.tgt_out, epsilon)
        else:
            loss = masked_cross_entropy(logits, b.tgt_out)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = clip_by_global_norm(model.parameters(), clip)
        value = loss.item()
        finite = math.isfinite(value) and math.isfinite(norm)
        rate = float(rate_at(step + 1))
        if finite:
            for group in opt.param_groups:
                group["lr"] = rate
            opt.step()
        elapsed += time.perf_counter() - tic
        history.loss.append(value)
        history.grad_norm.append(norm)
        history.teacher_forcing.append(ratio)
        history.learning_rate.append(rate)
        history.wall_time.append(elapsed)
        history.clipped += int(clip is not None and norm > clip)
        if not finite and history.diverged_at is None:
            history.diverged_at = step
            if stop_on_divergence:
                break
        if step % 10 == 0:
            bar.set_postfix(loss=f"{history.loss[-1]:.3f}")
        if (valid_batches or evaluate) and (step == steps - 1 or (eval_every and (step + 1) % eval_every == 0)):
            history.val_step.append(step + 1)
            if valid_batches:
                history.val_loss.append(batch_loss(model, valid_batches, device))
            if evaluate:
                history.val_score.append(float(evaluate(model)))
                model.train()
    return history


@torch.no_grad()
def greedy_batch(model: Translator, src: torch.Tensor, src_lengths: torch.Tensor, max_len: int) -> list[list[int]]:
    """Greedy decoding of a whole batch at once: for each sentence the token ids up to and
    including the first ``<eos>`` (or ``max_len`` ids). Gives the same tokens as
    ``decoding.greedy`` on each sentence, in one pass over the batch."""
    state = model.start(src, src_lengths)
    tokens = torch.full((src.shape[0],), BOS, dtype=torch.int64, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    out = []
    for _ in range(max_len):
        logits, state = model.step(tokens, state)
        tokens = logits.argmax(-1)
        out.append(tokens)
        done |= tokens == EOS
        if done.all():
            break
    rows = torch.stack(out, dim=1).tolist()
    return [row[:row.index(EOS) + 1] if EOS in row else row for row in rows]


def translate(model: Translator, sentences: Sequence[Sequence[str]], src_vocab: TranslationVocab,
              tgt_vocab: TranslationVocab, batch_size: int = 256, max_len: int | None = None) -> list[list[str]]:
    """Greedy translations (token lists, without ``<eos>``) of source token lists, in their order.
    ``max_len`` defaults to twice the longest source plus 10."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    results = []
    for i in range(0, len(sentences), batch_size):
        ids = [src_vocab.encode(s) for s in sentences[i:i + batch_size]]
        lengths = torch.tensor([len(s) for s in ids])
        limit = max_len or 2 * int(lengths.max()) + 10
        for row in greedy_batch(model, pad(ids).to(device), lengths.to(device), limit):
            results.append(tgt_vocab.decode(row))
    model.train(was_training)
    return results


def translate_beam(model: Translator, sentences: Sequence[Sequence[str]], src_vocab: TranslationVocab,
                   tgt_vocab: TranslationVocab, beam_size: int = 4, length_penalty: float = 0.0,
                   max_len: int | None = None) -> list[list[str]]:
    """Beam-search translations (token lists, without ``<eos>``) of source token lists, one
    sentence at a time: :func:`seqbook.decoding.beam_search` over the model's
    ``next_log_probs_fn``, keeping the best hypothesis. ``beam_size=1`` gives :func:`translate`'s
    greedy tokens. ``max_len`` defaults to twice the sentence's length plus 10."""
    was_training = model.training
    model.eval()
    results = []
    for sentence in sentences:
        ids = src_vocab.encode(sentence)
        best = beam_search(model.next_log_probs_fn(ids), BOS, EOS, beam_size,
                           max_len or 2 * len(ids) + 10, length_penalty)[0]
        results.append(tgt_vocab.decode(best.tokens))
    model.train(was_training)
    return results


def translation_bleu(model: Translator, pairs: Sequence[SentencePair], src_vocab: TranslationVocab,
                     tgt_vocab: TranslationVocab, batch_size: int = 256) -> BleuScore:
    """Corpus BLEU of the model's greedy translations of ``pairs`` against their targets."""
    hypotheses = translate(model, [p.src for p in pairs], src_vocab, tgt_vocab, batch_size)
    return corpus_bleu(hypotheses, [list(p.tgt) for p in pairs])
