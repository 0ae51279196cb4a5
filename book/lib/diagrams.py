"""Cell diagrams of the LSTM and the GRU, drawn with matplotlib.

Each function returns a figure with one axes that shows one step of the cell: the states
coming in on the left, the gates as boxes (σ for a sigmoid, tanh for the candidate), ``⊙``
for an element-wise product, ``+`` for a sum, and the new states leaving on the right. The
labels use chapter 3's notation (``c_t`` the LSTM's cell state, ``\\tilde c_t`` its candidate,
``n_t`` the GRU's). ``diagram_labels(fig)`` lists every label, which is what the tests check.
"""

from __future__ import annotations

from typing import Callable

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

    def junction(self, xs, ys):
        """Dots where lines join (a line meeting a bus, not a bare T)."""
        self.ax.plot(xs, ys, "o", color="0.25", ms=3.5, zorder=4)

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
    cv.junction([1.5], [bus])     # x_t joins the bus here
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
    # the old state feeds the gates and W_hn (down the left, then along the bus at y = bus);
    # x_t has a line of its own below it, which feeds the gates and the candidate's tanh
    xin = 0.4
    cv.arrow([(0.8, top), (0.8, bus), (5.5, bus)], head=False)
    cv.label(1.15, xin, r"$x_t$", ha="right", va="center")
    cv.arrow([(1.25, xin), (6.6, xin)], head=False)
    for x, fn, name, colour in ((2.6, "σ", r"$z_t$", _GATE_COLOUR),
                                (4.4, "σ", r"$r_t$", _GATE_COLOUR)):
        cv.arrow([(x, xin), (x, gates - 0.3)])            # x_t, joined by h_{t-1} at the bus
        cv.junction([x, x], [xin, bus])
        cv.box(x, gates, fn, colour, name)
    # z_t keeps the old state; 1 - z_t lets the candidate in
    cv.arrow([(2.6, gates + 0.3), (2.6, 3.9), (7.0, 3.9), (7.0, top - 0.27)])
    cv.node(7.8, 3.9, "1−")
    cv.arrow([(7.0, 3.9), (7.44, 3.9)])
    cv.node(7.8, 2.5, "⊙")
    cv.arrow([(7.8, 3.54), (7.8, 2.77)])
    cv.arrow([(8.07, 2.5), (8.6, 2.5), (8.6, top - 0.27)])
    # the candidate: r_t scales the recurrent part of its pre-activation, W_hn h + b_hn,
    # in a ⊙ node of its own before the tanh (not h_{t-1} itself: PyTorch's form)
    _ch3_linear_box(cv, 5.5, 1.65, r"$W_{hn}h_{t-1}+b_{hn}$", width=1.8)
    cv.arrow([(5.5, bus), (5.5, 1.4)])
    cv.node(5.5, 2.5, "⊙")
    cv.arrow([(5.5, 1.9), (5.5, 2.23)])
    cv.arrow([(4.4, gates + 0.3), (4.4, 3.3), (5.5, 3.3), (5.5, 2.77)])
    cv.box(6.6, gates, "tanh", _CANDIDATE_COLOUR, r"$n_t$")
    cv.arrow([(5.77, 2.5), (6.11, 2.5)])
    cv.arrow([(6.6, xin), (6.6, gates - 0.3)])             # x_t only
    cv.junction([6.6], [xin])
    cv.label(6.68, 0.95, r"$W_{in}x_t+b_{in}$", fontsize=10)
    cv.arrow([(7.09, 2.5), (7.53, 2.5)])
    # the candidate's formula beside its tanh box, in two lines; W_in x_t + b_in below it
    cv.label(7.2, 1.8, r"$n_t=\tanh(W_{in}x_t+b_{in}$", fontsize=10)
    cv.label(7.55, 1.42, r"$+\,r_t\odot(W_{hn}h_{t-1}+b_{hn}))$", fontsize=10)
    cv.label(10.3, 0.05, "red: the additive path of the state", fontsize=8, ha="right",
             color=_HIGHWAY_COLOUR)
    return cv.fig



def _ch3_linear_box(cv: _Canvas, x, y, text, width=1.5, height=0.5) -> None:
    """A white box for an affine map (no nonlinearity), its formula inside at the labels' size."""
    cv.ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                   boxstyle="round,pad=0.04", fc="white", ec="0.2", lw=1))
    cv.ax.text(x, y, text, ha="center", va="center", fontsize=10)

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
    width, height = 1.6 + steps * gap, 5.7
    cv = _Canvas(width, height, title)
    bottom, middle, top = 1.0, 2.85, 4.7   # room under the inputs for the footnote
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
        # beside a detach line rather than on it
        shift = -0.4 if detach_after is not None and t == detach_after + 1 else 0.0
        cv.label((x_of[t - 1] + x) / 2 + shift, middle + 0.12, "$W_{hh}$", fontsize=9,
                 ha="center", va="bottom", zorder=4, bbox=dict(fc="white", ec="none", pad=0.5))
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
        cv.ax.plot([cut, cut], [bottom - 0.3, top + 0.45], color="0.45", ls="--", lw=1.2)
        cv.label(cut, top + 0.5, "detach", fontsize=9, ha="center", va="bottom", color="0.3")
    if backward:
        cv.label(width - 0.1, 0.05, r"red: the backward pass, $J_t = \mathrm{diag}(\phi'(a_t))\,W_{hh}^\top$",
                 fontsize=9, ha="right", va="bottom", color=_CH2_BACKWARD_COLOUR)
    else:
        total = " + ".join(f"L_{t}" for t in range(1, steps + 1)) if steps <= 2 else \
            rf"L_1 + \dots + L_{steps}"
        cv.label(width - 0.1, 0.05, r"$L_t$: the loss of predicting $x_{t+1}$ from $h_t$; "
                 rf"$L = {total}$ ($T = {steps}$)", fontsize=9, ha="right", va="bottom")
    return cv.fig

