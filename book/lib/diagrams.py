"""Cell diagrams of the LSTM and the GRU, drawn with matplotlib.

Each function returns a figure with one axes that shows one step of the cell: the states
coming in on the left, the gates as boxes (σ for a sigmoid, tanh for the candidate), ``⊙``
for an element-wise product, ``+`` for a sum, and the new states leaving on the right. The
labels use chapter 3's notation (``c_t`` the LSTM's cell state, ``\\tilde c_t`` its candidate,
``n_t`` the GRU's). ``diagram_labels(fig)`` lists every label, which is what the tests check.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

__all__ = ["lstm_cell_diagram", "gru_cell_diagram", "diagram_labels"]

_GATE_COLOUR = "#f3d9a4"     # sigmoid gates
_CANDIDATE_COLOUR = "#b9d7ea"  # tanh of a pre-activation
_HIGHWAY_COLOUR = "C3"


class _Canvas:
    """Boxes, operation nodes and arrows on an axes with data coordinates in ``(0..w, 0..h)``."""

    def __init__(self, width: float, height: float, title: str):
        self.fig, self.ax = plt.subplots(figsize=(width * 0.8, height * 0.8))
        self.ax.set(xlim=(0, width), ylim=(0, height), aspect="equal")
        self.ax.axis("off")
        self.ax.set_title(title, fontsize=11)

    def box(self, x, y, text, colour, label=None, width=0.9, height=0.55):
        """A layer box centred at ``(x, y)`` with its function (σ or tanh) inside and
        the name of its output beside it."""
        self.ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                         boxstyle="round,pad=0.04", fc=colour, ec="0.2", lw=1))
        self.ax.text(x, y, text, ha="center", va="center", fontsize=11)
        if label:
            self.ax.text(x + width / 2 + 0.08, y + height / 2 + 0.05, label, ha="left",
                         va="bottom", fontsize=10)

    def node(self, x, y, symbol):
        """An element-wise operation (``⊙``, ``+``, ``tanh``, ``1−``) in a circle."""
        radius = 0.27 if len(symbol) == 1 else 0.36
        self.ax.add_patch(Circle((x, y), radius, fc="white", ec="0.2", lw=1, zorder=3))
        self.ax.text(x, y, symbol, ha="center", va="center", fontsize=12 if len(symbol) == 1 else 9,
                     zorder=4)

    def arrow(self, points, colour="0.25", lw=1.2, head=True):
        """A polyline through ``points`` with an arrow head at the last one."""
        for (x0, y0), (x1, y1) in zip(points[:-2], points[1:-1]):
            self.ax.plot([x0, x1], [y0, y1], color=colour, lw=lw, solid_capstyle="round")
        (x0, y0), (x1, y1) = points[-2], points[-1]
        self.ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>" if head else "-",
                                          mutation_scale=11, color=colour, lw=lw,
                                          shrinkA=0, shrinkB=0))

    def label(self, x, y, text, **kwargs):
        self.ax.text(x, y, text, fontsize=kwargs.pop("fontsize", 12), **kwargs)


def lstm_cell_diagram() -> Figure:
    """One step of the LSTM: ``c_t = f_t ⊙ c_{t-1} + i_t ⊙ \\tilde c_t``, ``h_t = o_t ⊙ tanh(c_t)``.

    The cell state runs along the top (drawn in red: the additive path), the hidden state
    and the input along the bottom; every gate reads ``[h_{t-1}, x_t]``."""
    cv = _Canvas(10.5, 6.2, "LSTM cell (one step)")
    top, bus, gates = 5.0, 0.9, 2.5
    # the cell-state highway: c_{t-1} -> ⊙ f -> + -> c_t
    cv.label(0.05, top + 0.15, r"$c_{t-1}$")
    cv.arrow([(0.1, top), (2.73, top)], _HIGHWAY_COLOUR, lw=2.2)
    cv.node(3.0, top, "⊙")
    cv.arrow([(3.27, top), (4.73, top)], _HIGHWAY_COLOUR, lw=2.2)
    cv.node(5.0, top, "+")
    cv.arrow([(5.27, top), (10.3, top)], _HIGHWAY_COLOUR, lw=2.2)
    cv.label(9.7, top + 0.15, r"$c_t$")
    # the input and the previous output meet in a bus that feeds every gate
    cv.label(0.05, bus + 0.15, r"$h_{t-1}$")
    cv.arrow([(0.1, bus), (7.6, bus)], head=False)
    cv.label(1.3, 0.0, r"$x_t$", ha="center", va="bottom")
    cv.arrow([(1.5, 0.3), (1.5, bus)], head=False)
    for x, fn, name, colour in ((3.0, "σ", r"$f_t$", _GATE_COLOUR),
                                (4.3, "σ", r"$i_t$", _GATE_COLOUR),
                                (5.7, "tanh", r"$\tilde c_t$", _CANDIDATE_COLOUR),
                                (7.6, "σ", r"$o_t$", _GATE_COLOUR)):
        cv.arrow([(x, bus), (x, gates - 0.3)])
        cv.box(x, gates, fn, colour, name)
    cv.arrow([(3.0, gates + 0.3), (3.0, top - 0.27)])               # f_t scales c_{t-1}
    cv.node(5.0, 3.75, "⊙")                                          # i_t ⊙ candidate
    cv.arrow([(4.3, gates + 0.3), (4.3, 3.75), (4.73, 3.75)])
    cv.arrow([(5.7, gates + 0.3), (5.7, 3.75), (5.27, 3.75)])
    cv.arrow([(5.0, 4.02), (5.0, top - 0.27)])
    # the output: h_t = o_t ⊙ tanh(c_t)
    cv.node(8.6, 4.1, "tanh")
    cv.arrow([(8.6, top), (8.6, 4.46)])
    cv.node(8.6, 2.5, "⊙")
    cv.arrow([(8.6, 3.74), (8.6, 2.77)])
    cv.arrow([(8.05, gates), (8.33, gates)])
    cv.arrow([(8.87, gates), (9.5, gates), (9.5, bus), (10.3, bus)])
    cv.label(9.7, bus + 0.15, r"$h_t$")
    cv.label(10.3, 0.05, "red: the additive path of the cell state", fontsize=8, ha="right",
             color=_HIGHWAY_COLOUR)
    return cv.fig


def gru_cell_diagram() -> Figure:
    """One step of the GRU (PyTorch's form):
    ``n_t = tanh(W_in x_t + b_in + r_t ⊙ (W_hn h_{t-1} + b_hn))``,
    ``h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_{t-1}``.

    The state runs along the top (red: the additive path, kept in the share ``z_t``)."""
    cv = _Canvas(10.5, 6.2, "GRU cell (one step, PyTorch's form)")
    top, bus, gates = 5.0, 0.9, 2.5
    cv.label(0.05, top + 0.15, r"$h_{t-1}$")
    cv.arrow([(0.1, top), (6.73, top)], _HIGHWAY_COLOUR, lw=2.2)
    cv.node(7.0, top, "⊙")
    cv.arrow([(7.27, top), (8.33, top)], _HIGHWAY_COLOUR, lw=2.2)
    cv.node(8.6, top, "+")
    cv.arrow([(8.87, top), (10.3, top)], _HIGHWAY_COLOUR, lw=2.2)
    cv.label(9.7, top + 0.15, r"$h_t$")
    # the old state also feeds the gates and the candidate (down the left), with x_t
    cv.arrow([(0.8, top), (0.8, bus), (6.4, bus)], head=False)
    cv.label(1.6, 0.0, r"$x_t$", ha="center", va="bottom")
    cv.arrow([(1.8, 0.3), (1.8, bus)], head=False)
    for x, fn, name, colour in ((2.6, "σ", r"$z_t$", _GATE_COLOUR),
                                (4.4, "σ", r"$r_t$", _GATE_COLOUR)):
        cv.arrow([(x, bus), (x, gates - 0.3)])
        cv.box(x, gates, fn, colour, name)
    # z_t keeps the old state; 1 - z_t lets the candidate in
    cv.arrow([(2.6, gates + 0.3), (2.6, 3.9), (7.0, 3.9), (7.0, top - 0.27)])
    cv.node(7.8, 3.9, "1−")
    cv.arrow([(7.0, 3.9), (7.44, 3.9)])
    cv.node(7.8, 2.5, "⊙")
    cv.arrow([(7.8, 3.54), (7.8, 2.77)])
    cv.arrow([(8.07, 2.5), (8.6, 2.5), (8.6, top - 0.27)])
    # the candidate: r_t scales the recurrent part of its pre-activation
    cv.box(6.4, 1.7, "tanh", _CANDIDATE_COLOUR, r"$n_t$")
    cv.arrow([(6.4, bus), (6.4, 1.4)])
    cv.arrow([(4.4, gates + 0.3), (4.4, 3.3), (5.5, 3.3), (5.5, 1.7), (5.92, 1.7)])
    cv.arrow([(6.88, 1.7), (7.8, 1.7), (7.8, 2.23)])
    cv.label(10.3, 0.4, r"$n_t=\tanh(W_{in}x_t+b_{in}+r_t\odot(W_{hn}h_{t-1}+b_{hn}))$",
             fontsize=8, ha="right")
    cv.label(10.3, 0.05, "red: the additive path of the state", fontsize=8, ha="right",
             color=_HIGHWAY_COLOUR)
    return cv.fig


def diagram_labels(fig: Figure) -> list[str]:
    """Every piece of text drawn on the diagram's axes (the title excluded)."""
    if not isinstance(fig, Figure) or not fig.axes:
        raise TypeError(f"expected a matplotlib Figure with an axes, got {type(fig).__name__}")
    return [t.get_text() for t in fig.axes[0].texts]


# -- chapter 2: the unrolled recurrent network and backpropagation through time --------------
_CH2_INPUT_COLOUR = "#dbe9f6"
_CH2_STATE_COLOUR = "#fde2c8"
_CH2_LOSS_COLOUR = "#e2f0d9"
_CH2_BACKWARD_COLOUR = "C3"


def unrolled_rnn_diagram(steps: int = 4, backward: bool = False, detach_after: int | None = None) -> Figure:
    """The recurrence ``h_t = φ(x_t W_xh + h_{t-1} W_hh + b_h)`` unrolled over ``steps`` steps, as
    the computation graph autograd records: the inputs ``x_t`` at the bottom, the states ``h_t``
    in the middle (``h_0`` on the left), the per-step losses ``L_t`` on top, and the same three
    weight matrices on every arrow.

    ``backward=True`` adds the backward pass in red: each loss sends ``∂L_t/∂h_t`` down to its
    state, and going one step back, from ``h_t`` to ``h_{t-1}``, multiplies by the step's Jacobian
    ``J_t = diag(φ'(a_t)) W_hh^T``. ``detach_after=k`` draws a truncation after ``h_k``: the state
    still flows forward, but no gradient crosses back into ``h_k`` (no ``J_{k+1}`` arrow)."""
    from . import checks

    steps = checks.integer(steps, "steps", 1)
    if steps > 8:
        raise ValueError(f"expected at most 8 steps (the diagram gets unreadable beyond), got {steps}")
    if detach_after is not None:
        detach_after = checks.integer(detach_after, "detach_after", 1)
        if detach_after >= steps:
            raise ValueError(f"expected detach_after between 1 and {steps - 1} (a cut between two of "
                             f"the {steps} steps), got {detach_after}")
    if backward:
        title = "backpropagation through time: one step back multiplies the gradient by $J_t$"
    else:
        title = "the unrolled network: the same $W_{xh}$, $W_{hh}$, $W_{hq}$ at every step"
    gap = 2.3
    width, height = 1.6 + steps * gap, 5.4
    cv = _Canvas(width, height, title)
    bottom, middle, top = 0.7, 2.55, 4.4
    x_of = {t: 0.7 + t * gap for t in range(steps + 1)}

    def state_box(t):
        cv.box(x_of[t], middle, f"$h_{t}$", _CH2_STATE_COLOUR if t else "0.92", width=0.8)

    state_box(0)
    for t in range(1, steps + 1):
        x = x_of[t]
        cv.box(x, bottom, f"$x_{t}$", _CH2_INPUT_COLOUR, width=0.8)
        state_box(t)
        cv.box(x, top, f"$L_{t}$", _CH2_LOSS_COLOUR, width=0.8)
        cv.arrow([(x, bottom + 0.32), (x, middle - 0.32)])
        cv.label(x - 0.08, (bottom + middle) / 2, "$W_{xh}$", fontsize=9, ha="right", va="center")
        cv.arrow([(x, middle + 0.32), (x, top - 0.32)])
        cv.label(x - 0.08, (middle + top) / 2, "$W_{hq}$", fontsize=9, ha="right", va="center")
        cv.arrow([(x_of[t - 1] + 0.46, middle), (x - 0.46, middle)])
        cv.label((x_of[t - 1] + x) / 2, middle + 0.12, "$W_{hh}$", fontsize=9, ha="center",
                 va="bottom", zorder=4, bbox=dict(fc="white", ec="none", pad=0.5))
        if backward:
            cv.arrow([(x + 0.22, top - 0.32), (x + 0.22, middle + 0.32)], _CH2_BACKWARD_COLOUR)
            if t == steps:
                cv.label(x + 0.3, (middle + top) / 2, r"$\partial L_t/\partial h_t$", fontsize=9,
                         ha="left", va="center", color=_CH2_BACKWARD_COLOUR)
            if detach_after is None or t != detach_after + 1:
                cv.arrow([(x - 0.46, middle - 0.2), (x_of[t - 1] + 0.46, middle - 0.2)],
                         _CH2_BACKWARD_COLOUR)
                cv.label((x_of[t - 1] + x) / 2, middle - 0.32, f"$J_{t}$", fontsize=10,
                         ha="center", va="top", color=_CH2_BACKWARD_COLOUR)
    if detach_after is not None:
        cut = (x_of[detach_after] + x_of[detach_after + 1]) / 2
        cv.ax.plot([cut, cut], [bottom - 0.4, top + 0.45], color="0.45", ls="--", lw=1.2)
        cv.label(cut, top + 0.5, "detach", fontsize=9, ha="center", va="bottom", color="0.3")
    if backward:
        cv.label(width - 0.1, 0.05, r"red: the backward pass, $J_t = \mathrm{diag}(\phi'(a_t))\,W_{hh}^\top$",
                 fontsize=8, ha="right", va="bottom", color=_CH2_BACKWARD_COLOUR)
    else:
        cv.label(width - 0.1, 0.05, r"$L_t$: the loss of predicting $x_{t+1}$ from $h_t$; "
                 r"$L = L_1 + \dots + L_T$", fontsize=8, ha="right", va="bottom")
    return cv.fig

__all__ += ["unrolled_rnn_diagram"]
