"""Checkers for the exercises of chapter 3 (LSTM, GRU, bidirectional and stacked RNNs).

Right answers are computed here from the exercise's data (never typed in), and each checker
tries the usual mistakes first so that a wrong answer gets a hint that names the mistake.
"""

from __future__ import annotations

import math

import torch

from ..bidirectional import Bidirectional
from ..gated import CoupledLSTMScratch, GRUScratch, LSTMScratch
from ..seeding import seeded
from .core import Wrong, checker, close, number, require_function

# -- the data of the exercises (the chapter's exercise text states them) --------------------------
COUNT_SIZES = dict(input_size=3, hidden_size=5)   # count the parameters of PyTorch's LSTM and GRU
MEMORY_BIASES = (0.0, 1.0, 3.0)                   # forget-gate biases; memory falls below 1% when?
MEMORY_FRACTION = 0.01

__all__ = ["check_parameter_counts", "check_memory_steps", "check_gru_jacobian",
           "check_lstm_cell_jacobian", "check_coupled_step", "check_chung_update",
           "check_bidirectional",
           "check_peephole_step", "peephole_reference", "COUNT_SIZES", "MEMORY_BIASES", "MEMORY_FRACTION"]


def _tensor(value, shape: tuple, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise Wrong(f"expected {what} as a torch.Tensor of shape {shape}, got {type(value).__name__}.")
    if tuple(value.shape) != shape:
        raise Wrong(f"expected {what} of shape {shape}, got {tuple(value.shape)}.")
    return value.detach().float()


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=1e-5, rtol=1e-4))


# -- exercise: count the parameters of PyTorch's LSTM and GRU by hand --------------------------
@checker
def check_parameter_counts(lstm_params, gru_params) -> str:
    """The numbers of parameters of ``nn.LSTM`` and ``nn.GRU`` with :data:`COUNT_SIZES`."""
    I, H = COUNT_SIZES["input_size"], COUNT_SIZES["hidden_size"]
    lstm = number(lstm_params, "the LSTM's number of parameters")
    gru = number(gru_params, "the GRU's number of parameters")
    per_block = H * I + H * H + 2 * H   # W_i*, W_h*, b_i*, b_h* of one gate
    right = {"LSTM": 4 * per_block, "GRU": 3 * per_block}
    for name, value, k in (("LSTM", lstm, 4), ("GRU", gru, 3)):
        if value == right[name]:
            continue
        if value == right["GRU" if name == "LSTM" else "LSTM"]:
            raise Wrong(f"{name}: {value:g} is the other layer's count. The LSTM has four blocks "
                        "(i, f, g, o), the GRU three (r, z, n).")
        if value == k * (H * I + H * H + H):
            raise Wrong(f"{name}: {value:g} counts one bias per block. PyTorch keeps two, b_i* and b_h* "
                        "(they only ever appear as a sum, but both are parameters).")
        if value == per_block:
            raise Wrong(f"{name}: {value:g} is one block, a plain RNN's count. Every gate has its own "
                        f"weights: multiply by the number of blocks ({k}).")
        if value == k * (H * H + 2 * H) or value == k * (H * I + 2 * H):
            raise Wrong(f"{name}: {value:g} leaves out one of the two weight matrices: each block has "
                        f"W_i* of shape ({H}, {I}) and W_h* of shape ({H}, {H}).")
        if value == k * (H * I + H * H):
            raise Wrong(f"{name}: {value:g} forgets the biases (two vectors of {H} per block).")
        raise Wrong(f"{name}: {value:g} is not it. Count one block (two weight matrices, two bias "
                    f"vectors) and multiply by the number of blocks.")
    return (f"LSTM {right['LSTM']}, GRU {right['GRU']}: 4 and 3 times a plain RNN's {per_block} "
            f"(with PyTorch's two bias vectors).")


# -- exercise: how long does a cell remember with a given forget-gate bias? --------------------
def memory_steps(bias: float, fraction: float = MEMORY_FRACTION) -> int:
    """The fewest steps ``k`` with ``sigmoid(bias) ** k < fraction``."""
    f = 1 / (1 + math.exp(-bias))
    k = math.log(fraction) / math.log(f)
    return math.floor(k) + 1