__all__ += ["unrolled_rnn_diagram"]


# -- chapter 5: one step of an attention decoder, Bahdanau's order beside Luong's ----------------
_CH5_ATTENTION_COLOUR = "#d5e8c8"   # the attention block: score, softmax, weighted sum
_CH5_OUTPUT_COLOUR = "#e6dcef"      # read-out layers
_CH5_SHAPE = dict(fontsize=9, color="0.35")


def _ch5_attention_block(cv: _Canvas, query_x: float, softmax_x: float, sum_x: float,
                         row: float, bottom: float) -> None:
    """The part both decoders share: score every annotation against the query, softmax, sum.

    The query arrives from above at ``query_x``; the annotations lie in a bar at ``bottom``."""
    left, right = query_x - 0.6, sum_x + 0.6
    cv.ax.add_patch(FancyBboxPatch((left, bottom - 0.3), right - left, 0.6, boxstyle="round,pad=0.04",
                                   fc="white", ec="0.2", lw=1))
    cv.label(left + 0.15, bottom, r"annotations $h_1 \dots h_n$", ha="left", va="center",
             fontsize=10)
    cv.label(right - 0.12, bottom, r"$(n, d_h)$", ha="right", va="center", **_CH5_SHAPE)  # in the bar
    cv.box(query_x, row, "score", _CH5_ATTENTION_COLOUR)
    cv.arrow([(query_x, bottom + 0.3), (query_x, row - 0.3)])              # the keys
    cv.label(query_x + 0.08, bottom + 0.45, "keys", fontsize=9, color="0.35")
    cv.box(softmax_x, row, "softmax", _CH5_ATTENTION_COLOUR, width=1.1)
    cv.arrow([(query_x + 0.45, row), (softmax_x - 0.55, row)])
    scores_x = (query_x + 0.45 + softmax_x - 0.55) / 2     # middle of the arrow, off the boxes
    cv.label(scores_x, row + 0.12, r"$e_{i\cdot}$", ha="center", va="bottom", fontsize=11)
    cv.label(scores_x, row - 0.12, r"$(n)$", ha="center", va="top", **_CH5_SHAPE)
    cv.node(sum_x, row, "Σ")
    cv.arrow([(softmax_x + 0.55, row), (sum_x - 0.27, row)])
    weights_x = (softmax_x + 0.55 + sum_x - 0.27) / 2
    cv.label(weights_x, row + 0.12, r"$a_{i\cdot}$", ha="center", va="bottom", fontsize=11)
    cv.label(weights_x, row - 0.12, r"$(n)$", ha="center", va="top", **_CH5_SHAPE)
    cv.arrow([(sum_x, bottom + 0.3), (sum_x, row - 0.27)])                  # the values
    cv.label(sum_x + 0.08, bottom + 0.45, "values", fontsize=9, color="0.35")


def _ch5_bahdanau_step(cv: _Canvas, y0: float) -> None:
    """Bahdanau's step, its lowest part at height ``y0``: s_{i-1} -> score ... -> c_i -> GRU."""
    top, mid, bottom = y0 + 4.1, y0 + 2.0, y0
    cv.label(0.05, y0 + 5.7, "Bahdanau et al.: the previous state queries", fontsize=11,
             fontweight="bold")
    cv.label(0.05, top + 0.12, r"$s_{i-1}$", va="bottom")
    cv.label(0.05, top - 0.12, r"$(d_h)$", va="top", **_CH5_SHAPE)
    cv.arrow([(0.1, top), (3.6, top)])
    cv.arrow([(1.1, top), (1.1, mid + 0.3)])                              # the query
    cv.label(1.18, top - 0.75, "query", fontsize=9, color="0.35")
    _ch5_attention_block(cv, 1.1, 2.6, 4.1, mid, bottom)
    cv.box(4.1, top, "GRU", _CANDIDATE_COLOUR, width=1.0)
    cv.arrow([(4.1, mid + 0.27), (4.1, top - 0.3)])                       # c_i into the GRU
    cv.label(4.2, mid + 0.6, r"$c_i$ $(d_h)$", fontsize=10)
    cv.label(3.55, top + 1.35, r"$E\,y_{i-1}$", ha="center", fontsize=10)
    cv.arrow([(3.85, top + 1.25), (3.85, top + 0.3)])
    cv.arrow([(3.85, top + 0.9), (5.95, top + 0.9), (5.95, top + 0.3)])   # E y_{i-1} too
    cv.box(6.2, top, r"$W_o$", _CH5_OUTPUT_COLOUR, width=0.9)
    cv.arrow([(4.6, top), (5.75, top)])
    cv.label(5.15, top + 0.12, r"$s_i$", ha="center", va="bottom", fontsize=11)
    cv.label(5.15, top - 0.12, r"$(d_h)$", ha="center", va="top", **_CH5_SHAPE)
    cv.arrow([(4.37, mid), (6.2, mid), (6.2, top - 0.3)])                 # c_i to the read-out
    cv.arrow([(6.45, top + 0.3), (6.45, top + 1.15)])
    cv.label(6.45, top + 1.25, r"$p(y_i)$ ($n_{vocab}$)", ha="center", fontsize=10)


