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
            mid = x + gap / 2
            panel.arrow([(x + 0.45, 3.6), (mid, 3.6), (mid, 0.55), (dec_x[j + 1] - 0.42, 0.55)],
                        colour="0.55", lw=0.9)
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
    width, height = 12.5, 4.4
    top = _Ch4Panel(axes[0], width, height, "training (teacher forcing): the decoder reads the "
                    "reference, tgt_in, and is scored on the next word, tgt_out")
    _ch4_encoder_decoder(top, source, ["<bos>", "le", "chat", "mange", "."],
                         ["le", "chat", "mange", ".", "<eos>"], fed_back=False)
    bottom = _Ch4Panel(axes[1], width, height, "inference (greedy): each output is fed back as "
                       "the next input, until <eos>")
    _ch4_encoder_decoder(bottom, source, ["<bos>", "le", "chien", "mange", "."],
                         ["le", "chien", "mange", ".", "<eos>"], fed_back=True, mistakes=(1,))
    for panel in (top, bottom):
        panel.label(0.5, 0.0, "encoder: the source, reversed", fontsize=8.5, color="0.35")
        panel.label(6.3, 0.0, "decoder", fontsize=8.5, color="0.35")
    top.label(width - 0.05, 0.0, "loss: the mean of the −log p", fontsize=8.5, ha="right",
              color="0.35")
    bottom.label(width - 0.05, 0.0, "orange: a wrong word, read by the next step",
                 fontsize=8.5, ha="right", color=_CH4_MISTAKE_COLOUR)
    fig.tight_layout()
    return fig


# -- chapter 3: the LSTM unrolled in time ----------------------------------------------------------
__all__ += ["lstm_unrolled_diagram"]

_CH3_STEP_COLOUR = "#f4f4f4"


def _ch3_time(k: int, steps: int) -> str:
    """The time index of step ``k`` of ``steps``, centred on t: t-1, t, t+1 for three steps
    (``k = -1``: the step before the first)."""
    offset = k - steps // 2
    return "t" if offset == 0 else f"t{offset:+d}"


def lstm_unrolled_diagram(steps: int = 3) -> Figure:
    """The LSTM over ``steps`` consecutive steps, reduced to the cell state's path: in every step
    the old cell is multiplied by the forget gate (``⊙``) and the gated write is added (``+``).
    Drawn in red, that path is the only one from ``c_{t-1}`` to ``c_{t+1}`` that meets no weight
    matrix: ``∂c_T/∂c_t = ∏ diag(f_s)`` along it."""
    if not isinstance(steps, int) or isinstance(steps, bool) or not 2 <= steps <= 5:
        raise ValueError(f"expected between 2 and 5 steps, got {steps!r}")
    width = 3.3 * steps + 1.4
    cv = _Canvas(width, 5.0, f"the LSTM unrolled over {steps} steps: the cell state's path")
    top, gates, bus = 3.7, 2.3, 0.95
    names = [_ch3_time(k, steps) for k in range(-1, steps)]   # the state before the first step too
    before, names = names[0], names[1:]
    cv.label(0.05, top + 0.18, rf"$c_{{{before}}}$", fontsize=11)
    cv.label(0.05, bus + 0.18, rf"$h_{{{before}}}$", fontsize=11)
    previous = 0.1
    for k, name in enumerate(names):
        x0 = 0.7 + 3.3 * k
        cv.ax.add_patch(FancyBboxPatch((x0, 0.45), 2.9, 3.95, boxstyle="round,pad=0.05",
                                       fc=_CH3_STEP_COLOUR, ec="0.6", lw=1))
        cv.label(x0 + 1.45, 4.15, f"step {name}", fontsize=9, ha="center", color="0.3")
        times, plus = x0 + 0.8, x0 + 2.1
        cv.arrow([(previous, top), (times - 0.27, top)], _HIGHWAY_COLOUR, lw=2.4)
        cv.node(times, top, "⊙")
        cv.arrow([(times + 0.27, top), (plus - 0.27, top)], _HIGHWAY_COLOUR, lw=2.4)
        cv.node(plus, top, "+")
        cv.box(times, gates, "σ", _GATE_COLOUR, rf"$f_{{{name}}}$", width=0.7, height=0.5)
        cv.box(plus, gates, rf"$i\odot\tilde c$", _CANDIDATE_COLOUR, width=1.0, height=0.5)
        cv.arrow([(times, gates + 0.25), (times, top - 0.27)])
        cv.arrow([(plus, gates + 0.25), (plus, top - 0.27)])
        # the gates read the previous output and the input (the grey bus)
        for x in (times, plus):
            cv.arrow([(x, bus), (x, gates - 0.25)], colour="0.55")
        cv.label(x0 + 1.45, 0.05, rf"$x_{{{name}}}$", ha="center", va="bottom", fontsize=11)
        cv.arrow([(x0 + 1.45, 0.4), (x0 + 1.45, bus)], colour="0.55", head=False)
        previous = plus + 0.27
        if k + 1 < steps:
            cv.label(x0 + 3.1, top + 0.18, rf"$c_{{{name}}}$", ha="center", fontsize=11)
    cv.arrow([(previous, top), (width - 0.15, top)], _HIGHWAY_COLOUR, lw=2.4)
    cv.label(width - 0.45, top + 0.18, rf"$c_{{{names[-1]}}}$", ha="center", fontsize=11)
    cv.label(width - 0.45, bus + 0.18, rf"$h_{{{names[-1]}}}$", ha="center", fontsize=11)
    cv.arrow([(0.1, bus), (width - 0.15, bus)], colour="0.55")
    cv.label(width - 0.1, 4.75, r"red: the cell state, multiplied only by the forget gates",
             fontsize=8, ha="right", color=_HIGHWAY_COLOUR)
    return cv.fig
