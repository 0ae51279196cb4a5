"""Learning-rate schedules: the learning rate as a function of the step number 1, 2, 3, ...

A schedule is any callable ``rate(step) -> float``; :func:`seqbook.translator.train_translation`
takes one in place of a fixed ``lr``. :class:`WarmupInverseSqrt` is the Transformer's schedule
(Vaswani et al. 2017, section 5.3)::

    lr(step) = scale * d_model^(-1/2) * min(step^(-1/2), step * warmup^(-3/2))

It rises linearly for ``warmup`` steps, peaks at ``step = warmup`` with
``scale * (d_model * warmup)^(-1/2)``, then falls as ``1 / sqrt(step)``. The paper uses
``scale = 1`` and ``warmup = 4000`` for a run of 100,000 steps; a short run needs a short warm-up,
and ``scale`` then keeps the peak where a short run can use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import checks

__all__ = ["WarmupInverseSqrt"]


@dataclass(frozen=True)
class WarmupInverseSqrt:
    """``lr(step) = scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)`` for
    ``step >= 1``: a linear warm-up over ``warmup`` steps, then an inverse-square-root decay."""

    d_model: int
    warmup: int
    scale: float = 1.0

    def __post_init__(self):
        checks.positive_ints(d_model=self.d_model, warmup=self.warmup)
        checks.number(self.scale, "the schedule's scale", above=0)

    def __call__(self, step: int) -> float:
        step = checks.positive_int(step, "step (counted from 1)")
        return self.scale * self.d_model ** -0.5 * min(step ** -0.5, step * self.warmup ** -1.5)

    @property
    def peak(self) -> float:
        """The largest learning rate, reached at ``step = warmup``."""
        return self(self.warmup)