def _ch5_luong_step(cv: _Canvas, y0: float) -> None:
    """Luong's step, its lowest part at height ``y0``: s_{i-1} -> GRU -> s_i -> score ... ->
    c_i -> tilde s_i -> read-out, and input feeding back into the next GRU step."""
    top, mid, bottom = y0 + 4.1, y0 + 2.0, y0
    cv.label(0.05, y0 + 5.7, "Luong et al.: the new state queries", fontsize=11, fontweight="bold")
    cv.label(0.05, top + 0.12, r"$s_{i-1}$", va="bottom")
    cv.label(0.05, top - 0.12, r"$(d_h)$", va="top", **_CH5_SHAPE)
    cv.arrow([(0.1, top), (0.95, top)])
    cv.box(1.45, top, "GRU", _CANDIDATE_COLOUR, width=1.0)
    cv.label(1.3, top + 1.35, r"$E\,y_{i-1}$", ha="center", fontsize=10)
    cv.arrow([(1.3, top + 1.25), (1.3, top + 0.3)])
    cv.arrow([(1.95, top), (4.6, top)])
    cv.label(2.75, top + 0.12, r"$s_i$", ha="center", va="bottom", fontsize=11)
    cv.label(2.75, top - 0.12, r"$(d_h)$", ha="center", va="top", **_CH5_SHAPE)
    cv.arrow([(2.3, top), (2.3, mid + 0.3)])                              # the query
    cv.label(2.38, top - 0.75, "query", fontsize=9, color="0.35")
    _ch5_attention_block(cv, 2.3, 3.75, 5.15, mid, bottom)
    cv.box(5.15, top, "tanh", _CH5_OUTPUT_COLOUR, width=0.9)
    cv.label(5.2, mid + 0.6, r"$c_i$ $(d_h)$", fontsize=10)
    cv.arrow([(5.15, mid + 0.27), (5.15, top - 0.3)])
    cv.label(5.15, top - 0.62, r"$W_c[c_i; s_i]$", ha="center", va="top", fontsize=9,
             color="0.35")
    cv.box(6.75, top, r"$W_s$", _CH5_OUTPUT_COLOUR, width=0.8)
    cv.arrow([(5.6, top), (6.35, top)])
    cv.label(5.85, top + 0.12, r"$\tilde s_i$", ha="center", va="bottom", fontsize=11)
    cv.arrow([(6.75, top + 0.3), (6.75, top + 1.15)])
    cv.label(6.75, top + 1.25, r"$p(y_i)$ ($n_{vocab}$)", ha="center", fontsize=10)
    # input feeding: tilde s_i goes back into the next step's GRU (dashed: optional)
    feed = [(6.15, top), (6.15, top + 0.95), (1.65, top + 0.95), (1.65, top + 0.3)]
    for (xa, ya), (xb, yb) in zip(feed[:-2], feed[1:-1]):
        cv.ax.plot([xa, xb], [ya, yb], color=_HIGHWAY_COLOUR, lw=1.1, ls="--")
    cv.ax.add_patch(FancyArrowPatch(feed[-2], feed[-1], arrowstyle="-|>", mutation_scale=10,
                                    color=_HIGHWAY_COLOUR, lw=1.1, ls="--", shrinkA=0, shrinkB=0))
    cv.label(3.9, top + 1.05, r"input feeding: $\tilde s_i$ feeds the next step's GRU",
             ha="center", va="bottom", fontsize=9, color=_HIGHWAY_COLOUR)


def attention_decoder_diagram() -> Figure:
    """One decoder step with attention, in both of chapter 5's orders (Bahdanau's above
    Luong's, so that the parts line up), with the shapes of one sentence (n source words,
    annotations of size d_h, a target vocabulary of n_vocab words):

    - Bahdanau et al.: the *previous* state ``s_{i-1}`` queries; the context ``c_i`` then enters
      the GRU, and the read-out sees ``[s_i; c_i; E y_{i-1}]``;
    - Luong et al.: the GRU steps first and the *new* state ``s_i`` queries; ``\\tilde s_i =
      tanh(W_c [c_i; s_i])`` feeds the read-out and, with input feeding, the next step's GRU.
    """
    cv = _Canvas(7.6, 13.6, "one decoder step with attention (shapes for one sentence)")
    _ch5_bahdanau_step(cv, 7.4)
    cv.ax.plot([0.05, 7.55], [7.0, 7.0], color="0.8", lw=0.8)
    _ch5_luong_step(cv, 0.75)
    cv.label(0.05, 0.0, "a batch adds a leading dimension to every shape", ha="left",
             **_CH5_SHAPE)
    return cv.fig