@checker
def check_memory_steps(k_bias0, k_bias1, k_bias3) -> str:
    """The fewest steps after which a cell keeps less than 1% of its content when its forget
    gate stays at sigma(b) (input gate shut), for b = 0, 1 and 3."""
    answers = [number(a, f"the number of steps for b_f = {b:g}") for a, b in zip((k_bias0, k_bias1, k_bias3),
                                                                                  MEMORY_BIASES)]
    for value, b in zip(answers, MEMORY_BIASES):
        f = 1 / (1 + math.exp(-b))
        right = memory_steps(b)
        exact = math.log(MEMORY_FRACTION) / math.log(f)
        if value == right:
            continue
        if close(value, f, rel=1e-2):
            raise Wrong(f"b_f = {b:g}: {value:g} is the forget gate's value sigma({b:g}) itself; the question is "
                        f"how many steps k it takes until sigma({b:g})^k < {MEMORY_FRACTION}.")
        if close(value, exact, rel=1e-3) or value == math.floor(exact):
            raise Wrong(f"b_f = {b:g}: {value:g} solves f^k = {MEMORY_FRACTION} (k = {exact:.2f}) without rounding "
                        "or rounded down; after that many steps the cell still holds more than 1%. "
                        "The answer is a whole number of steps: round up.")
        if b != 0 and value == memory_steps(0.0):
            raise Wrong(f"b_f = {b:g}: {value:g} is the answer for b_f = 0. The gate starts at sigma(b), "
                        f"{f:.4f} here, not 0.5.")
        raise Wrong(f"b_f = {b:g}: {value:g} is not it. Solve sigma(b)^k < {MEMORY_FRACTION} for the "
                    "smallest integer k (take logarithms; both sides are negative).")
    k0, k1, k3 = (memory_steps(b) for b in MEMORY_BIASES)
    f3 = 1 / (1 + math.exp(-MEMORY_BIASES[-1]))
    return (f"{k0}, {k1} and {k3} steps. A bias of 1 doubles the memory at the start of training, "
            f"a bias of 3 makes it {k3 / k0:.0f} times longer: sigma(3) = {f3:.4f}, and "
            f"{f3:.4f}^{k3 - 1} = {f3 ** (k3 - 1):.2%} is still above 1%, {f3:.4f}^{k3} = "
            f"{f3 ** k3:.2%} below it.")


# -- exercise: the GRU's Jacobian, derived by hand ------------------------------------------------
def gru_jacobian_terms(gru: GRUScratch, x: torch.Tensor, h: torch.Tensor) -> dict:
    """The four terms of ``∂h_t/∂h_{t-1}`` (rows: entries of ``h_t``) of one GRU step, for one
    sequence: ``x (input,)``, ``h (hidden,)``. Keys ``direct``, ``z``, ``n``, ``r``."""
    with torch.no_grad():
        xr, xz, xn = (x @ gru.weight_ih.T + gru.bias_ih).chunk(3)
        hr, hz, hn = (h @ gru.weight_hh.T + gru.bias_hh).chunk(3)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        W_hr, W_hz, W_hn = (gru.block(gru.weight_hh, k) for k in "rzn")
        d_n = (1 - z) * (1 - n ** 2)                        # (1 - z) tanh'(a_n)
        return {"direct": torch.diag(z),
                "z": torch.diag((h - n) * z * (1 - z)) @ W_hz,
                "n": torch.diag(d_n * r) @ W_hn,
                "r": torch.diag(d_n * hn * r * (1 - r)) @ W_hr}


def _jacobian_case(seed: int):
    gen = torch.Generator().manual_seed(seed)
    gru = GRUScratch(3, 4, seed=seed)
    with torch.no_grad():
        for p in gru.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return gru, torch.randn(3, generator=gen), torch.randn(4, generator=gen)


