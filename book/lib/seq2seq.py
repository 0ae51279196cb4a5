"""Sequence to sequence: an encoder reads the source into a vector, a decoder writes the target from it.

The encoder is an embedding and a GRU or LSTM; its final state is the *only* thing the decoder
learns about the source (Sutskever et al. 2014, Cho et al. 2014). The decoder starts from that
state and, as Cho et al. do, also reads the encoder's final top-layer hidden state (the
*context*) alongside every input token, so the source is not forgotten as the decoder runs.
``reverse_source=True`` feeds the source backwards (Sutskever et al.'s trick), in training and
in decoding alike.

Any model with ``start(src, src_lengths) -> state`` and ``step(tokens, state) -> (logits, state)``
can be decoded in batches by :func:`greedy_batch` and scored by :func:`translation_bleu`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from . import checks
from .bleu import BleuScore, corpus_bleu
from .device import pick_device
from .progress import progress
from .seeding import generator, seeded
from .training import clip_by_global_norm
from .translation import BOS, EOS, PAD, Batch, SentencePair, TranslationVocab, pad

_CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}


def reverse_padded(src: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row's first ``lengths[b]`` tokens in reverse order; the padding stays on the right."""
    positions = torch.arange(src.shape[1], device=src.device)[None, :]
    lengths = lengths.to(src.device)[:, None]
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)
    return src.gather(1, index)


def check_vocab_sizes(**sizes) -> None:
    """Every vocabulary size must be an integer above the special ids (which come first)."""
    for name, value in sizes.items():
        checks.integer(value, name, EOS + 1, note="the special tokens come first")


def check_source(src: torch.Tensor, src_lengths: torch.Tensor) -> None:
    """A padded batch of source ids (batch, src_len) and its lengths (batch,), each in 1..src_len."""
    checks.padded_batch(src, src_lengths, "src")


class StepwiseTranslator:
    """What every model that decodes one token at a time gets from two methods of its own,
    ``start(src, src_lengths) -> state`` and ``step(tokens, state) -> (logits, state)``, where a
    state has ``select(rows)`` and a static ``cat(states)``: scheduled sampling and the cached
    ``next_log_probs`` function of :mod:`seqbook.decoding`. (Chapter 4's :class:`Seq2Seq` and
    chapter 5's attention model share it.)"""

    def one_source(self, src_ids) -> torch.Tensor:
        """One sentence's ids (a list or 1-d tensor) as a (1, src_len) tensor on the model's device."""
        src_ids = checks.as_token_ids(src_ids, "src_ids (one sentence)", 1)
        return src_ids.to(next(self.parameters()).device)[None]

    def forward_scheduled(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor,
                          teacher_forcing: float, gen: torch.Generator) -> torch.Tensor:
        """Logits like ``forward``, but at each step t > 0 each sentence reads the gold token with
        probability ``teacher_forcing`` and otherwise the argmax of its own previous prediction
        (Bengio et al. 2015). The coins come from ``gen``, a CPU generator. No gradient flows
        through the argmax."""
        checks.token_ids(tgt_in, "tgt_in", 2)
        checks.number(teacher_forcing, "teacher_forcing", at_least=0, at_most=1)
        state = self.start(src, src_lengths)
        tokens, steps = tgt_in[:, 0], []
        for t in range(tgt_in.shape[1]):
            if t > 0:
                gold = torch.rand(tgt_in.shape[0], generator=gen) < teacher_forcing
                tokens = torch.where(gold.to(tgt_in.device), tgt_in[:, t], steps[-1].argmax(-1))
            logits, state = self.step(tokens, state)
            steps.append(logits)
        return torch.stack(steps, dim=1)

    @torch.no_grad()
    def next_log_probs_fn(self, src_ids) -> Callable[[torch.Tensor], torch.Tensor]:
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


class Encoder(nn.Module):
    """Token ids (batch, src_len) -> outputs (batch, src_len, d_h) and the final state.

    The padded batch is *packed*, so each sentence's final state is taken at its own last token
    and padding never enters the recurrence. The state is ``h`` (layers, batch, d_h) for a GRU,
    ``(h, c)`` for an LSTM; outputs at padded positions are zero."""

    def __init__(self, vocab_size: int, embed_size: int, hidden_size: int, num_layers: int = 1, cell: str = "gru"):
        super().__init__()
        checks.one_of(cell, _CELLS, "cell")
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.rnn = _CELLS[cell](embed_size, hidden_size, num_layers, batch_first=True)

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor):
        packed = pack_padded_sequence(self.embedding(src), src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        outputs, state = self.rnn(packed)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True, total_length=src.shape[1])
        return outputs, state


