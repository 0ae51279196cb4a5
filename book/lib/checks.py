"""Argument checks shared by every module, so that a mistake gets the same clear message wherever
it is made.

One rule for the exception: ``TypeError`` when a value has the wrong type or dtype (a list where
a tensor is expected, float token ids), ``ValueError`` when it has the right type but a wrong
shape or value (two dimensions where three are expected, a negative size, an id outside the
vocabulary). Every message names what was expected and what was given.

The library checks where a reader's own data enters (constructors, ``forward``/``start``, the
trainers, the decoders, the exercise checkers) and trusts its own tensors after that, so these
calls stay out of the inner loops.
"""

from __future__ import annotations

import math
import numbers
from typing import Iterable, Sequence

import torch

__all__ = ["describe", "integer", "positive_int", "positive_ints", "number", "one_of", "float_tensor",
           "sequence", "state_tensor", "token_ids", "as_token_ids", "padded_batch", "bool_mask",
           "scores_and_key_mask", "query_key_value", "logits_and_targets", "torch_module", "built_with"]


def describe(x) -> str:
    """What ``x`` is, for a message: a tensor's shape and dtype, else its type and value."""
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)} and dtype {x.dtype}"
    text = repr(x)
    return f"{type(x).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


# -- numbers and names ---------------------------------------------------------------------------
def _integer_wanted(name: str, minimum: int | None) -> str:
    if minimum == 1:
        return f"a positive integer {name}"
    if minimum == 0:
        return f"a non-negative integer {name}"
    return f"an integer {name}" + ("" if minimum is None else f" >= {minimum}")


def integer(value, name: str, minimum: int | None = None, note: str = "") -> int:
    """``value`` as an ``int`` (a bool is refused, a NumPy integer accepted), at least ``minimum``.
    ``note`` is added to the message in brackets (why the bound)."""
    wanted = _integer_wanted(name, minimum) + (f" ({note})" if note else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"expected {wanted}, got {describe(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"expected {wanted}, got {value!r}")
    return int(value)


def positive_int(value, name: str) -> int:
    """``value`` as an ``int`` >= 1."""
    return integer(value, name, 1)


def positive_ints(**values) -> tuple[int, ...]:
    """Several sizes at once, by name: ``positive_ints(input_size=4, hidden_size=8) -> (4, 8)``."""
    return tuple(positive_int(value, name) for name, value in values.items())


def _range(at_least, above, at_most, below) -> str:
    low, low_open = (above, True) if above is not None else (at_least, False)
    high, high_open = (below, True) if below is not None else (at_most, False)
    if low is not None and high is not None:
        if not (low_open or high_open):
            return f"between {low:g} and {high:g}"
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def number(value, name: str, *, at_least: float | None = None, above: float | None = None,
           at_most: float | None = None, below: float | None = None, note: str = "") -> float:
    """``value`` as a finite ``float`` within the given bounds (a bool is refused).

    ``name`` is the noun phrase of the message: ``number(t, "a temperature", at_least=0)`` says
    ``expected a temperature >= 0, got -1``."""
    wanted = " ".join(filter(None, (name, _range(at_least, above, at_most, below))))
    wanted += f" ({note})" if note else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"expected {wanted} as a number, got {describe(value)}")
    v = float(value)
    inside = (math.isfinite(v) and (at_least is None or v >= at_least) and (above is None or v > above)
              and (at_most is None or v <= at_most) and (below is None or v < below))
    if not inside:
        raise ValueError(f"expected {wanted}, got {value!r}")
    return v


def one_of(value, options: Iterable, name: str):
    """``value`` if it is among ``options`` (e.g. the keys of a dict of classes)."""
    options = list(options)
    listed = ", ".join(repr(o) for o in options)
    if all(isinstance(o, str) for o in options) and not isinstance(value, str):
        raise TypeError(f"expected {name} as one of {listed}, got {describe(value)}")
    if value not in options:
        raise ValueError(f"expected {name} as one of {listed}, got {value!r}")
    return value


