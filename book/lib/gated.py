"""Gated recurrent layers written from their equations: the LSTM and the GRU.

Both follow PyTorch's equations exactly (so ``from_torch`` gives the same numbers), are
batch-first, and keep the recurrent-layer contract of the book::

    outputs, final_state = layer(X, state=None)     # X: (batch, time, input_size)

``outputs`` is ``(batch, time, hidden)``; the LSTM's state is the pair ``(h, c)``, each
``(batch, hidden)``, the GRU's state is ``h``. ``layer.run(X)`` returns a :class:`Trace`
with every step's state and gate values, kept as nodes of the autograd graph, so that
``torch.autograd.grad(h_T, h_t)`` measures how the last state depends on an earlier one.

LSTM (PyTorch's gate order i, f, g, o)::

    i = σ(W_ii x + b_ii + W_hi h + b_hi)        input gate
    f = σ(W_if x + b_if + W_hf h + b_hf)        forget gate
    g = tanh(W_ig x + b_ig + W_hg h + b_hg)     candidate (chapter 3 writes it \\tilde c_t)
    o = σ(W_io x + b_io + W_ho h + b_ho)        output gate
    c' = f * c + i * g,   h' = o * tanh(c')

GRU (PyTorch's gate order r, z, n)::

    r = σ(W_ir x + b_ir + W_hr h + b_hr)        reset gate
    z = σ(W_iz x + b_iz + W_hz h + b_hz)        update gate
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    h' = (1 - z) * n + z * h
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from . import checks
from .seeding import seeded

__all__ = ["LSTMScratch", "GRUScratch", "CoupledLSTMScratch", "Trace", "set_forget_bias", "set_gate_bias", "memory_init",
           "count_parameters", "KINDS"]

# PyTorch's recurrent layers by name (chapter 3's experiments build them from a name)
KINDS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


@dataclass
class Trace:
    """Everything one forward pass computed, step by step.

    ``states[name]`` is a list with one ``(batch, hidden)`` tensor per time step
    (``"h"`` and, for the LSTM, ``"c"``); ``gates[name]`` likewise for each gate.
    The tensors are the ones the computation used, so gradients flow between them.
    """

    outputs: torch.Tensor
    final_state: object
    states: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    gates: dict[str, list[torch.Tensor]] = field(default_factory=dict)

    def gate_matrix(self, name: str, sample: int = 0) -> torch.Tensor:
        """The gate ``name`` for one sequence of the batch, as a ``(hidden, time)`` matrix."""
        if name not in self.gates:
            raise KeyError(f"unknown gate {name!r}; this trace has {sorted(self.gates)}")
        return torch.stack([g[sample] for g in self.gates[name]], dim=1).detach()


class _GatedBase(nn.Module):
    """Parameters laid out as in PyTorch: ``n_gates`` blocks of ``hidden_size`` rows each."""

    n_gates = 1
    gate_names: tuple[str, ...] = ()
    torch_class: type = nn.Module

    def __init__(self, input_size: int, hidden_size: int, seed: int | None = None):
        super().__init__()
        self.input_size, self.hidden_size = checks.positive_ints(input_size=input_size, hidden_size=hidden_size)
        G = self.n_gates * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(G, input_size))
        self.weight_hh = nn.Parameter(torch.empty(G, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(G))
        self.bias_hh = nn.Parameter(torch.empty(G))
        with seeded(seed):  # seed=None: PyTorch's global generator, as nn.LSTM / nn.GRU use
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialisation: every entry uniform in ±1/√hidden."""
        bound = 1 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"

    def block(self, tensor: torch.Tensor, gate: str) -> torch.Tensor:
        """The rows (or entries) of a stacked parameter that belong to ``gate``."""
        k = self.gate_names.index(gate)
        return tensor[k * self.hidden_size:(k + 1) * self.hidden_size]

    @classmethod
    def from_torch(cls, module: nn.Module):
        """A scratch layer holding a copy of the weights of a one-layer, unidirectional,
        batch-first ``nn.LSTM`` / ``nn.GRU`` with biases."""
        checks.torch_module(module, cls.torch_class)
        checks.built_with([("num_layers=1", module.num_layers != 1), ("bidirectional=False", module.bidirectional),
                           ("batch_first=True", not module.batch_first), ("bias=True", not module.bias),
                           ("proj_size=0", getattr(module, "proj_size", 0) != 0)],
                          "use one scratch layer per torch layer and direction")
        layer = cls(module.input_size, module.hidden_size)
        layer = layer.to(device=module.weight_ih_l0.device, dtype=module.weight_ih_l0.dtype)
        with torch.no_grad():
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(layer, name).copy_(getattr(module, name + "_l0"))
        return layer

    def _initial(self, X: torch.Tensor) -> torch.Tensor:
        return X.new_zeros(X.shape[0], self.hidden_size)

    def forward(self, X: torch.Tensor, state=None):
        """``X``: ``(batch, time, input_size)`` -> ``(outputs (batch, time, hidden), final_state)``."""
        trace = self.run(X, state)
        return trace.outputs, trace.final_state


