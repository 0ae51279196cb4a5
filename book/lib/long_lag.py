"""The adding problem: a long-time-lag task after Hochreiter & Schmidhuber (1997), experiment 4.

Each sequence has ``length`` steps of two numbers: a value drawn uniformly from [-1, 1]
and a marker. Exactly two steps are marked with 1: one among the first 10, one among the
first ``length // 2 - 1``. The first and last steps carry the marker -1 (unless marked),
every other step 0. The target, given only at the end, is ``0.5 + (X1 + X2) / 4``, the sum
of the two marked values scaled into [0, 1]; a prediction counts as correct when it is
within 0.04 of it. The first marked value must be carried for at least ``length - 10``
steps, which is the long time lag; the later mark is at least ``length // 2 + 1`` steps from
the end. As in the paper, when the mark among the first 10 falls on the first step (one
sequence in ten), its value X1 is set to 0 (so a predictor that keeps only the later mark
is exactly right on those sequences).

Differences from the paper: every sequence has the same length (the paper's vary between
T and 1.1 T), and the networks are today's LSTM / GRU / tanh RNN trained with Adam on
mini-batches, not the 1997 LSTM (no forget gate) trained online.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from . import checks
from .device import pick_device
from .gated import KINDS, memory_init
from .progress import progress
from .seeding import generator, seeded

TOLERANCE = 0.04  # the paper's criterion for a correctly processed sequence


def adding_problem(n: int, length: int, seed: int = 0, device=None):
    """``n`` sequences of the adding problem.

    Returns ``X (n, length, 2)`` float32 (value, marker) and ``y (n,)`` float32 targets in [0, 1].
    """
    checks.integer(n, "n", 1)
    checks.integer(length, "length", 12)
    gen = generator(seed)
    values = torch.rand(n, length, generator=gen) * 2 - 1
    first = torch.randint(0, 10, (n,), generator=gen)
    # The second mark: uniform over the first length//2 - 1 steps other than `first` (exactly so
    # when `first` is among them, i.e. for length >= 22; below that, step length//2 - 2 is never
    # marked when first >= length//2 - 1. The chapter uses length >= 50.)
    second = torch.randint(0, length // 2 - 2, (n,), generator=gen)
    second = second + (second >= first).long()
    rows = torch.arange(n)
    markers = torch.zeros(n, length)
    markers[:, 0] = -1
    markers[:, -1] = -1
    markers[rows, first] = 1
    markers[rows, second] = 1
    x1 = torch.where(first == 0, torch.zeros(n), values[rows, first])  # the paper's rule for step 0
    values[rows, first] = x1
    y = 0.5 + (x1 + values[rows, second]) / 4
    X = torch.stack([values, markers], dim=-1)
    device = device or torch.device("cpu")
    return X.to(device), y.to(device)


class LastStepRegressor(nn.Module):
    """A recurrent layer read out by a linear unit at the last step: ``(batch, time, 2) -> (batch,)``.

    Parameters come from ``seed`` (None: from PyTorch's global generator)."""

    def __init__(self, kind: str = "lstm", hidden_size: int = 32, input_size: int = 2,
                 recurrent: nn.Module | None = None, seed: int | None = None):
        super().__init__()
        with seeded(seed):
            if recurrent is None:
                recurrent = KINDS[checks.one_of(kind, KINDS, "kind")](input_size, hidden_size, batch_first=True)
            self.kind, self.input_size = kind, input_size
            self.recurrent = recurrent
            self.readout = nn.Linear(hidden_size, 1)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """``X (batch, time, input_size)`` -> one prediction per sequence ``(batch,)``."""
        checks.sequence(X, self.input_size)
        outputs, _ = self.recurrent(X)
        return self.readout(outputs[:, -1]).squeeze(-1)


@torch.no_grad()
def evaluate(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> dict:
    """Mean squared error and the fraction of sequences within :data:`TOLERANCE` of the target."""
    was = model.training
    model.eval()
    pred = model(X)
    model.train(was)
    return _scores(pred, y)


def _scores(pred: torch.Tensor, y: torch.Tensor) -> dict:
    """Mean squared error and the fraction of predictions within :data:`TOLERANCE`."""
    err = (pred - y).abs()
    return {"mse": float((err ** 2).mean()), "solved": float((err < TOLERANCE).float().mean())}


def baselines(y: torch.Tensor, X: torch.Tensor) -> dict:
    """What two lazy predictors score: always 0.5, and 0.5 + X2/4 (remember only the recent mark)."""
    values, markers = X[..., 0], X[..., 1]
    # The later mark is the last step marked 1.
    later = (markers == 1).float() * torch.arange(1, X.shape[1] + 1, device=X.device)
    x2 = values.gather(1, later.argmax(dim=1, keepdim=True)).squeeze(1)
    return {name: _scores(pred, y)
            for name, pred in (("constant 0.5", torch.full_like(y, 0.5)), ("recent mark only", 0.5 + x2 / 4))}


def train_adding(kind: str, length: int, steps: int = 600, batch: int = 64, hidden_size: int = 32,
                 lr: float = 3e-3, clip: float = 1.0, seed: int = 0, n_test: int = 2560,
                 stop_below: float | None = None, memory_bias: float | None = None,
                 device=None, show_progress: bool = True) -> dict:
    """Train one ``kind`` of network on fresh batches of the adding problem for at most ``steps`` steps.

    With ``stop_below``, training stops early once the mean training loss of the last 50
    steps falls below it (the paper, too, stopped once the training error was small).
    ``memory_bias`` starts an LSTM or GRU as a long memory (:func:`seqbook.gated.memory_init`);
    the plain RNN has no gate to set, so it ignores it.

    Returns a dict with the test ``mse``, the fraction ``solved`` (within 0.04, on ``n_test``
    sequences as in the paper), the training ``curve`` (loss per step), ``sequences`` seen
    and ``seconds`` taken.
    """
    device = device or pick_device()
    model = LastStepRegressor(kind, hidden_size, seed=seed).to(device)
    if memory_bias is not None and kind != "rnn":
        memory_init(model.recurrent, memory_bias)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    X_test, y_test = adding_problem(n_test, length, seed=10_000 + seed, device=device)
    curve = []
    start = time.perf_counter()
    bar = {} if show_progress else {"disable": True}
    for step in progress(range(steps), desc=f"{kind} T={length}", **bar):
        X, y = adding_problem(batch, length, seed=seed * 1_000_003 + step, device=device)
        loss = nn.functional.mse_loss(model(X), y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        curve.append(loss.item())
        if stop_below is not None and len(curve) >= 50 and sum(curve[-50:]) / 50 < stop_below:
            break
    seconds = time.perf_counter() - start
    result = evaluate(model, X_test, y_test)
    result.update(kind=kind, length=length, curve=curve, steps=len(curve), sequences=len(curve) * batch, seconds=seconds,
                  model=model)
    return result