# -- chapter 6: the Transformer, with one encoder layer and one decoder layer drawn out -----------
_CH6_ATTENTION_COLOUR = "#f6d3b3"   # attention sublayers
_CH6_FFN_COLOUR = "#b9d7ea"         # the position-wise feed-forward network
_CH6_NORM_COLOUR = "#f2efb6"        # add & LayerNorm
_CH6_EDGE_COLOUR = "0.25"
_CH6_SHAPE = dict(fontsize=8, color="0.35")
_CH6_BOX_WIDTH = 3.3


def _ch6_box(cv: _Canvas, x, y, text, colour, height=0.55, fontsize=9):
    """A sublayer box of the Transformer diagram, ``text`` centred (one or two lines)."""
    cv.ax.add_patch(FancyBboxPatch((x - _CH6_BOX_WIDTH / 2, y - height / 2), _CH6_BOX_WIDTH, height,
                                   boxstyle="round,pad=0.04", fc=colour, ec="0.2", lw=1))
    cv.ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _ch6_residual(cv: _Canvas, x, side, y_from, y_to):
    """The residual path: leaves the main line at ``y_from``, runs up at ``side`` and enters the
    Add & LayerNorm box centred at ``(x, y_to)`` from that side (drawn in red, as chapter 3's
    additive paths)."""
    edge = x - _CH6_BOX_WIDTH / 2 if side < x else x + _CH6_BOX_WIDTH / 2
    cv.arrow([(x, y_from), (side, y_from), (side, y_to), (edge, y_to)], _HIGHWAY_COLOUR, lw=1.4)


def _ch6_layer(cv: _Canvas, x, side, bottom, sublayers) -> float:
    """Sublayers stacked upwards from ``bottom``, each followed by Add & LayerNorm with its
    residual path; ``sublayers`` are (text, colour, height) from the bottom. Returns the top."""
    y = bottom
    for text, colour, height in sublayers:
        centre = y + 0.35 + height / 2
        cv.arrow([(x, y), (x, centre - height / 2)])
        _ch6_box(cv, x, centre, text, colour, height)
        norm = centre + height / 2 + 0.55
        cv.arrow([(x, centre + height / 2), (x, norm - 0.22)])
        _ch6_box(cv, x, norm, "Add & LayerNorm", _CH6_NORM_COLOUR, 0.44, 9)
        _ch6_residual(cv, x, side, y + 0.2, norm)
        y = norm + 0.22
    return y


def transformer_diagram() -> Figure:
    """The encoder-decoder Transformer of Vaswani et al. (2017), as ``seqbook.transformer`` builds
    it (post-norm: ``x = LayerNorm(x + Sublayer(x))``), with one encoder layer and one decoder
    layer drawn out, where each mask applies, the memory feeding every decoder layer's
    cross-attention, and the shapes of one sentence pair (n source and m target positions)."""
    cv = _Canvas(12.4, 12.6, "the Transformer (post-norm, as in the paper and seqbook.transformer)")
    xe, xd = 3.1, 8.9
    # inputs: ids -> embedding * sqrt(d_model) -> + positions
    for x, ids, shape in ((xe, "source ids", "(n)"), (xd, r"target so far: <bos>, $y_1 \dots y_{m-1}$", "(m)")):
        cv.label(x, 0.15, ids, ha="center", va="bottom", fontsize=10)
        cv.label(x + 0.1, 0.62, shape, ha="left", va="bottom", **_CH6_SHAPE)
        cv.arrow([(x, 0.6), (x, 1.05)])
        _ch6_box(cv, x, 1.33, r"embedding $\times\sqrt{d_{model}}$", "white")
        cv.arrow([(x, 1.6), (x, 2.03)])
        cv.node(x, 2.3, "+")
        cv.label(x - 1.05, 2.3, "positions", ha="right", va="center", fontsize=9)
        cv.arrow([(x - 1.0, 2.3), (x - 0.27, 2.3)])
        # beside the "+", opposite the positions: clear of the layer box and the residual paths
        cv.label(x + 0.36, 2.3, r"(n, $d_{model}$)" if x == xe else r"(m, $d_{model}$)",
                 ha="left", va="center", **_CH6_SHAPE)
    # one encoder layer (residual paths on the left) and one decoder layer (on the right)
    enc_bottom, dec_bottom = 2.57, 2.57
    enc_top = _ch6_layer(cv, xe, xe - 1.95, enc_bottom, [
        ("multi-head self-attention\nmask: source padding", _CH6_ATTENTION_COLOUR, 0.8),
        ("feed-forward network", _CH6_FFN_COLOUR, 0.55)])
    dec_top = _ch6_layer(cv, xd, xd + 1.95, dec_bottom, [
        ("masked multi-head\nself-attention\nmask: causal (no later position)", _CH6_ATTENTION_COLOUR, 1.05),
        ("multi-head cross-attention\nqueries: from below\nkeys, values: the memory\nmask: source padding",
         _CH6_ATTENTION_COLOUR, 1.3),
        ("feed-forward network", _CH6_FFN_COLOUR, 0.55)])
    for x, top, side in ((xe, enc_top, xe - 2.2), (xd, dec_top, xd + 2.2)):
        lo, hi = enc_bottom + 0.08, top + 0.12
        cv.ax.add_patch(FancyBboxPatch((x - 2.2, lo), 4.4, hi - lo, boxstyle="round,pad=0.05",
                                       fc="none", ec="0.55", lw=1, ls="--"))
        cv.label(side + (-0.12 if side < x else 0.12), (lo + hi) / 2, "N ×", ha="right" if side < x else "left",
                 va="center", fontsize=12)
    # the encoder's output, the memory, reaches the cross-attention of every decoder layer
    cross_y = dec_bottom + 0.35 + 1.05 + 0.55 + 0.22 + 0.35 + 1.3 / 2
    cv.arrow([(xe, enc_top + 0.12), (xe, enc_top + 0.75), (6.0, enc_top + 0.75), (6.0, cross_y),
              (xd - _CH6_BOX_WIDTH / 2, cross_y)], lw=1.6)
    cv.label(xe + 0.12, enc_top + 0.85, r"memory (n, $d_{model}$)", ha="left", va="bottom", fontsize=10)
    cv.label(6.1, cross_y + 0.12, "K, V", ha="left", va="bottom", fontsize=9)
    # the read-out: a linear layer to the vocabulary and a softmax at every target position
    cv.arrow([(xd, dec_top + 0.12), (xd, dec_top + 0.5)])
    _ch6_box(cv, xd, dec_top + 0.78, r"linear $d_{model} \to n_{vocab}$, softmax", _CH5_OUTPUT_COLOUR)
    cv.arrow([(xd, dec_top + 1.05), (xd, dec_top + 1.45)])
    cv.label(xd, dec_top + 1.5, r"$p(y_t \mid y_{<t}, x)$ at every position: (m, $n_{vocab}$)", ha="center",
             va="bottom", fontsize=10)
    cv.label(0.1, dec_top + 2.45, r"each sublayer: $x \leftarrow \mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$;"
             " red: the residual paths", fontsize=9, color=_HIGHWAY_COLOUR)
    cv.label(0.1, dec_top + 2.05, "encoder: N layers, then the memory; decoder: N layers, each reading the memory",
             fontsize=9, color="0.35")
    height = dec_top + 2.85                       # the canvas ends just above the notes
    cv.ax.set_ylim(0, height)
    cv.fig.set_size_inches(cv.fig.get_size_inches()[0], height * 0.8)
    return cv.fig


