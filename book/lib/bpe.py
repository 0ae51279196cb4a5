"""Byte-pair encoding: subword units learned from a list of words (Sennrich et al. 2016).

A word vocabulary has a hole: a word seen too rarely in training, or never, becomes ``<unk>``.
Subword units close it. Every word starts as its characters followed by an end-of-word symbol
``</w>``; learning then repeats one step: count every adjacent pair of symbols over the corpus
(each word weighted by how often it occurs), and **merge** the most frequent pair into one new
symbol. Frequent words end as one symbol, rare ones as a few pieces, and a word never seen is
spelled with the pieces it shares with known words (in the worst case, letter by letter)::

    bpe = learn_bpe(["lower", "lowest", "low", "low"], num_merges=4)
    bpe.merges                  # (('l', 'o'), ('lo', 'w'), ('low', '</w>'), ('low', 'e'))
    bpe.encode_word("lows")     # ['low', 's', '</w>']
    bpe.decode(bpe.encode(["low", "lows"]))   # ['low', 'lows']

Encoding applies the merges in the order they were learned, each to every place in the word
where its pair occurs. ``</w>`` keeps the end of a word apart from its middle (``s</w>``, a
plural ending, is another symbol than the ``s`` inside ``best``), and it is what lets
:meth:`BPE.decode` put the words back together. A character never seen in training becomes
``<unk>``; byte-level BPE, which starts from the 256 byte values instead of characters, avoids
even that.

Ties between equally frequent pairs go to the pair that sorts first (``('a', 'b')`` before
``('a', 'c')``), so the same words always give the same merges.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from . import checks

__all__ = ["END", "UNKNOWN", "BPE", "learn_bpe", "merge_pair", "word_counts"]

END = "</w>"          # the end-of-word symbol
UNKNOWN = "<unk>"     # what a character never seen in training becomes

Pair = tuple[str, str]


def word_counts(words: Iterable[str] | Mapping[str, int]) -> Counter:
    """How often each word occurs: from a list of words, or a mapping word -> count."""
    if isinstance(words, str):
        raise TypeError("expected a list of words (or a mapping word -> count), got one "
                        "string: split it into words first, e.g. text.split()")
    counts = Counter(words) if not isinstance(words, Mapping) else Counter(dict(words))
    for word, count in counts.items():
        if not isinstance(word, str) or not word or any(ch.isspace() for ch in word):
            raise ValueError(f"expected words as non-empty strings without spaces, "
                             f"got {word!r}")
        if END in word or UNKNOWN in word:
            raise ValueError(f"the word {word!r} contains a reserved symbol "
                             f"({END} or {UNKNOWN})")
        checks.integer(count, f"the count of {word!r}", 1)
    return counts


def merge_pair(symbols: Sequence[str], pair: Pair) -> list[str]:
    """``symbols`` with every non-overlapping occurrence of ``pair``, scanned left to
    right, joined into one symbol: ``['a', 'a', 'a']`` with ``('a', 'a')`` gives
    ``['aa', 'a']``."""
    merged, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def _pairs(symbols: Sequence[str]) -> Counter:
    """The adjacent pairs of one word's symbols, with how often each occurs in it."""
    return Counter(zip(symbols, symbols[1:]))


@dataclass(frozen=True)
class BPE:
    """Learned merges (in the order learned) and the characters seen in training."""

    merges: tuple[Pair, ...]
    alphabet: frozenset[str]

    @property
    def vocabulary(self) -> list[str]:
        """Every symbol an encoding can contain: the characters, ``</w>``, ``<unk>`` and one new
        symbol per merge."""
        return sorted(self.alphabet) + [END, UNKNOWN] + [a + b for a, b in self.merges]

    def encode_word(self, word: str) -> list[str]:
        """One word -> its subword symbols, the last one ending in ``</w>``."""
        if not isinstance(word, str) or not word or any(ch.isspace() for ch in word):
            raise ValueError(f"expected one word (no spaces), got {word!r}")
        symbols = [ch if ch in self.alphabet else UNKNOWN for ch in word] + [END]
        for pair in self.merges:
            if len(symbols) == 1:
                break
            symbols = merge_pair(symbols, pair)
        return symbols

    def encode(self, words: Sequence[str]) -> list[str]:
        """A sentence as a list of words -> one list of subword symbols."""
        if isinstance(words, str):
            raise TypeError("expected a list of words, got one string: split it first, e.g. "
                            "sentence.split()")
        return [symbol for word in words for symbol in self.encode_word(word)]

    def decode(self, symbols: Sequence[str]) -> list[str]:
        """Subword symbols -> the words they spell (a word ends at each ``</w>``)."""
        text = "".join(symbols)
        if text and not text.endswith(END):
            raise ValueError(f"expected symbols that end a word with {END}, "
                             f"got ... {list(symbols)[-3:]}")
        return text.split(END)[:-1]


def learn_bpe(words: Iterable[str] | Mapping[str, int], num_merges: int,
              min_frequency: int = 2) -> BPE:
    """Learn up to ``num_merges`` merges from ``words`` (a list of words, or word -> count).

    Each merge joins the most frequent adjacent pair of symbols, counted over all words with
    their frequencies. Learning stops early when no pair occurs ``min_frequency`` times: a pair
    seen once would only memorise one word."""
    counts = word_counts(words)
    checks.integer(num_merges, "num_merges", 0)
    checks.integer(min_frequency, "min_frequency", 1)
    spelled = {word: list(word) + [END] for word in counts}
    pair_counts: Counter = Counter()
    holders: dict[Pair, set[str]] = defaultdict(set)   # pair -> the words that hold it
    for word, symbols in spelled.items():
        for pair, n in _pairs(symbols).items():
            pair_counts[pair] += n * counts[word]
            holders[pair].add(word)
    merges: list[Pair] = []
    while len(merges) < num_merges and pair_counts:
        # the most frequent pair; among equals, the one that sorts first
        best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))
        if pair_counts[best] < min_frequency:
            break
        merges.append(best)
        for word in list(holders[best]):     # only the words that hold the pair change
            old = _pairs(spelled[word])
            spelled[word] = merge_pair(spelled[word], best)
            new = _pairs(spelled[word])
            for pair, n in old.items():
                pair_counts[pair] -= n * counts[word]
                if pair_counts[pair] <= 0:
                    del pair_counts[pair]
                holders[pair].discard(word)
            for pair, n in new.items():
                pair_counts[pair] += n * counts[word]
                holders[pair].add(word)
    return BPE(tuple(merges), frozenset(ch for word in counts for ch in word))