@checker
def check_gru_jacobian(gru_jacobian) -> str:
    """``gru_jacobian(gru, x, h) -> (hidden, hidden)``: ``∂h_t/∂h_{t-1}`` of one step of the
    :class:`~seqbook.gated.GRUScratch` ``gru`` at input ``x (input,)`` and previous state
    ``h (hidden,)``, computed from the derived formula; compared with autograd."""
    require_function(gru_jacobian)
    for seed in (0, 1):
        gru, x, h = _jacobian_case(seed)
        with torch.no_grad():
            out = gru_jacobian(gru, x.clone(), h.clone())
        J = _tensor(out, (4, 4), "the Jacobian (one row per entry of h_t, one column per entry "
                                 "of h_{t-1})")
        right = torch.autograd.functional.jacobian(
            lambda prev: gru.step(x[None], prev[None])[0][0], h).detach()
        if _same(J, right):
            continue
        terms = gru_jacobian_terms(gru, x, h)
        if _same(J, right.T):
            raise Wrong("that is the transpose: row j must hold the derivatives of h_t[j], "
                        "column k those with respect to h_{t-1}[k].")
        if _same(J, terms["direct"]):
            raise Wrong("that is only the direct term diag(z_t): z_t, n_t and r_t depend on "
                        "h_{t-1} too, and each adds a term.")
        for name, what in (("z", "through the update gate z_t"), ("n", "through W_hn inside "
                           "the candidate"), ("r", "through the reset gate r_t inside the "
                           "candidate")):
            if _same(J, right - terms[name]):
                raise Wrong(f"close: the term {what} is missing.")
        if _same(J, right - 2 * terms["z"]):
            raise Wrong("the update gate's term has the wrong sign: z_t multiplies h_{t-1} - n_t "
                        "(it keeps h_{t-1} and takes the share z_t away from n_t).")
        raise Wrong("not the Jacobian autograd finds. Differentiate each product of "
                    "h_t = (1 - z_t) * n_t + z_t * h_{t-1}: the direct path, z_t, n_t through "
                    "W_hn, and r_t inside n_t.")
    return ("your Jacobian matches autograd's on two random GRU steps, all four terms included.")


# -- exercise, part (b): the LSTM's dc_t/dc_{t-1} with the paths through h_{t-1} ---------------
def lstm_cell_jacobian_terms(lstm: LSTMScratch, x: torch.Tensor, c: torch.Tensor,
                             o: torch.Tensor) -> dict:
    """The four terms of ``∂c_t/∂c_{t-1}`` (rows: entries of ``c_t``) of one LSTM step, for one
    sequence, when ``h_{t-1} = o ⊙ tanh(c_{t-1})``: ``x (input,)``, ``c (hidden,)`` the previous
    cell, ``o (hidden,)`` the previous output gate. Keys ``direct``, ``f``, ``i``, ``g``, and
    ``g with sigma'`` (the candidate's term with the gates' derivative, a typical mistake)."""
    with torch.no_grad():
        h = o * torch.tanh(c)
        pre = x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh
        a_i, a_f, a_g, _ = pre.chunk(4)
        i, f, g = torch.sigmoid(a_i), torch.sigmoid(a_f), torch.tanh(a_g)
        D = torch.diag(o * (1 - torch.tanh(c) ** 2))          # dh_{t-1}/dc_{t-1}
        W_hi, W_hf, W_hg = (lstm.block(lstm.weight_hh, k) for k in "ifg")
        return {"direct": torch.diag(f),
                "f": torch.diag(c * f * (1 - f)) @ W_hf @ D,
                "i": torch.diag(g * i * (1 - i)) @ W_hi @ D,
                "g": torch.diag(i * (1 - g ** 2)) @ W_hg @ D,
                "g with sigma'": torch.diag(i * torch.sigmoid(a_g) * (1 - torch.sigmoid(a_g)))
                @ W_hg @ D,
                "no D": [torch.diag(c * f * (1 - f)) @ W_hf, torch.diag(g * i * (1 - i)) @ W_hi,
                         torch.diag(i * (1 - g ** 2)) @ W_hg]}


def _lstm_jacobian_case(seed: int):
    gen = torch.Generator().manual_seed(50 + seed)
    lstm = LSTMScratch(3, 4, seed=seed)   # (its weights are replaced below)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    x, c = torch.randn(3, generator=gen), 2 * torch.randn(4, generator=gen)
    return lstm, x, c, torch.rand(4, generator=gen)


