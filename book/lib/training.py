"""Training and evaluating language models on one long stream of token ids.

The stream is cut into ``batch_size`` contiguous streams read side by side, ``seq_len`` tokens
at a time. The recurrent state at the end of one chunk starts the next chunk, detached from the
graph (truncated backpropagation through time): the model still *sees* the whole past through
its state, but gradients only flow back within a chunk. Every step predicts each next token
from the ones before it (teacher forcing), clips the gradient by its global norm and records
the loss, the gradient norm before clipping and the time.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from . import checks
from .device import pick_device
from .progress import progress
from .seeding import generator


def detach_state(state):
    """``state`` cut from the graph that produced it: a tensor, or a tuple/list of them, or None.

    Truncated backpropagation through time detaches the state between chunks, so the next
    chunk starts from the same values but the gradient stops there."""
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    if isinstance(state, (tuple, list)):
        return type(state)(detach_state(s) for s in state)
    raise TypeError(f"expected a recurrent state as a tensor, a tuple/list of tensors or None, "
                    f"got {type(state).__name__}")



def as_ids(ids, what: str = "ids") -> torch.Tensor:
    """A 1-d int64 tensor of token ids from a list or tensor, or a clear error."""
    return checks.as_token_ids(ids, what, 1, allow_empty=True)


def streams(ids: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Cut a 1-d stream into ``batch_size`` contiguous rows (the tail that does not fit is dropped):
    shape (batch_size, len(ids) // batch_size). Row ``b`` continues where row ``b - 1`` ends."""
    ids = as_ids(ids)
    checks.positive_int(batch_size, "batch_size")
    n = ids.numel() // batch_size
    if n < 2:
        raise ValueError(f"expected at least {2 * batch_size} ids for {batch_size} streams, got {ids.numel()}")
    return ids[: n * batch_size].reshape(batch_size, n)


def chunks(rows: torch.Tensor, seq_len: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Consecutive ``(inputs, targets)`` pairs, each (batch, <= seq_len), targets shifted by one:
    ``targets[:, t]`` is the token after ``inputs[:, t]``."""
    checks.positive_int(seq_len, "seq_len")
    for start in range(0, rows.shape[1] - 1, seq_len):
        end = min(start + seq_len, rows.shape[1] - 1)
        yield rows[:, start:end], rows[:, start + 1:end + 1]


def global_grad_norm(parameters: Iterable[nn.Parameter]) -> float:
    """``sqrt(sum of every squared gradient entry)`` over all parameters that have a gradient."""
    grads = [p.grad.detach() for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    return float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))


def clip_by_global_norm(parameters: Iterable[nn.Parameter], max_norm: float | None) -> float:
    """Scale all gradients together by ``max_norm / norm`` when their global norm exceeds ``max_norm``.

    The direction of the full gradient is kept; only its length is capped. Returns the norm
    before clipping (as ``torch.nn.utils.clip_grad_norm_`` does). ``max_norm=None`` only measures."""
    parameters = [p for p in parameters if p.grad is not None]
    norm = global_grad_norm(parameters)
    if max_norm is not None:
        checks.number(max_norm, "max_norm", above=0, note="or None for no clipping")
        if math.isfinite(norm) and norm > max_norm:
            scale = max_norm / (norm + 1e-6)
            for p in parameters:
                p.grad.mul_(scale)
    return norm


def _device_of(model: nn.Module) -> torch.device:
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


@torch.no_grad()
def mean_nll(model: nn.Module, ids, seq_len: int = 256, n_streams: int = 1) -> tuple[float, int]:
    """Average negative log-likelihood (nats per token) of ``ids`` under ``model``, and how many
    tokens it scored.

    The text is read as ``n_streams`` contiguous streams; the state is carried across chunks, so
    each prediction conditions on everything before it in its stream. With ``n_streams=1`` every
    token but the first is scored, given all the tokens before it."""
    ids = as_ids(ids)
    checks.positive_int(n_streams, "n_streams")
    n = (ids.numel() - 1) // n_streams
    if n < 1:
        raise ValueError(f"expected at least {n_streams + 1} ids for {n_streams} streams, got {ids.numel()}")
    # Streams overlap by one token, so stream b's first target is the token after stream b-1's last.
    rows = torch.stack([ids[b * n: b * n + n + 1] for b in range(n_streams)])
    device = _device_of(model)
    was_training = model.training
    model.eval()
    total, count, state = 0.0, 0, None
    for X, Y in chunks(rows.to(device), seq_len):
        logits, state = model(X, state)
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), Y.reshape(-1), reduction="sum"))
        count += Y.numel()
    model.train(was_training)
    return total / count, count


def perplexity(model: nn.Module, ids, seq_len: int = 256, n_streams: int = 1) -> float:
    """``exp(mean_nll)``: the model's held-out perplexity on ``ids`` (see :func:`mean_nll`)."""
    return math.exp(mean_nll(model, ids, seq_len, n_streams)[0])


@dataclass
class History:
    """What happened during a training loop (:func:`train_lm`, and chapter 4's
    :func:`seqbook.translator.train_translation`), one entry per optimisation step; the
    validation lists have one entry per evaluation. A trainer fills the lists it measures."""

    loss: list[float] = field(default_factory=list)          # training loss (nats per token)
    grad_norm: list[float] = field(default_factory=list)     # global gradient norm before clipping
    wall_time: list[float] = field(default_factory=list)     # seconds of training so far (evaluation excluded)
    teacher_forcing: list[float] = field(default_factory=list)  # share of gold inputs (translation)
    learning_rate: list[float] = field(default_factory=list)    # the rate of each step (translation)
    val_step: list[int] = field(default_factory=list)        # steps after which validation ran
    val_perplexity: list[float] = field(default_factory=list)   # language models
    val_loss: list[float] = field(default_factory=list)      # translation: teacher-forced loss
    val_score: list[float] = field(default_factory=list)     # translation: what ``evaluate(model)`` gave
    clipped: int = 0                                         # steps whose gradient was clipped
    diverged_at: int | None = None                           # first step with a non-finite loss or norm
    best_step: int | None = None                             # the evaluation with the lowest val_perplexity
    stopped_early_at: int | None = None                      # the step after which patience ran out

    @property
    def steps(self) -> int:
        return len(self.loss)


OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}


