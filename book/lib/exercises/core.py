"""The machinery every checker shares: a verdict, and a decorator that turns any mistake
in the student's answer into a message instead of a traceback."""

from __future__ import annotations

import functools
import math
import re
import textwrap
import traceback
from dataclasses import dataclass


@dataclass
class Verdict:
    """The outcome of a check. Truthy when the answer is right."""

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        message = self.message
        if re.match(r"[a-z]+[ ,:]", message):  # a sentence, not code such as "f(3) == 9"
            message = message[0].upper() + message[1:]
        return ("Correct. " if self.passed else "Not yet. ") + message

    def _ipython_display_(self) -> None:
        # The checker has already printed the message; show nothing more in a notebook.
        pass


class Wrong(Exception):
    """Raised inside a checker to reject an answer with a hint."""


def checker(func):
    """Wrap a checker so that it prints its verdict and returns a :class:`Verdict`.

    Inside, a checker returns a success message or raises :class:`Wrong` with a hint.
    Anything else that goes wrong is reported as a problem with the answer."""

    @functools.wraps(func)
    def wrapped(*args, **kwargs) -> Verdict:
        try:
            verdict = Verdict(True, func(*args, **kwargs) or "")
        except Wrong as e:
            verdict = Verdict(False, str(e))
        except NotImplementedError:
            verdict = Verdict(False, "the answer is still the placeholder: replace the "
                                     "`raise NotImplementedError` or `...` with your code.")
        except Exception as e:  # a checker must never show the student a traceback
            where = traceback.extract_tb(e.__traceback__)[-1]
            verdict = Verdict(False, f"your code raised {type(e).__name__}: {e} "
                                     f"(line {where.lineno} of {where.name}).")
        text = ("✅ " if verdict.passed else "❌ ") + str(verdict)
        # Wrapped so that a verdict is readable on the website without scrolling sideways.
        print(textwrap.fill(text, width=88, subsequent_indent="   ", break_long_words=False,
                            break_on_hyphens=False))
        return verdict

    return wrapped


def as_number(answer, what: str = "a number") -> float:
    """The answer as a finite float, or :class:`Wrong` naming what was expected."""
    if answer is Ellipsis or answer is None:
        raise NotImplementedError
    if isinstance(answer, bool):
        raise Wrong(f"expected {what}, got the boolean {answer}.")
    try:
        value = float(answer)
    except (TypeError, ValueError):
        raise Wrong(f"expected {what}, got {type(answer).__name__} {answer!r}.") from None
    if not math.isfinite(value):
        raise Wrong(f"expected {what}, got {value}.")
    return value


def close(a: float, b: float, rel: float = 1e-3, abs_: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def call(func, *args, what: str = "your function"):
    """Call a student's function, turning 'not a function' into a hint."""
    if not callable(func):
        raise Wrong(f"expected a function, got {type(func).__name__} {func!r}.")
    return func(*args)


def number(answer, what: str = "a number", example: str = "") -> float:
    """Like :func:`as_number`, but also takes a one-element tensor or array, and text that reads as a
    number (``"0.25"``); other text gets a hint that names the form expected."""
    if hasattr(answer, "numel") and answer.numel() == 1:  # a torch tensor
        answer = answer.item()
    if hasattr(answer, "size") and getattr(answer, "size", None) == 1 and hasattr(answer, "item"):
        answer = answer.item()  # a NumPy array or scalar
    if isinstance(answer, str):
        try:
            return as_number(answer.strip(), what)
        except Wrong:
            hint = f" (for example {example})" if example else ""
            raise Wrong(f"expected {what} as a Python number{hint}, got the text {answer!r}.") from None
    return as_number(answer, what)


def require_function(func) -> None:
    """Reject a placeholder (``None``, ``...``) or something that is not a function."""
    if func is None or func is Ellipsis:
        raise NotImplementedError
    if not callable(func):
        raise Wrong(f"expected a function, got {type(func).__name__} {func!r:.60}.")


def match_typical(value: float, right: float, wrongs: list[tuple[float, str]], otherwise: str,
                  rel: float = 1e-3, abs_: float = 1e-9) -> str:
    """A success message if ``value`` is ``right``; else :class:`Wrong` with the hint of the first
    typical mistake (``(wrong value, hint)``) that ``value`` equals, or ``otherwise``."""
    if close(value, right, rel=rel, abs_=abs_):
        return f"{value:.6g} is right."
    for wrong, hint in wrongs:
        if not close(wrong, right, rel=rel, abs_=abs_) and close(value, wrong, rel=rel, abs_=abs_):
            raise Wrong(f"{value:.6g}: {hint}")
    raise Wrong(f"{value:.6g} is not it. {otherwise}")