# -- chapter 4: the encoder-decoder ------------------------------------------------------------
__all__ += ["seq2seq_diagram"]


class _Ch4Panel(_Canvas):
    """A :class:`_Canvas` drawn on one axes of a larger figure."""

    def __init__(self, ax, width: float, height: float, title: str):
        self.fig, self.ax = ax.figure, ax
        ax.set(xlim=(0, width), ylim=(0, height), aspect="equal")
        ax.axis("off")
        ax.set_title(title, fontsize=10.5, loc="left")


_CH4_ENCODER_COLOUR = _CANDIDATE_COLOUR
_CH4_DECODER_COLOUR = _GATE_COLOUR
_CH4_MISTAKE_COLOUR = "C1"
_CH4_FEEDBACK_COLOUR = "0.3"        # an output looping back as the next input: dark enough to follow


def _ch4_encoder_decoder(panel: _Ch4Panel, source: list[str], inputs: list[str],
                         outputs: list[str], fed_back: bool, mistakes=()) -> None:
    """One row of encoder steps reading ``source`` and decoder steps reading ``inputs`` and
    predicting ``outputs``; ``fed_back`` draws each output looping into the next input."""
    gap, y, box_w, box_h = 1.25, 2.2, 0.8, 0.6
    enc_x = [0.9 + gap * t for t in range(len(source))]
    dec_x = [enc_x[-1] + 1.9 + gap * j for j in range(len(inputs))]
    for t, (x, word) in enumerate(zip(enc_x, source)):
        panel.box(x, y, "enc", _CH4_ENCODER_COLOUR, width=box_w, height=box_h)
        panel.label(x, 0.55, word, ha="center", va="center", fontsize=10)
        panel.arrow([(x, 0.8), (x, y - box_h / 2)])
        if t:
            panel.arrow([(enc_x[t - 1] + box_w / 2, y), (x - box_w / 2, y)])
    # the encoder's final state is the decoder's first state: the only way in for the source
    panel.arrow([(enc_x[-1] + box_w / 2, y), (dec_x[0] - box_w / 2, y)], _HIGHWAY_COLOUR, lw=2.2)
    panel.label((enc_x[-1] + dec_x[0]) / 2, y + 0.15, r"$s_0$", ha="center", va="bottom",
                fontsize=10, color=_HIGHWAY_COLOUR)
    for j, (x, word_in, word_out) in enumerate(zip(dec_x, inputs, outputs)):
        panel.box(x, y, "dec", _CH4_DECODER_COLOUR, width=box_w, height=box_h)
        wrong = j in mistakes
        panel.label(x, 0.55, word_in, ha="center", va="center", fontsize=10,
                    color=_CH4_MISTAKE_COLOUR if (j - 1) in mistakes and fed_back else "k")
        panel.arrow([(x, 0.8), (x, y - box_h / 2)])
        panel.arrow([(x, y + box_h / 2), (x, 3.35)])
        panel.label(x, 3.6, word_out, ha="center", va="center", fontsize=10,
                    color=_CH4_MISTAKE_COLOUR if wrong else "k")
        if j:
            panel.arrow([(dec_x[j - 1] + box_w / 2, y), (x - box_w / 2, y)])
        if fed_back and j + 1 < len(inputs):      # this output is the next step's input
            # the line passes behind the state arrow, with a gap where they cross
            mid, bridge = x + gap / 2, 0.16
            panel.arrow([(x + 0.45, 3.6), (mid, 3.6), (mid, y + bridge)],
                        colour=_CH4_FEEDBACK_COLOUR, lw=1.2, head=False)
            panel.arrow([(mid, y - bridge), (mid, 0.55), (dec_x[j + 1] - 0.42, 0.55)],
                        colour=_CH4_FEEDBACK_COLOUR, lw=1.2)
        if not fed_back:
            panel.label(x, 4.1, r"$-\log p$", ha="center", va="center", fontsize=8.5, color="0.35")