# -- float tensors -------------------------------------------------------------------------------
def float_tensor(x, name: str, shape: str, dims: Sequence[int] = (3,), last: int | None = None) -> torch.Tensor:
    """A floating-point tensor with ``x.dim()`` in ``dims`` (and ``last`` features, if given);
    ``shape`` says what was expected, e.g. ``"(batch, time, 8)"``."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected {name} as a torch.Tensor of shape {shape}, got {describe(x)}")
    if x.dim() not in dims or (last is not None and x.shape[-1] != last):
        raise ValueError(f"expected {name} of shape {shape}, got {tuple(x.shape)}")
    if not x.is_floating_point():
        integers = not x.is_complex() and x.dtype != torch.bool
        hint = " (token ids go through an embedding or one-hot encoding first)" if integers else ""
        raise TypeError(f"expected a floating-point {name} of shape {shape}, got dtype {x.dtype}{hint}")
    return x


def sequence(X, input_size: int, name: str = "input") -> torch.Tensor:
    """What a recurrent layer reads: a float tensor ``(batch, time, input_size)``, time >= 1."""
    float_tensor(X, name, f"(batch, time, {input_size})", (3,), input_size)
    if X.shape[1] == 0:
        raise ValueError(f"expected at least one time step, got {name} of length 0")
    return X


def state_tensor(h, name: str, shape: tuple[int, ...], meaning: str = "") -> torch.Tensor:
    """A recurrent state of exactly ``shape`` (``meaning`` names the axes, e.g. ``(batch, hidden)``)."""
    wanted = f"{meaning} = {tuple(shape)}" if meaning else str(tuple(shape))
    if not isinstance(h, torch.Tensor):
        raise TypeError(f"expected {name} as a tensor of shape {wanted}, got {describe(h)}")
    if tuple(h.shape) != tuple(shape):
        raise ValueError(f"expected {name} of shape {wanted}, got {tuple(h.shape)}")
    return h


# -- token ids -----------------------------------------------------------------------------------
def token_ids(x, name: str = "token ids", dims: int = 2, vocab_size: int | None = None,
              allow_empty: bool = False) -> torch.Tensor:
    """An int64 tensor of ``dims`` dimensions (``(batch, time)`` or ``(time,)``) with at least one
    token per row, and ids in ``0..vocab_size - 1`` when ``vocab_size`` is given (that check
    reads the values, so it waits for a GPU: use it where the ids enter, not in a loop)."""
    shape = "(batch, time)" if dims == 2 else "(time,)" if dims == 1 else f"({dims} dimensions)"
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected {name} as an int64 tensor of shape {shape}, got {describe(x)}")
    if x.dim() != dims:
        raise ValueError(f"expected {name} as an int64 tensor of shape {shape}, got shape {tuple(x.shape)}")
    if x.dtype != torch.int64:
        raise TypeError(f"expected {name} of dtype torch.int64 (token ids), got {x.dtype}")
    if not allow_empty and x.shape[-1] == 0:
        raise ValueError(f"expected {name} with at least one token, got shape {tuple(x.shape)}")
    if vocab_size is not None and x.numel():
        lo, hi = torch.aminmax(x)
        lo, hi = int(lo), int(hi)
        if lo < 0 or hi >= vocab_size:
            raise ValueError(f"expected {name} in 0..{vocab_size - 1}, got ids from {lo} to {hi}")
    return x


def as_token_ids(ids, name: str = "ids", dims: int = 1, allow_empty: bool = False) -> torch.Tensor:
    """:func:`token_ids` that also takes a (nested) list or tuple of ints."""
    if isinstance(ids, (list, tuple)):
        try:
            converted = torch.tensor(ids) if ids else torch.zeros((0,) * dims, dtype=torch.int64)
        except (TypeError, ValueError, RuntimeError):
            converted = None
        if converted is None or converted.is_floating_point() or converted.dtype == torch.bool:
            raise TypeError(f"expected {name} as a list of integer ids, got {describe(ids)}")
        ids = converted.to(torch.int64)
    return token_ids(ids, name, dims, allow_empty=allow_empty)


def padded_batch(ids, lengths, name: str = "src") -> None:
    """A right-padded batch of ids ``(batch, len)`` and its lengths ``(batch,)``, each in 1..len."""
    token_ids(ids, name, 2)
    token_ids(lengths, f"{name}_lengths", 1, allow_empty=True)
    if lengths.shape[0] != ids.shape[0]:
        raise ValueError(f"expected {ids.shape[0]} {name}_lengths (one per sentence), got {lengths.shape[0]}")
    lo, hi = (int(v) for v in torch.aminmax(lengths))
    if lo < 1 or hi > ids.shape[1]:
        raise ValueError(f"expected {name}_lengths between 1 and {ids.shape[1]}, got {lengths.tolist()}")


# -- masks, attention and losses -----------------------------------------------------------------
def bool_mask(mask, name: str, meaning: str, shape: tuple, broadcast: bool = False) -> torch.Tensor:
    """A bool tensor of ``shape`` (with ``broadcast``, any axis may also be 1); ``meaning`` says
    what True means, e.g. ``"True = padding key"``, since the book uses both conventions."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = f"dtype {mask.dtype}" if isinstance(mask, torch.Tensor) else describe(mask)
        raise TypeError(f"expected {name} as a bool tensor ({meaning}), got {got}")
    fits = mask.dim() == len(shape) and all(m == s or (broadcast and m == 1) for m, s in zip(mask.shape, shape))
    if not fits:
        how = ", or one that broadcasts to it" if broadcast else ""
        raise ValueError(f"expected {name} of shape {tuple(shape)} ({meaning}){how}, got {tuple(mask.shape)}")
    return mask