class DecoderState(NamedTuple):
    """The decoder's recurrent state (``h``, or ``(h, c)`` for an LSTM; batch on dim 1) and the
    fixed context vector it reads at every step (batch, d_h)."""

    hidden: torch.Tensor | tuple[torch.Tensor, torch.Tensor]
    context: torch.Tensor

    def select(self, rows) -> "DecoderState":
        """The state of the given batch rows (a list or tensor of indices)."""
        pick = (lambda h: h[:, rows])
        hidden = tuple(map(pick, self.hidden)) if isinstance(self.hidden, tuple) else pick(self.hidden)
        return DecoderState(hidden, self.context[rows])

    @staticmethod
    def cat(states: Sequence["DecoderState"]) -> "DecoderState":
        """Stack states of single sentences (or small batches) along the batch."""
        first = states[0].hidden
        if isinstance(first, tuple):
            hidden = tuple(torch.cat([s.hidden[i] for s in states], 1) for i in range(len(first)))
        else:
            hidden = torch.cat([s.hidden for s in states], 1)
        return DecoderState(hidden, torch.cat([s.context for s in states]))


class Decoder(nn.Module):
    """Previous target tokens (batch, t) and a state -> next-token logits (batch, t, |V_tgt|).

    Each input is the token's embedding, concatenated with the context vector when
    ``feed_context`` (Cho et al. 2014)."""

    def __init__(self, vocab_size: int, embed_size: int, hidden_size: int, num_layers: int = 1,
                 cell: str = "gru", feed_context: bool = True):
        super().__init__()
        checks.one_of(cell, _CELLS, "cell")
        self.feed_context = feed_context
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.rnn = _CELLS[cell](embed_size + hidden_size * feed_context, hidden_size, num_layers, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens: torch.Tensor, state: DecoderState):
        """tokens (batch, t) -> logits (batch, t, |V_tgt|) and the state after them."""
        x = self.embedding(tokens)                   # E_y[y_{j-1}]: (batch, t, d)
        if self.feed_context:                        # [E_y[y_{j-1}]; v] (Cho et al.)
            context = state.context[:, None, :].expand(-1, x.shape[1], -1)
            x = torch.cat([x, context], dim=-1)      # (batch, t, d + d_h)
        outputs, hidden = self.rnn(x, state.hidden)  # s_j: (batch, t, d_h)
        return self.out(outputs), DecoderState(hidden, state.context)