def seq2seq_diagram() -> Figure:
    """Chapter 4's encoder-decoder, in training (teacher forcing) and at inference (greedy).

    Top: the encoder reads the source reversed (Sutskever et al.); its final state ``s_0`` starts
    the decoder, which reads the reference shifted by one (``tgt_in``) and is scored against the
    next reference word at every position (``tgt_out``). Bottom: the same model translating:
    each output is fed back as the next input until ``<eos>``; a wrong word (orange) becomes the
    next input, a prefix the decoder never read in training."""
    fig, axes = plt.subplots(2, 1, figsize=(10.5, 6.6))
    source = [".", "eats", "cat", "the"]           # "the cat eats ." read backwards
    width, height = 13.3, 4.4                      # a right margin beyond the last step
    top = _Ch4Panel(axes[0], width, height, "training (teacher forcing): the decoder reads "
                    "tgt_in and is scored on the next word, tgt_out")
    _ch4_encoder_decoder(top, source, ["<bos>", "le", "chat", "mange", "."],
                         ["le", "chat", "mange", ".", "<eos>"], fed_back=False)
    bottom = _Ch4Panel(axes[1], width, height, "inference (greedy): each output is fed back as "
                       "the next input, until <eos>")
    _ch4_encoder_decoder(bottom, source, ["<bos>", "le", "chien", "mange", "."],
                         ["le", "chien", "mange", ".", "<eos>"], fed_back=True, mistakes=(1,))
    for panel in (top, bottom):
        panel.label(0.5, 0.0, "encoder: the source, reversed", fontsize=8.5, color="0.35")
        panel.label(6.3, 0.0, "decoder", fontsize=8.5, color="0.35")
    top.label(width - 0.6, 0.0, "loss: the mean of the −log p", fontsize=8.5, ha="right",
              color="0.35")
    bottom.label(width - 0.6, 0.0, "orange: a wrong word, read by the next step",
                 fontsize=8.5, ha="right", color=_CH4_MISTAKE_COLOUR)
    fig.tight_layout()
    return fig


# -- chapter 3: the LSTM unrolled in time ----------------------------------------------------------
__all__ += ["lstm_unrolled_diagram"]

_CH3_STEP_COLOUR = "#f4f4f4"
_CH3_HIDDEN_COLOUR = "C0"


def _ch3_time(k: int, steps: int) -> str:
    """The time index of step ``k`` of ``steps``, centred on t: t-1, t, t+1 for three steps
    (``k = -1``: the step before the first)."""
    offset = k - steps // 2
    return "t" if offset == 0 else f"t{offset:+d}"