@checker
def check_lstm_cell_jacobian(lstm_cell_jacobian) -> str:
    """``lstm_cell_jacobian(lstm, x, c, o) -> (hidden, hidden)``: ``∂c_t/∂c_{t-1}`` of one step
    of the :class:`~seqbook.gated.LSTMScratch` ``lstm`` at input ``x (input,)``, previous cell
    ``c (hidden,)`` and previous output gate ``o (hidden,)`` (so ``h_{t-1} = o * tanh(c)``),
    computed from the derived formula; compared with autograd."""
    require_function(lstm_cell_jacobian)
    for seed in (0, 1):
        lstm, x, c, o = _lstm_jacobian_case(seed)
        with torch.no_grad():
            out = lstm_cell_jacobian(lstm, x.clone(), c.clone(), o.clone())
        J = _tensor(out, (4, 4), "the Jacobian (one row per entry of c_t, one column per entry "
                                 "of c_{t-1})")
        right = torch.autograd.functional.jacobian(
            lambda prev: lstm.step(x[None], (o * torch.tanh(prev))[None], prev[None])[1][0],
            c).detach()
        if _same(J, right):
            continue
        terms = lstm_cell_jacobian_terms(lstm, x, c, o)
        if _same(J, right.T):
            raise Wrong("that is the transpose: row j must hold the derivatives of c_t[j], "
                        "column k those with respect to c_{t-1}[k].")
        if _same(J, terms["direct"]):
            raise Wrong("that is only diag(f_t), the text's formula with the gates held fixed. "
                        "The gates and the candidate read h_{t-1} = o_{t-1} * tanh(c_{t-1}): "
                        "add the three terms through the forget gate, the input gate and the "
                        "candidate.")
        for name, what in (("f", "through the forget gate (it multiplies c_{t-1})"),
                           ("i", "through the input gate (it multiplies the candidate)"),
                           ("g", "through the candidate (scaled by the input gate)")):
            if _same(J, right - terms[name]):
                raise Wrong(f"close: the term {what} is missing.")
        if _same(J, right - terms["g"] + terms["g with sigma'"]):
            raise Wrong("the candidate's term uses sigma'; the candidate is a tanh of its "
                        "pre-activation, so its term has tanh'(a_g) = 1 - tanh(a_g)^2.")
        if _same(J, terms["direct"] + sum(terms["no D"])):
            raise Wrong("the terms leave out dh_{t-1}/dc_{t-1} = diag(o_{t-1} * tanh'(c_{t-1})) "
                        "on the right: c_{t-1} reaches the gates only through h_{t-1}.")
        raise Wrong("not the Jacobian autograd finds. Differentiate each product of "
                    "c_t = f_t * c_{t-1} + i_t * g_t, where f_t, i_t and g_t depend on c_{t-1} "
                    "through h_{t-1} = o_{t-1} * tanh(c_{t-1}).")
    return ("your Jacobian matches autograd's on two random LSTM steps: diag(f_t) and the three "
            "terms through h_{t-1}.")