class Seq2Seq(StepwiseTranslator, nn.Module):
    """Encoder-decoder translation model (the interface of chapters 4-6).

    - ``forward(src, src_lengths, tgt_in) -> logits`` (batch, tgt_len, |V_tgt|), teacher forcing;
    - ``forward_scheduled(..., teacher_forcing, gen)``: each step reads the gold token with
      probability ``teacher_forcing``, else the model's own previous prediction (scheduled sampling);
    - ``start``/``step``: one decoder step at a time (batched greedy decoding);
    - ``next_log_probs_fn(src_ids)`` for :mod:`seqbook.decoding`.
    Parameters get PyTorch's default initialisation, drawn from ``seed`` (None: from PyTorch's
    global generator).
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_size: int = 64, hidden_size: int = 128,
                 num_layers: int = 1, cell: str = "gru", reverse_source: bool = False, feed_context: bool = True,
                 seed: int | None = None):
        super().__init__()
        check_vocab_sizes(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)
        self.reverse_source = reverse_source
        self.tgt_vocab_size = tgt_vocab_size
        with seeded(seed):
            self.encoder = Encoder(src_vocab_size, embed_size, hidden_size, num_layers, cell)
            self.decoder = Decoder(tgt_vocab_size, embed_size, hidden_size, num_layers, cell, feed_context)

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor) -> DecoderState:
        """Encode the source: the decoder's initial state (the encoder's final state)
        and the context."""
        check_source(src, src_lengths)
        if self.reverse_source:                       # Sutskever et al.: x_T, ..., x_1
            src = reverse_padded(src, src_lengths)
        _, hidden = self.encoder(src, src_lengths)    # (layers, batch, d_h), or (h, c)
        top = hidden[0][-1] if isinstance(hidden, tuple) else hidden[-1]  # v: top h
        return DecoderState(hidden, top)              # s_0 = the encoder's final state

    def step(self, tokens: torch.Tensor, state: DecoderState):
        """One decoder step: tokens (batch,) -> logits (batch, |V_tgt|) and the next state."""
        logits, state = self.decoder(tokens[:, None], state)
        return logits[:, 0], state

    def forward(self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        checks.token_ids(tgt_in, "tgt_in", 2)
        logits, _ = self.decoder(tgt_in, self.start(src, src_lengths))
        return logits


def masked_cross_entropy(logits: torch.Tensor, targets: torch.Tensor,
                         pad: int = PAD) -> torch.Tensor:
    """Mean cross-entropy (nats per token) over the target positions that are not
    ``pad``.

    logits (batch, time, |V|), targets (batch, time)."""
    checks.logits_and_targets(logits, targets, ignore=pad)
    flat_logits = logits.reshape(-1, logits.shape[-1]).float()   # (batch * time, |V|)
    return F.cross_entropy(flat_logits, targets.reshape(-1), ignore_index=pad)


@dataclass
class TranslationHistory:
    """What happened during :func:`train_translation`, one entry per step (validation: per evaluation)."""

    loss: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    teacher_forcing: list[float] = field(default_factory=list)
    wall_time: list[float] = field(default_factory=list)
    val_step: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_score: list[float] = field(default_factory=list)  # what ``evaluate(model)`` returned, e.g. BLEU


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


def train_translation(model: nn.Module, batches: Sequence[Batch], steps: int, *, lr: float = 3e-3,
                      clip: float | None = 1.0, teacher_forcing: float | Callable[[int], float] = 1.0,
                      seed: int = 0, device=None, valid_batches: Sequence[Batch] | None = None,
                      eval_every: int | None = None, evaluate: Callable[[nn.Module], float] | None = None,
                      desc: str = "training") -> TranslationHistory:
    """Train with Adam on ``batches`` (visited in a new seeded order every epoch) for ``steps`` steps.

    ``teacher_forcing`` is the probability of feeding the gold token (1: plain teacher forcing),
    or a function of the step number giving it (a scheduled-sampling decay). After the last step,
    and every ``eval_every`` steps if given, the history records the loss on ``valid_batches``
    and ``evaluate(model)`` (e.g. a validation BLEU), when given. Evaluation time is not counted
    in ``wall_time``."""
    checks.positive_int(steps, "steps")
    if len(batches) == 0 or not all(isinstance(b, Batch) for b in batches):
        raise ValueError("expected a non-empty list of seqbook.translation.Batch (see make_batches)")
    ratio_at = teacher_forcing if callable(teacher_forcing) else (lambda step: teacher_forcing)
    device = torch.device(device) if device is not None else pick_device()
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = generator(seed)
    history, order, elapsed = TranslationHistory(), [], 0.0
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
        loss = masked_cross_entropy(logits, b.tgt_out)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = clip_by_global_norm(model.parameters(), clip)
        opt.step()
        elapsed += time.perf_counter() - tic
        history.loss.append(loss.item())
        history.grad_norm.append(norm)
        history.teacher_forcing.append(ratio)
        history.wall_time.append(elapsed)
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
def greedy_batch(model: nn.Module, src: torch.Tensor, src_lengths: torch.Tensor, max_len: int) -> list[list[int]]:
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


def translate(model: nn.Module, sentences: Sequence[Sequence[str]], src_vocab: TranslationVocab,
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


def translation_bleu(model: nn.Module, pairs: Sequence[SentencePair], src_vocab: TranslationVocab,
                     tgt_vocab: TranslationVocab, batch_size: int = 256) -> BleuScore:
    """Corpus BLEU of the model's greedy translations of ``pairs`` against their targets."""
    hypotheses = translate(model, [p.src for p in pairs], src_vocab, tgt_vocab, batch_size)
    return corpus_bleu(hypotheses, [list(p.tgt) for p in pairs])