def lstm_unrolled_diagram(steps: int = 3) -> Figure:
    """The LSTM over ``steps`` consecutive steps, reduced to its two state paths.

    The cell state (red) runs along the top: in every step the old cell is multiplied by the
    forget gate (``⊙``) and the gated write is added (``+``); that path is the only one from
    ``c_{t-1}`` to ``c_{t+1}`` that meets no weight matrix: ``∂c_T/∂c_t = ∏ diag(f_s)`` along
    it. The hidden state (blue) runs along the bottom: it enters each step, feeds the gates,
    and a new one leaves it, ``h_t = o_t ⊙ tanh(c_t)``, tapped off the new cell."""
    if not isinstance(steps, int) or isinstance(steps, bool) or not 2 <= steps <= 5:
        raise ValueError(f"expected between 2 and 5 steps, got {steps!r}")
    pitch, inner = 5.0, 3.8                      # one step's share of the width, its box
    width = pitch * steps + 1.3
    cv = _Canvas(width, 5.7, f"the LSTM unrolled over {steps} steps: its two state paths")
    top, gates, product, bus = 3.75, 2.35, 2.35, 0.95
    names = [_ch3_time(k, steps) for k in range(-1, steps)]   # the state before the first step too
    before, names = names[0], names[1:]
    cv.label(0.05, top + 0.2, rf"$c_{{{before}}}$", fontsize=12)
    cv.label(0.05, bus + 0.2, rf"$h_{{{before}}}$", fontsize=12, color=_CH3_HIDDEN_COLOUR)
    cell_from, hidden_from = 0.1, 0.1
    for k, name in enumerate(names):
        x0 = 0.75 + pitch * k
        cv.ax.add_patch(FancyBboxPatch((x0, 0.45), inner, 4.0, boxstyle="round,pad=0.05",
                                       fc=_CH3_STEP_COLOUR, ec="0.6", lw=1))
        cv.label(x0 + inner / 2, 4.22, f"step {name}", fontsize=11, ha="center", color="0.3")
        times, plus, out = x0 + 0.55, x0 + 1.55, x0 + 2.55
        # the cell state: forget, then write
        cv.arrow([(cell_from, top), (times - 0.27, top)], _HIGHWAY_COLOUR, lw=2.4)
        cv.node(times, top, "⊙")
        cv.arrow([(times + 0.27, top), (plus - 0.27, top)], _HIGHWAY_COLOUR, lw=2.4)
        cv.node(plus, top, "+")
        cv.box(times, gates, "σ", _GATE_COLOUR, width=0.6, height=0.5)
        cv.label(times + 0.14, 2.98, rf"$f_{{{name}}}$", fontsize=12, va="center")   # clear of the arrow
        cv.box(plus, gates, r"$i\odot\tilde c$", _CANDIDATE_COLOUR, width=0.95, height=0.5)
        cv.arrow([(times, gates + 0.25), (times, top - 0.27)])
        cv.arrow([(plus, gates + 0.25), (plus, top - 0.27)])
        # the new hidden state, read off the new cell: o ⊙ tanh(c)
        cv.ax.plot([out], [top], "o", color=_HIGHWAY_COLOUR, ms=4, zorder=4)
        cv.ax.add_patch(Circle((out, 3.1), 0.42, fc="white", ec="0.2", lw=1, zorder=3))
        cv.ax.text(out, 3.1, "tanh", ha="center", va="center", fontsize=10.5, zorder=4)
        cv.arrow([(out, top), (out, 3.1 + 0.42)], _HIGHWAY_COLOUR, lw=1.2)
        cv.node(out, product, "⊙")
        cv.arrow([(out, 3.1 - 0.42), (out, product + 0.27)])
        cv.box(out, 1.6, "σ", _GATE_COLOUR, width=0.6, height=0.5)
        cv.label(out + 0.34, 1.6, rf"$o_{{{name}}}$", fontsize=12, va="center")   # inside the step's box
        cv.arrow([(out, 1.6 + 0.25), (out, product - 0.27)])
        # the hidden state that came in feeds the three gates (with x), then ends here
        cv.arrow([(hidden_from, bus), (out, bus)], _CH3_HIDDEN_COLOUR, lw=1.8, head=False)
        for x in (times, plus, out):
            cv.arrow([(x, bus), (x, gates - 0.25 if x != out else 1.6 - 0.25)], colour="0.45")
        cv.label(x0 + 1.1, 0.02, rf"$x_{{{name}}}$", ha="center", va="bottom", fontsize=12)
        cv.arrow([(x0 + 1.1, 0.42), (x0 + 1.1, bus)], colour="0.45", head=False)
        cv.ax.plot([x0 + 1.1], [bus], "o", color="0.45", ms=3.5, zorder=4)
        # the new hidden state leaves the step and drops to the next step's bus
        turn = x0 + inner + (pitch - inner) / 2
        last = k + 1 == steps
        cv.arrow([(out + 0.27, product), (turn, product), (turn, bus), (turn + 0.3, bus)]
                 if not last else [(out + 0.27, product), (width - 0.1, product)],
                 _CH3_HIDDEN_COLOUR, lw=1.8, head=last)
        hidden_from = turn
        cell_from = plus + 0.27
        if not last:
            cv.label(turn, top + 0.2, rf"$c_{{{name}}}$", ha="center", fontsize=12)
            # beside the drop to the next step's bus, clear of the boxes
            cv.label(turn + 0.1, (product + bus) / 2, rf"$h_{{{name}}}$", ha="left",
                     va="center", fontsize=12, color=_CH3_HIDDEN_COLOUR)
    cv.arrow([(cell_from, top), (width - 0.1, top)], _HIGHWAY_COLOUR, lw=2.4)
    cv.label(width - 0.45, top + 0.2, rf"$c_{{{names[-1]}}}$", ha="center", fontsize=12)
    cv.label(width - 0.45, product + 0.2, rf"$h_{{{names[-1]}}}$", ha="center", fontsize=12,
             color=_CH3_HIDDEN_COLOUR)
    cv.label(0.05, 5.3, "red: the cell state c, multiplied only by the forget gates",
             fontsize=11, ha="left", color=_HIGHWAY_COLOUR)
    cv.label(0.05, 4.92, "blue: the hidden state h, computed anew in every step from the new cell",
             fontsize=11, ha="left", color=_CH3_HIDDEN_COLOUR)
    scale = 9.6 / (pitch * 3 + 1.3)    # three steps fill the width
    cv.fig.set_size_inches(scale * width, scale * 5.7)
    return cv.fig


# -- chapter 4: a beam search drawn as a tree ----------------------------------------------------
__all__ += ["beam_tree_layout", "beam_tree_diagram"]

Prefix = tuple  # token ids, starting with <bos>


