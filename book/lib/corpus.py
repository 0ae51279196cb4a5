"""Real English text that ships with Python, and reproducible train/validation/test splits.

The text is the standard library's ``pydoc_data.topics``: the help pages of the Python
language reference (about 465 000 characters), so nothing is ever downloaded.
"""

from __future__ import annotations

import re
from typing import Sequence, TypeVar

T = TypeVar("T")


def python_docs_text(lowercase: bool = True, ascii_only: bool = True) -> str:
    """The Python reference help topics as one string, topics in sorted order.

    Runs of whitespace become one space; with ``ascii_only`` other characters are dropped,
    which keeps a character vocabulary small (about 60 symbols when lower-cased).
    """
    from pydoc_data.topics import topics

    text = "\n".join(topics[name] for name in sorted(topics))
    if lowercase:
        text = text.lower()
    if ascii_only:
        text = text.encode("ascii", "ignore").decode("ascii")
    return re.sub(r"\s+", " ", text).strip()


def letters_and_space(text: str) -> str:
    """``text`` reduced to Shannon's 27-symbol alphabet: lower-case a-z and one space between
    words (every other character becomes a space, and runs of spaces collapse)."""
    if not isinstance(text, str):
        raise TypeError(f"expected text as a str, got {type(text).__name__}")
    return re.sub(r" +", " ", re.sub(r"[^a-z]", " ", text.lower())).strip()


def split(seq: Sequence[T], fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)):
    """Cut ``seq`` into contiguous train / validation / test pieces (no shuffling: the
    pieces come from different parts of the text, as held-out text should)."""
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"expected three non-negative fractions summing to 1, got {fractions}")
    n = len(seq)
    a = int(n * fractions[0])
    b = a + int(n * fractions[1])
    return seq[:a], seq[a:b], seq[b:]