class LSTMScratch(_GatedBase):
    """The LSTM of Hochreiter & Schmidhuber (1997) with the forget gate of Gers et al. (2000)."""

    n_gates = 4
    gate_names = ("i", "f", "g", "o")
    torch_class = nn.LSTM

    def _state(self, X, state):
        if state is None:
            return self._initial(X), self._initial(X)
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            raise TypeError(f"expected the LSTM state as a pair (h, c), each of shape (batch, hidden), "
                            f"got {checks.describe(state)}")
        shape = (X.shape[0], self.hidden_size)
        return tuple(checks.state_tensor(s, name, shape, "(batch, hidden)") for s, name in zip(state, "hc"))

    def step(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        """One time step.

        ``x (batch, input)``, ``h, c (batch, hidden)`` -> ``(h', c', gates)``. The
        gates' weights are stacked as in PyTorch, ``weight_ih`` (4 hidden, input),
        hence ``x @ weight_ih.T`` (chapter 2's W_xh was (input, hidden)).
        """
        pre = x @ self.weight_ih.T + self.bias_ih + h @ self.weight_hh.T + self.bias_hh
        a_i, a_f, a_g, a_o = pre.chunk(4, dim=-1)
        i, f, o = torch.sigmoid(a_i), torch.sigmoid(a_f), torch.sigmoid(a_o)
        g = torch.tanh(a_g)
        c = f * c + i * g  # additive: dc'/dc = f, no squashing on the way
        h = o * torch.tanh(c)
        return h, c, {"i": i, "f": f, "g": g, "o": o}

    def run(self, X: torch.Tensor, state=None) -> Trace:
        """The forward pass with every step's ``h``, ``c`` and gates recorded (see :class:`Trace`)."""
        checks.sequence(X, self.input_size)
        h, c = self._state(X, state)
        trace = Trace(outputs=None, final_state=None, states={"h": [], "c": []},
                      gates={k: [] for k in self.gate_names})
        for t in range(X.shape[1]):
            h, c, gates = self.step(X[:, t], h, c)
            trace.states["h"].append(h)
            trace.states["c"].append(c)
            for k, v in gates.items():
                trace.gates[k].append(v)
        trace.outputs = torch.stack(trace.states["h"], dim=1)
        trace.final_state = (h, c)
        return trace


class GRUScratch(_GatedBase):
    """The gated recurrent unit (Cho et al. 2014) in PyTorch's form: the reset gate multiplies
    ``W_hn h + b_hn`` (not ``h``), and ``z`` is the share of the OLD state that is kept."""

    n_gates = 3
    gate_names = ("r", "z", "n")
    torch_class = nn.GRU

    def _state(self, X, state):
        if state is None:
            return self._initial(X)
        if isinstance(state, (tuple, list)):
            raise TypeError("expected the GRU state as one tensor h of shape (batch, hidden), got a "
                            f"{type(state).__name__} (an LSTM state?)")
        return checks.state_tensor(state, "h", (X.shape[0], self.hidden_size), "(batch, hidden)")

    def step(self, x: torch.Tensor, h: torch.Tensor):
        """One time step.

        ``x (batch, input)``, ``h (batch, hidden)`` -> ``(h', gates)``. The weights are
        stacked as in PyTorch, ``weight_ih`` (3 * hidden, input): ``x @ weight_ih.T``.
        """
        xr, xz, xn = (x @ self.weight_ih.T + self.bias_ih).chunk(3, dim=-1)
        hr, hz, hn = (h @ self.weight_hh.T + self.bias_hh).chunk(3, dim=-1)
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        return h, {"r": r, "z": z, "n": n}

    def run(self, X: torch.Tensor, state=None) -> Trace:
        """The forward pass with every step's ``h`` and gates recorded (see :class:`Trace`)."""
        checks.sequence(X, self.input_size)
        h = self._state(X, state)
        trace = Trace(outputs=None, final_state=None, states={"h": []},
                      gates={k: [] for k in self.gate_names})
        for t in range(X.shape[1]):
            h, gates = self.step(X[:, t], h)
            trace.states["h"].append(h)
            for k, v in gates.items():
                trace.gates[k].append(v)
        trace.outputs = torch.stack(trace.states["h"], dim=1)
        trace.final_state = h
        return trace


class CoupledLSTMScratch(LSTMScratch):
    """An LSTM with coupled input and forget gates (Greff et al. 2017's "CIFG"): ``i = 1 - f``,
    so the cell writes exactly as much as it forgets. It keeps the LSTM's parameter layout
    (the input-gate rows are simply unused), so ``from_torch`` still works."""

    def step(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        pre = x @ self.weight_ih.T + self.bias_ih + h @ self.weight_hh.T + self.bias_hh
        _, a_f, a_g, a_o = pre.chunk(4, dim=-1)
        f, g, o = torch.sigmoid(a_f), torch.tanh(a_g), torch.sigmoid(a_o)
        i = 1 - f
        c = f * c + i * g
        h = o * torch.tanh(c)
        return h, c, {"i": i, "f": f, "g": g, "o": o}


_GATES = {nn.LSTM: LSTMScratch.gate_names, nn.GRU: GRUScratch.gate_names}


def set_gate_bias(module: nn.Module, gate: str, value: float):
    """Make the total bias of one gate (``b_i* + b_h*``) equal ``value``, in the first layer of
    an LSTM or GRU, scratch or PyTorch. Returns ``module``.

    The bias sits in both of PyTorch's bias vectors, so one gets ``value`` and the other 0.
    With small weights the gate starts near ``σ(value)``: 0.5 for 0, 0.73 for 1, 0.95 for 3.
    For the GRU's candidate ``n`` the reset gate scales ``b_hn``, so both parts are set.
    """
    if isinstance(module, _GatedBase):
        names, b_ih, b_hh = module.gate_names, module.bias_ih, module.bias_hh
    elif type(module) in _GATES:
        if not module.bias:
            raise ValueError(f"expected an nn.{type(module).__name__} with bias=True: there is no bias to set")
        names, b_ih, b_hh = _GATES[type(module)], module.bias_ih_l0, module.bias_hh_l0
    else:
        raise TypeError(f"expected an LSTM or GRU (scratch or torch), got {type(module).__name__}")
    checks.one_of(gate, names, "the gate")
    k, H = names.index(gate), module.hidden_size
    with torch.no_grad():
        b_ih[k * H:(k + 1) * H] = float(value)
        b_hh[k * H:(k + 1) * H] = 0.0
    return module


def set_forget_bias(module: nn.Module, value: float):
    """An LSTM's forget-gate bias (see :func:`set_gate_bias`)."""
    if isinstance(module, (GRUScratch, nn.GRU)):
        raise TypeError("a GRU has no forget gate: its update gate z plays that role "
                        "(set_gate_bias(module, 'z', value))")
    return set_gate_bias(module, "f", value)


def memory_init(module: nn.Module, strength: float = 3.0):
    """Start a gated layer as a quiet, long memory: the gate that keeps the old state
    open, the gate that writes new content nearly shut.

    LSTM: forget bias ``+strength``, input bias ``-strength``
    (f ≈ 0.95, i ≈ 0.05 for 3).
    GRU: update bias ``+strength`` (z ≈ 0.95 keeps 95% of the old state, writes 5%).
    Returns ``module``."""
    if isinstance(module, (LSTMScratch, nn.LSTM)):
        set_gate_bias(module, "f", strength)
        return set_gate_bias(module, "i", -strength)
    if isinstance(module, (GRUScratch, nn.GRU)):
        return set_gate_bias(module, "z", strength)
    raise TypeError("expected an LSTM or GRU (scratch or torch), "
                    f"got {type(module).__name__}")


def count_parameters(module: nn.Module) -> int:
    """The number of trainable numbers in ``module``."""
    checks.torch_module(module, nn.Module)
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
