"""A vocabulary: the mapping between tokens (characters or words) and integer ids."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

import torch

from . import checks

UNK = "<unk>"


def tokenize(text: str, level: str = "char") -> list[str]:
    """Split ``text`` into characters (``level="char"``) or lower-cased words and punctuation
    (``level="word"``)."""
    if not isinstance(text, str):
        raise TypeError(f"expected text as a str, got {type(text).__name__}")
    if checks.one_of(level, ("char", "word"), "level") == "char":
        return list(text)
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]", text.lower())


class Vocab:
    """Tokens <-> ids: the ``specials`` first, in their order, then every other token seen at least
    ``min_freq`` times, most frequent first (ties in alphabetical order, so the ids do not depend
    on the order of the text).

    With ``unknown=True`` (the default) every token not in the vocabulary maps to ``<unk>``
    (added as the first special when ``specials`` lacks it, so it is id 0); with
    ``unknown=False`` an unknown token is an error. Chapter 4's
    :class:`seqbook.translation.TranslationVocab` is this class with ``<pad>``, ``<bos>``,
    ``<eos>`` and ``<unk>`` as its specials.
    """

    def __init__(self, tokens: Iterable[str], min_freq: int = 1, unknown: bool = True,
                 specials: Sequence[str] = ()):
        counts = Counter(tokens)
        specials = ([UNK] if unknown and UNK not in specials else []) + list(specials)
        kept = sorted((t for t, c in counts.items() if c >= min_freq and t not in specials),
                      key=lambda t: (-counts[t], t))
        self.unknown = unknown
        self.itos: list[str] = specials + kept
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(self.itos)}
        self.counts = counts

    @classmethod
    def from_text(cls, text: str, level: str = "char", **kwargs) -> "Vocab":
        return cls(tokenize(text, level), **kwargs)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token) -> bool:
        return token in self.stoi

    def __repr__(self) -> str:
        preview = ", ".join(repr(t) for t in self.itos[:8])
        return f"Vocab({len(self)} tokens: {preview}{', ...' if len(self) > 8 else ''})"

    def id_of(self, token: str) -> int:
        if token in self.stoi:
            return self.stoi[token]
        if self.unknown:
            return self.stoi[UNK]
        raise KeyError(f"unknown token {token!r}: it is not among the vocabulary's {len(self)} tokens "
                       "(build the Vocab with unknown=True to map such tokens to <unk>)")

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token list (or a string, read as characters) -> list of ids."""
        return [self.id_of(t) for t in tokens]

    def decode(self, ids, sep: str = "") -> str:
        """Ids (a list or a 1-d tensor) -> the tokens joined by ``sep``."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"expected a 1-d tensor of ids, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        return sep.join(self.token_of(i) for i in ids)

    def token_of(self, i: int) -> str:
        """The token with id ``i``."""
        if not 0 <= int(i) < len(self):
            raise ValueError(f"id {i} is outside the vocabulary's range 0..{len(self) - 1}")
        return self.itos[int(i)]