def scores_and_key_mask(scores, mask) -> torch.Tensor | None:
    """Attention ``scores (batch, queries, keys)`` and a key ``mask`` (True = a real key, as
    ``Batch.src_mask``): ``(batch, keys)``, or 3-d and broadcasting to the scores. Returns the mask
    as ``(batch, 1 or queries, keys)`` on the scores' device (None stays None). Every row must keep
    at least one real key: a softmax over nothing is undefined."""
    float_tensor(scores, "scores", "(batch, queries, keys)")
    if mask is None:
        return None
    meaning, (batch, queries, keys) = "True = real key, e.g. Batch.src_mask", scores.shape
    if isinstance(mask, torch.Tensor) and mask.dim() == 2:
        mask = bool_mask(mask, "mask", meaning, (batch, keys))[:, None, :]
    else:
        bool_mask(mask, "mask", meaning, (batch, queries, keys), broadcast=True)
    mask = mask.to(scores.device)
    if not bool(mask.any(dim=-1).all()):
        raise ValueError("expected at least one real key (mask True) in every row, got a row with none: "
                         "is the mask True at padding instead of at real tokens?")
    return mask


def query_key_value(query, key, value=None, query_size: int | None = None, key_size: int | None = None,
                    value_size: int | None = None, *, names: Sequence[str] = ("query", "key", "value"),
                    dims: Sequence[int] = (3,)) -> None:
    """Float tensors ``query (batch, queries, d_q)``, ``key (batch, keys, d_k)`` and (unless None)
    ``value (batch, keys, d_v)``, with one batch and one value per key; the sizes, when given,
    fix d_q, d_k, d_v. With ``dims=(3, 4)`` a ``heads`` axis may follow the batch (in all three)."""
    axes, sizes = (("queries", "d_q"), ("keys", "d_k"), ("keys", "d_v")), (query_size, key_size, value_size)
    tensors = [t for t in (query, key, value) if t is not None]
    for t, name, (rows, width), size in zip(tensors, names, axes, sizes):
        lead = "batch, [heads,] " if len(dims) > 1 else "batch, heads, " if tuple(dims) == (4,) else "batch, "
        float_tensor(t, name, f"({lead}{rows}, {size or width})", dims, size)
    lead = tuple(query.shape[:-2])
    same = all(t.dim() == query.dim() and tuple(t.shape[:-2]) == lead for t in tensors)
    if not same or (value is not None and value.shape[-2] != key.shape[-2]):
        given = " and ".join(str(tuple(t.shape)) for t in tensors)
        raise ValueError(f"expected {', '.join(names[:len(tensors)])} with the same batch"
                         f"{' and as many values as keys' if value is not None else ''}, got {given}")


def logits_and_targets(logits, targets, ignore: int | None = None) -> None:
    """Float ``logits (batch, time, |V|)`` and int64 ``targets (batch, time)`` of the same batch and
    time; with ``ignore`` (the padding id), at least one target that is not ``ignore``."""
    float_tensor(logits, "logits", "(batch, time, |V|)", (3,))
    token_ids(targets, "targets", 2, allow_empty=True)
    if targets.shape != logits.shape[:2]:
        raise ValueError("expected logits (batch, time, |V|) and targets (batch, time) with the same batch "
                         f"and time, got {tuple(logits.shape)} and {tuple(targets.shape)}")
    if ignore is not None and not bool((targets != ignore).any()):
        raise ValueError("expected at least one target that is not padding, got only padding")


# -- modules -------------------------------------------------------------------------------------
def torch_module(module, cls: type | tuple[type, ...]) -> None:
    """``module`` must be an instance of the PyTorch class ``cls`` (for ``from_torch``)."""
    if not isinstance(module, cls):
        names = " or ".join(f"nn.{c.__name__}" for c in (cls if isinstance(cls, tuple) else (cls,)))
        raise TypeError(f"expected an {names}, got {type(module).__name__}")


def built_with(requirements: Iterable[tuple[str, bool]], hint: str = "") -> None:
    """``requirements``: (what the module must be built with, whether it is not); a ValueError
    lists every unmet one, e.g. ``expected a module built with batch_first=True``."""
    missing = [what for what, unmet in requirements if unmet]
    if missing:
        raise ValueError(f"expected a module built with {', '.join(missing)}" + (f"; {hint}" if hint else ""))