# -- exercise: the coupled input-forget gate (CIFG) -------------------------------------------
def _state_pair(out, h_right: torch.Tensor, c_right: torch.Tensor):
    """A cell step's returned ``(h_new, c_new)`` as two (2, 4) tensors, or a Wrong for another
    shape of answer or for the right pair in swapped order."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise Wrong(f"expected the pair (h_new, c_new), got {type(out).__name__}"
                    + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "") + ".")
    h_new = _tensor(out[0], (2, 4), "h_new")
    c_new = _tensor(out[1], (2, 4), "c_new")
    if _same(h_new, c_right) and _same(c_new, h_right):
        raise Wrong("the two are swapped: return (h_new, c_new), in that order.")
    return h_new, c_new


def _step_case(seed: int):
    gen = torch.Generator().manual_seed(seed)
    lstm = LSTMScratch(3, 4, seed=seed)  # (its weights are replaced below)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.8)
    x, h, c = (torch.randn(2, n, generator=gen) for n in (3, 4, 4))
    return lstm, x, h, c


@checker
def check_coupled_step(coupled_step) -> str:
    """``coupled_step(lstm, x, h, c) -> (h_new, c_new)``: one step of an LSTM whose input gate is
    ``1 - f``, using ``lstm``'s weights (an :class:`~seqbook.gated.LSTMScratch`; its input-gate
    rows are ignored)."""
    require_function(coupled_step)
    for seed in (0, 1):
        lstm, x, h, c = _step_case(seed)
        cifg = CoupledLSTMScratch(3, 4, seed=seed)
        cifg.load_state_dict(lstm.state_dict())
        with torch.no_grad():
            h_right, c_right, _ = cifg.step(x, h, c)
            h_plain, c_plain, _ = lstm.step(x, h, c)
            out = coupled_step(lstm, x.clone(), h.clone(), c.clone())
        h_new, c_new = _state_pair(out, h_right, c_right)
        if _same(c_new, c_plain):
            raise Wrong("that is the ordinary LSTM step: the input gate came from its own weights. "
                        "In the coupled cell, i = 1 - f.")
        pre = x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh
        _, a_f, a_g, a_o = pre.chunk(4, dim=-1)
        f, g, o = torch.sigmoid(a_f), torch.tanh(a_g), torch.sigmoid(a_o)
        if _same(c_new, f * c + f * g):
            raise Wrong("you used i = f; coupling means the cell writes what it forgets: i = 1 - f.")
        if _same(c_new, (1 - f) * c + f * g):
            raise Wrong("the roles are reversed: f multiplies the old cell c, and 1 - f the candidate g.")
        if _same(c_new, c_right) and _same(h_new, torch.tanh(c_right)):
            raise Wrong("the cell is right, but h_new = tanh(c_new) forgets the output gate o.")
        if _same(c_new, c_right) and _same(h_new, o * c_right):
            raise Wrong("the cell is right, but h_new squashes c_new with tanh first: h = o * tanh(c).")
        if not _same(c_new, c_right):
            raise Wrong("c_new is not f * c + (1 - f) * g, with f, g from lstm's weights (gate order i, f, g, o).")
        if not _same(h_new, h_right):
            raise Wrong("c_new is right but h_new is not o * tanh(c_new).")
    return "your coupled step matches CoupledLSTMScratch: the cell forgets exactly as much as it writes."


# -- exercise: a bidirectional layer from two one-directional ones --------------------------------
@checker
def check_bidirectional(bidirectional_outputs) -> str:
    """``bidirectional_outputs(fwd, bwd, X) -> (batch, time, 2 * hidden)``: ``fwd`` reads ``X``
    left to right, ``bwd`` right to left; step ``t`` gets both layers' outputs for step ``t``."""
    require_function(bidirectional_outputs)
    with seeded(3):  # the same case every time, without touching the reader's random stream
        fwd, bwd = GRUScratch(2, 3), GRUScratch(2, 3)
        X = torch.randn(2, 5, 2)
    with torch.no_grad():
        right = Bidirectional(fwd, bwd)(X)[0]
        out = bidirectional_outputs(fwd, bwd, X.clone())
        if isinstance(out, (tuple, list)) and len(out) == 2 and isinstance(out[0], torch.Tensor):
            raise Wrong("return only the outputs tensor (batch, time, 2 * hidden), not a pair.")
        out = _tensor(out, (2, 5, 6), "the outputs")
        f_out, b_out_rev = fwd(X)[0], bwd(X.flip(1))[0]
        if _same(out, torch.cat([f_out, b_out_rev], -1)):
            raise Wrong("the backward half is in reverse order: bwd's output for its first step belongs "
                        "to the LAST position. Flip it back along time (dim 1) before concatenating.")
        if _same(out, torch.cat([f_out, bwd(X)[0]], -1)):
            raise Wrong("the backward layer read the sequence left to right: give it X.flip(1).")
        if _same(out, torch.cat([b_out_rev.flip(1), f_out], -1)):
            raise Wrong("the halves are swapped: the forward layer's outputs come first.")
        if _same(out, f_out.repeat(1, 1, 2)):
            raise Wrong("both halves come from the forward layer; the second must come from bwd.")
        if not _same(out, right):
            raise Wrong("the values differ from [fwd(X) outputs, bwd(X reversed) outputs reversed].")
    return "each step now sees the whole sentence: the left context from fwd, the right one from bwd."