def _make_optimizer(name: str, params, lr: float):
    return OPTIMIZERS[checks.one_of(name, OPTIMIZERS, "optimizer")](params, lr=lr)


def _carry_state(carry_state: bool, truncated: bool | None) -> bool:
    """``carry_state``, or the value of its deprecated old name ``truncated`` when that is given."""
    if truncated is None:
        return bool(carry_state)
    warnings.warn("train_lm(truncated=...) is deprecated: use carry_state=... (the same meaning: "
                  "True carries the detached state across chunks, False starts each from zeros)",
                  FutureWarning, stacklevel=3)
    if not carry_state and truncated:
        raise ValueError("expected one of carry_state= and its deprecated name truncated=, "
                         "got carry_state=False and truncated=True")
    return bool(truncated)


def train_lm(model: nn.Module, train_ids, steps: int, *, batch_size: int = 32, seq_len: int = 64,
             lr: float = 2e-3, optimizer: str = "adam", clip: float | None = 1.0, carry_state: bool = True,
             truncated: bool | None = None, val_ids=None, eval_every: int | None = None,
             eval_tokens: int | None = 20_000, seed: int = 0,
             device: torch.device | str | None = None, stop_on_divergence: bool = True,
             keep_best: bool = False, patience: int | None = None,
             desc: str = "training") -> History:
    """Train ``model`` (``model(tokens, state) -> (logits, state)``) for ``steps`` steps.

    - teacher forcing: the loss is the mean cross-entropy of every next token given the true ones;
    - ``clip``: the largest global gradient norm allowed (None: no clipping);
    - ``carry_state=True`` carries the detached state from chunk to chunk (truncated BPTT);
      False starts every chunk from a zero state (the model then never sees further back than
      ``seq_len``). ``truncated=`` is its deprecated old name, with the same meaning; it warns;
    - every epoch starts at a random offset (from ``seed``) so chunk boundaries move;
    - ``val_ids``: perplexity on the first ``eval_tokens`` validation ids (all of them if None)
      after the last step, and every ``eval_every`` steps if given;
    - early stopping: ``patience=k`` stops after ``k`` evaluations in a row without a new lowest
      validation perplexity (``history.stopped_early_at``), and ``keep_best=True`` hands back the
      model as it was at its best evaluation (``history.best_step``), not as it ended.
    A step whose loss or gradient norm is not finite is recorded in ``diverged_at``; training
    stops there unless ``stop_on_divergence=False``.
    """
    checks.positive_ints(steps=steps, batch_size=batch_size, seq_len=seq_len)
    carry_state = _carry_state(carry_state, truncated)
    _check_early_stopping(val_ids, eval_every, keep_best, patience)
    train_ids = as_ids(train_ids, "train_ids")
    if train_ids.numel() < batch_size * (seq_len + 1) + seq_len:
        raise ValueError(f"expected at least {batch_size * (seq_len + 1) + seq_len} training ids for "
                         f"batch_size={batch_size} and seq_len={seq_len}, got {train_ids.numel()}")
    if val_ids is not None:
        val_ids = as_ids(val_ids, "val_ids")
        if eval_tokens is not None:
            val_ids = val_ids[:eval_tokens]
    device = torch.device(device) if device is not None else pick_device()
    model.to(device)
    model.train()
    opt = _make_optimizer(optimizer, model.parameters(), lr)
    gen = generator(seed)
    history = History()
    batches: Iterator = iter(())
    state, elapsed = None, 0.0
    best = _Best()
    bar = progress(range(steps), desc=desc)
    for step in bar:
        tic = time.perf_counter()
        batch = next(batches, None)
        if batch is None:  # a new epoch: new offset, fresh state
            offset = int(torch.randint(seq_len, (1,), generator=gen))
            batches = chunks(streams(train_ids[offset:], batch_size).to(device), seq_len)
            batch, state = next(batches), None
        X, Y = batch
        state = detach_state(state) if carry_state else None
        logits, state = model(X, state)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), Y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = clip_by_global_norm(model.parameters(), clip)
        value = loss.item()
        finite = math.isfinite(value) and math.isfinite(norm)
        if finite:
            opt.step()
        history.clipped += int(clip is not None and norm > clip)
        elapsed += time.perf_counter() - tic
        history.loss.append(value)
        history.grad_norm.append(norm)
        history.wall_time.append(elapsed)
        if not finite and history.diverged_at is None:
            history.diverged_at = step
            if stop_on_divergence:
                break
        if step % 10 == 0:
            bar.set_postfix(loss=f"{value:.3f}")
        last = step == steps - 1
        if val_ids is not None and (last or (eval_every and (step + 1) % eval_every == 0)):
            history.val_step.append(step + 1)
            history.val_perplexity.append(perplexity(model, val_ids))
            best.update(model, step + 1, history.val_perplexity[-1], keep_best)
            if patience is not None and best.evaluations_since >= patience:
                history.stopped_early_at = step + 1
                break
    history.best_step = best.step
    if keep_best and best.state is not None:
        model.load_state_dict(best.state)
    return history


def _check_early_stopping(val_ids, eval_every, keep_best: bool, patience) -> None:
    if (keep_best or patience is not None) and val_ids is None:
        raise ValueError("expected val_ids for early stopping: keep_best and patience choose by the "
                         "validation perplexity")
    if patience is not None:
        checks.positive_int(patience, "patience")
        if not eval_every:
            raise ValueError("expected eval_every with patience: patience counts evaluations, and "
                             "without eval_every validation runs only after the last step")


class _Best:
    """The lowest validation perplexity so far, when it was measured, and (for ``keep_best``) a
    copy of the parameters at that moment."""

    def __init__(self):
        self.perplexity, self.step, self.state, self.evaluations_since = math.inf, None, None, 0

    def update(self, model: nn.Module, step: int, value: float, keep: bool) -> None:
        if value < self.perplexity:
            self.perplexity, self.step, self.evaluations_since = value, step, 0
            if keep:
                self.state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            self.evaluations_since += 1
