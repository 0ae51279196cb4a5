"""Real English text that ships with the book, and reproducible train/validation/test splits.

The text is the Python 3.11.7 language reference's help topics (the standard library's
``pydoc_data.topics``), frozen as package data in ``seqbook/data``: about 465 000 characters,
nothing downloaded, and the same on every Python version (the interpreter's own copy differs
from release to release). Its licence and provenance are in ``data/README.md``.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from functools import lru_cache
from importlib import resources
from typing import Sequence, TypeVar

T = TypeVar("T")

REFERENCE_FILE = "python_reference_topics.txt.gz"
REFERENCE_SHA256 = "2a95af4ac93f5b719944030ce3769070ddf827d847cba42192afa8da989e5dc4"


def verified_text(compressed: bytes, sha256: str, name: str) -> str:
    """Decompress gzip ``compressed`` and return it as text, or raise if its SHA-256 (of the
    uncompressed bytes) is not ``sha256``."""
    raw = gzip.decompress(compressed)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise ValueError(f"{name} is damaged or was changed: expected SHA-256 {sha256}, got {digest}; "
                         "reinstall the book's package (pip install -r requirements.txt)")
    return raw.decode("utf-8")


@lru_cache(maxsize=1)
def python_reference_raw() -> str:
    """The frozen help topics, unmodified: every topic's text in sorted order of topic names,
    joined by newlines (465 048 characters)."""
    compressed = resources.files("seqbook").joinpath("data", REFERENCE_FILE).read_bytes()
    return verified_text(compressed, REFERENCE_SHA256, REFERENCE_FILE)


def python_docs_text(lowercase: bool = True, ascii_only: bool = True) -> str:
    """The Python reference help topics as one string (432 640 characters with the defaults).

    Runs of whitespace become one space; with ``ascii_only`` other characters are dropped,
    which keeps a character vocabulary small (67 symbols when lower-cased).
    """
    text = python_reference_raw()
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