# -- exercise: a peephole LSTM step (Gers & Schmidhuber 2000) ------------------------------------
def peephole_reference(lstm, peep: dict, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
    """One step of an LSTM with peephole connections: the input and forget gates also read the
    old cell ``c`` (``p_i ⊙ c``, ``p_f ⊙ c``), the output gate reads the NEW cell (``p_o ⊙ c'``).
    ``peep`` maps ``"i"``, ``"f"``, ``"o"`` to ``(hidden,)`` vectors. Returns ``(h', c')``."""
    pre = x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh
    a_i, a_f, a_g, a_o = pre.chunk(4, dim=-1)
    i = torch.sigmoid(a_i + peep["i"] * c)
    f = torch.sigmoid(a_f + peep["f"] * c)
    c_new = f * c + i * torch.tanh(a_g)
    o = torch.sigmoid(a_o + peep["o"] * c_new)
    return o * torch.tanh(c_new), c_new


def _peephole_case(seed: int):
    lstm, x, h, c = _step_case(seed)
    gen = torch.Generator().manual_seed(100 + seed)
    peep = {k: torch.randn(4, generator=gen) for k in "ifo"}
    return lstm, peep, x, h, 2 * c   # a large cell, so that the peepholes matter


@checker
def check_peephole_step(peephole_step) -> str:
    """``peephole_step(lstm, peep, x, h, c) -> (h_new, c_new)``: one LSTM step with peephole
    connections (see :func:`peephole_reference`), using ``lstm``'s weights (an
    :class:`~seqbook.gated.LSTMScratch`) and the peephole vectors ``peep["i"]``, ``peep["f"]``,
    ``peep["o"]``."""
    require_function(peephole_step)
    for seed in (0, 1):
        lstm, peep, x, h, c = _peephole_case(seed)
        with torch.no_grad():
            h_right, c_right = peephole_reference(lstm, peep, x, h, c)
            out = peephole_step(lstm, {k: v.clone() for k, v in peep.items()}, x.clone(), h.clone(),
                                c.clone())
            h_new, c_new = _state_pair(out, h_right, c_right)
            h_plain, c_plain, _ = lstm.step(x, h, c)
            if _same(c_new, c_plain) and _same(h_new, h_plain):
                raise Wrong("that is the ordinary LSTM step: the gates do not read the cell. Add "
                            "peep['i'] * c and peep['f'] * c to the input and forget gates' "
                            "pre-activations, and peep['o'] * c_new to the output gate's.")
            pre = x @ lstm.weight_ih.T + lstm.bias_ih + h @ lstm.weight_hh.T + lstm.bias_hh
            a_i, a_f, a_g, a_o = pre.chunk(4, dim=-1)
            outside = (torch.sigmoid(a_f) + peep["f"] * c) * c \
                + (torch.sigmoid(a_i) + peep["i"] * c) * torch.tanh(a_g)
            if _same(c_new, outside):
                raise Wrong("the peephole term goes inside the sigmoid: f = sigma(a_f + p_f * c), "
                            "not sigma(a_f) + p_f * c (a gate must stay between 0 and 1).")
            if _same(c_new, c_plain):
                raise Wrong("c_new is the ordinary LSTM's: the input and forget gates must also read "
                            "the old cell, sigma(a + p * c) with c the cell BEFORE this step.")
            if not _same(c_new, c_right):
                raise Wrong("c_new is not f * c + i * tanh(a_g) with i = sigma(a_i + p_i * c) and "
                            "f = sigma(a_f + p_f * c) (gate order i, f, g, o; c is the old cell).")
            o_old = torch.sigmoid(a_o + peep["o"] * c)
            if _same(h_new, o_old * torch.tanh(c_right)):
                raise Wrong("the cell is right, but the output gate peeked at the OLD cell. It is "
                            "computed after the cell update, so it reads the new one: "
                            "o = sigma(a_o + p_o * c_new).")
            if _same(h_new, torch.sigmoid(a_o) * torch.tanh(c_right)):
                raise Wrong("the cell is right, but the output gate has no peephole: "
                            "o = sigma(a_o + p_o * c_new).")
            if not _same(h_new, h_right):
                raise Wrong("c_new is right but h_new is not o * tanh(c_new) with "
                            "o = sigma(a_o + p_o * c_new).")
    return ("your step matches the peephole LSTM: the input and forget gates read the old cell, "
            "the output gate the new one.")


# -- exercise: the two ways to write the GRU's update ----------------------------------------------
def _chung_step(gru: GRUScratch, update_weights, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """One step of Chung et al.'s form, h = (1 - z') h_prev + z' n, with z' from
    ``update_weights = (W_iz, W_hz, b_iz, b_hz)`` and r, n from ``gru``'s own weights."""
    W_iz, W_hz, b_iz, b_hz = update_weights
    xr, _, xn = (x @ gru.weight_ih.T + gru.bias_ih).chunk(3, dim=-1)
    hr, _, hn = (h @ gru.weight_hh.T + gru.bias_hh).chunk(3, dim=-1)
    r = torch.sigmoid(xr + hr)
    n = torch.tanh(xn + r * hn)
    z = torch.sigmoid(x @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
    return (1 - z) * h + z * n


@checker
def check_chung_update(chung_update_weights) -> str:
    """``chung_update_weights(W_iz, W_hz, b_iz, b_hz) -> (W_iz', W_hz', b_iz', b_hz')``: the
    update-gate weights with which Chung et al.'s form computes the same step as PyTorch's
    (the reset gate and the candidate keep their weights). Tried on two GRUs of fixed seeds."""
    require_function(chung_update_weights)
    for seed in (0, 1):
        with seeded(seed):
            gru = GRUScratch(3, 4)
            x, h = torch.randn(5, 3), torch.randn(5, 4)
        d_h = gru.hidden_size
        W_iz, W_hz = gru.weight_ih[d_h:2 * d_h].detach(), gru.weight_hh[d_h:2 * d_h].detach()
        b_iz, b_hz = gru.bias_ih[d_h:2 * d_h].detach(), gru.bias_hh[d_h:2 * d_h].detach()
        given = (W_iz, W_hz, b_iz, b_hz)
        with torch.no_grad():
            right, _ = gru.step(x, h)
            out = chung_update_weights(*(t.clone() for t in given))
            if not isinstance(out, (tuple, list)) or len(out) != 4:
                got = type(out).__name__
                if isinstance(out, (tuple, list)):
                    got += f" of {len(out)}"
                raise Wrong(f"expected four tensors (W_iz, W_hz, b_iz, b_hz), got {got}.")
            names = ("W_iz", "W_hz", "b_iz", "b_hz")
            weights = tuple(_tensor(t, tuple(g.shape), name) for t, g, name in zip(out, given, names))
            chung = _chung_step(gru, weights, x, h)
            if _same(chung, right):
                continue
            if all(_same(w, g) for w, g in zip(weights, given)):
                raise Wrong("with the same weights z' = z, so Chung's form keeps 1 - z of the old state "
                            "where PyTorch's keeps z. Which weights make z' = 1 - z?")
            negated = [_same(w, -g) for w, g in zip(weights, given)]
            if negated[:2] == [True, True] and not all(negated[2:]):
                raise Wrong("the weight matrices are right, but z' = 1 - z needs both biases negated as well.")
            if negated[2:] == [True, True] and not all(negated[:2]):
                raise Wrong("the biases are right, but z' = 1 - z needs both weight matrices negated as well.")
            if all(_same(w, 1 - g) for w, g in zip(weights, given)):
                raise Wrong("1 - W does not give 1 - z: the gate is sigma(a), and sigma(-a) = 1 - sigma(a).")
            raise Wrong("with these weights Chung's form does not compute PyTorch's step. "
                        "z' must equal 1 - z for every input.")
    return ("Chung et al.'s form with your update-gate weights computes PyTorch's GRU step exactly: "
            "sigma(-a) = 1 - sigma(a), so the two forms are one family of models.")