def beam_tree_layout(steps: list[list[Prefix]], finished: list[Prefix],
                     log_prob: Callable[[Prefix], float]) -> dict[Prefix, tuple[int, int]]:
    """Grid places ``(column, row)`` for the nodes of a beam search's tree.

    ``steps[t]`` holds the prefixes the search kept after ``t`` tokens (``steps[0]`` is the
    root, ``(<bos>,)``); ``finished`` the hypotheses it set aside, each a prefix ending in
    ``<eos>``. A node's column is its number of tokens after ``<bos>``. Within a column the
    nodes are sorted by their parent's row, then by ``log_prob`` (best first), so the edges
    from one column to the next never cross and siblings sit together under their parent."""
    nodes = {p for prefixes in steps for p in prefixes} | set(finished)
    if not nodes:
        raise ValueError("expected at least one prefix in steps or finished, got none")
    columns: dict[int, list[Prefix]] = {}
    for p in nodes:
        if len(p) > 1 and p[:-1] not in nodes:
            raise ValueError(f"expected every prefix's parent in the tree; {p!r} has none")
        columns.setdefault(len(p) - 1, []).append(p)
    place: dict[Prefix, tuple[int, int]] = {}
    for column in sorted(columns):
        ordered = sorted(columns[column],
                         key=lambda p: (place[p[:-1]][1] if len(p) > 1 else 0, -log_prob(p), p))
        for row, p in enumerate(ordered):
            place[p] = (column, row)
    return place


def _ch4_shown(token: str) -> str:
    """A token as the tree writes it: punctuation in quotes, so that '.' and ',' stay visible."""
    return token if any(ch.isalnum() for ch in token) or token.startswith("<") else f"'{token}'"


def beam_tree_diagram(steps: list[list[Prefix]], finished: list[Prefix], best: Prefix,
                      log_prob: Callable[[Prefix], float], token: Callable[[int], str],
                      title: str) -> Figure:
    """A beam search as a tree, read from the top down: one row per step, each node a token
    with the log-probability of the prefix it ends underneath.

    ``best`` (one of ``finished``) is drawn in red; the other finished hypotheses and the
    prefixes that lead to one in black; the prefixes the search kept for a while and then
    dropped (not among the returned ones, nor leading to one) in grey, with dashed edges.
    Finished hypotheses (ending in ``<eos>``) have a framed box. ``token(id)`` gives a token's text. Layout: :func:`beam_tree_layout` (its
    columns are the rows here, its rows the places from left to right)."""
    if best not in finished:
        raise ValueError("expected best to be one of the finished hypotheses")
    place = beam_tree_layout(steps, finished, log_prob)
    leads_on = {p[:k] for p in finished for k in range(1, len(p) + 1)}
    levels = max(c for c, _ in place.values()) + 1
    across = max(r for _, r in place.values()) + 1
    pitch = 1.4                      # rows apart, in units of one place across: steeper links
    fig, ax = plt.subplots(figsize=(7.0, 1.1 + 0.46 * pitch * levels))
    colours = {"best": "C3", "kept": "0.1", "dropped": "0.4"}   # dropped: still legible
    link_colours = {**colours, "dropped": "0.75"}   # dropped links light, behind the labels
    for p, (level, rank) in place.items():
        kind = "best" if best[:len(p)] == p else ("kept" if p in leads_on else "dropped")
        colour, x, y = colours[kind], rank, -level * pitch
        if len(p) > 1:
            parent_level, parent_rank = place[p[:-1]]
            ax.plot([parent_rank, x], [-parent_level * pitch - 0.42, y + 0.22],
                    color=link_colours[kind], lw=2.0 if kind == "best" else 0.9,
                    ls="--" if kind == "dropped" else "-", zorder=0.5 if kind == "dropped" else 1)
        # a tight white frame: it hides any link under the word's letters, and with only
        # about 10 pt between a word's centre and its score's, a wider one would clip the score
        frame = dict(boxstyle="round,pad=0.04", fc="white",
                     ec=colour if p in finished else "none", lw=1.0)
        ax.text(x, y + 0.05, _ch4_shown(token(p[-1])), ha="center", va="center",
                fontsize=9, color=colour, zorder=3, bbox=frame,   # above its score's frame
                fontweight="bold" if kind == "best" else "normal")
        if len(p) > 1:
            # two decimals and a true minus sign, on white so that no link runs through them
            ax.text(x, y - 0.27, f"{log_prob(p):.2f}".replace("-", "\u2212"), ha="center",
                    va="center", fontsize=8, color=colour, zorder=2,
                    bbox=dict(boxstyle="square,pad=0.2", fc="white", ec="none"))
    for level in range(1, levels):
        ax.text(-0.55, -level * pitch + 0.05, f"{level}", ha="right", va="center", fontsize=8,
                color="0.4")
    ax.text(-0.55, 0.05, "step", ha="right", va="center", fontsize=8, color="0.4")
    handles = [plt.Line2D([], [], color=colours["best"], lw=2.0, label="the best translation"),
               plt.Line2D([], [], color=colours["kept"], lw=0.9,
                          label="leads to a returned translation"),
               plt.Line2D([], [], color=link_colours["dropped"], lw=0.9, ls="--",
                          label="not among the k returned"),
               plt.Line2D([], [], ls="none", marker="s", mfc="none", mec="0.3", ms=9,
                          label="framed: <eos>, a finished hypothesis"),
               plt.Line2D([], [], ls="none", label="punctuation in quotes: '.'")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2,
              fontsize=8.5, frameon=False)
    ax.set_title(title, fontsize=9.5)
    ax.set_xlim(-0.9, max(across, 4) - 0.5)
    ax.set_ylim(-(levels - 1) * pitch - 0.5, 0.45)
    ax.axis("off")
    return fig
