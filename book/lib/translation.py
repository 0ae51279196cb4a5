"""A translation corpus that ships with the book: English -> a small, regular French.

A seeded grammar writes English sentences and their French translations side by side, with
the *gold word alignment* of every pair. The French is a function of the English (so a model
can reach BLEU 100), yet it is not a word-for-word copy:

- nouns have a gender, and the determiner and adjectives agree with it and with the number:
  ``the small black cats`` -> ``les petits chats noirs``, ``a white apple`` -> ``une pomme blanche``;
- most adjectives follow the noun (colours, moods), a few precede it (``petit``, ``grand``, ...),
  and ``des`` becomes ``de`` before those (``some small cats`` -> ``de petits chats``);
- negation wraps the verb: ``does not see`` -> ``ne voit pas``;
- ``that`` becomes ``qui`` before a verb (subject relative) and ``que`` before a noun phrase
  (object relative); ``looks for`` -> ``cherche`` and ``in front of`` -> ``devant`` are
  several words to one;
- prepositional phrases and relative clauses nest, so sentences run from 6 to 60+ tokens.

The sentences are grammatical but often absurd (``the mice in a white cow``): the words are
drawn independently, as only the syntax matters here.

Gold alignment: a list of ``(source index, target index)`` links, sorted. Each English word
links to the French word(s) it becomes; ``does not``/``do not`` link to *both* ``ne`` and
``pas`` (each of the two English words to each of the two French ones), ``looks for`` links
both words to ``cherche``, the final ``.`` to ``.``.

Token ids: every vocabulary starts with the same four special tokens, ``<pad>`` = 0,
``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3. A :class:`Batch` holds padded source and target
ids with their lengths (see its docstring). :func:`read_tsv` loads the tab-separated
sentence-pair files of public parallel corpora (one ``source<TAB>target`` pair a line).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import numpy as np
import torch

from . import checks
from .vocab import Vocab

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")

# -- the lexicon ---------------------------------------------------------------------------------
# nouns: English singular, plural, French singular, plural, gender, animate (can see, eat, ...)
NOUNS = [
    ("cat", "cats", "chat", "chats", "m", True), ("dog", "dogs", "chien", "chiens", "m", True),
    ("horse", "horses", "cheval", "chevaux", "m", True), ("rabbit", "rabbits", "lapin", "lapins", "m", True),
    ("boy", "boys", "garçon", "garçons", "m", True), ("teacher", "teachers", "professeur", "professeurs", "m", True),
    ("girl", "girls", "fille", "filles", "f", True), ("woman", "women", "femme", "femmes", "f", True),
    ("mouse", "mice", "souris", "souris", "f", True), ("cow", "cows", "vache", "vaches", "f", True),
    ("book", "books", "livre", "livres", "m", False), ("garden", "gardens", "jardin", "jardins", "m", False),
    ("boat", "boats", "bateau", "bateaux", "m", False), ("cake", "cakes", "gâteau", "gâteaux", "m", False),
    ("apple", "apples", "pomme", "pommes", "f", False), ("house", "houses", "maison", "maisons", "f", False),
    ("car", "cars", "voiture", "voitures", "f", False), ("table", "tables", "table", "tables", "f", False),
    ("flower", "flowers", "fleur", "fleurs", "f", False), ("door", "doors", "porte", "portes", "f", False),
    ("chair", "chairs", "chaise", "chaises", "f", False), ("river", "rivers", "rivière", "rivières", "f", False),
]
# adjectives: English, French m. sg., f. sg., m. pl., f. pl.
ADJECTIVES_BEFORE = [  # these precede the noun in French too
    ("small", "petit", "petite", "petits", "petites"), ("big", "grand", "grande", "grands", "grandes"),
    ("young", "jeune", "jeune", "jeunes", "jeunes"), ("pretty", "joli", "jolie", "jolis", "jolies"),
    ("good", "bon", "bonne", "bons", "bonnes"),
]
ADJECTIVES_AFTER = [  # these follow the noun in French
    ("red", "rouge", "rouge", "rouges", "rouges"), ("black", "noir", "noire", "noirs", "noires"),
    ("green", "vert", "verte", "verts", "vertes"), ("blue", "bleu", "bleue", "bleus", "bleues"),
    ("white", "blanc", "blanche", "blancs", "blanches"), ("happy", "heureux", "heureuse", "heureux", "heureuses"),
    ("tired", "fatigué", "fatiguée", "fatigués", "fatiguées"), ("sad", "triste", "triste", "tristes", "tristes"),
    ("heavy", "lourd", "lourde", "lourds", "lourdes"), ("quiet", "calme", "calme", "calmes", "calmes"),
]
# transitive verbs: English 3rd singular, English base form, French 3rd singular, 3rd plural
VERBS = [
    ("sees", "see", "voit", "voient"), ("eats", "eat", "mange", "mangent"),
    ("watches", "watch", "regarde", "regardent"), ("follows", "follow", "suit", "suivent"),
    ("takes", "take", "prend", "prennent"), ("pushes", "push", "pousse", "poussent"),
    ("finds", "find", "trouve", "trouvent"), ("carries", "carry", "porte", "portent"),
    ("wants", "want", "veut", "veulent"), ("touches", "touch", "touche", "touchent"),
    ("looks for", "look for", "cherche", "cherchent"),
]
_ANIMATE = [n for n in NOUNS if n[5]]
PREPOSITIONS = [("on", "sur"), ("under", "sous"), ("in", "dans"), ("with", "avec"),
                ("behind", "derrière"), ("without", "sans"), ("in front of", "devant")]
NUMBERS = [("two", "deux"), ("three", "trois"), ("four", "quatre"), ("five", "cinq")]
# how often a noun phrase grows a prepositional phrase or a relative clause (see sample_pair):
# 0.4 gives a median of 18 source tokens, 13% of sentences with 30 or more, 2.4% with 40 or more
ELABORATION = 0.4


@dataclass(frozen=True)
class SentencePair:
    """One translation pair: token tuples and, for the synthetic corpus, the gold alignment
    (sorted ``(source index, target index)`` links; None for pairs read from a file)."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    alignment: tuple[tuple[int, int], ...] | None = None


# -- the grammar ---------------------------------------------------------------------------------
# A phrase is built as two lists of parts, (unit, words): the English parts in English order and
# the French parts in French order. Parts that share a unit are translations of each other, so the
# alignment links every English word of a unit to every French word of that unit.
class _Grammar:
    def __init__(self, rng: np.random.Generator, elaboration: float, max_depth: int = 3):
        self.rng, self.elaboration, self.max_depth = rng, elaboration, max_depth
        self.units = count()
        self.uniforms: list[float] = []

    def uniform(self) -> float:
        if not self.uniforms:  # drawn in blocks: one NumPy call per 256 numbers is much faster
            self.uniforms = self.rng.random(256).tolist()[::-1]
        return self.uniforms.pop()

    def chance(self, p: float) -> bool:
        return self.uniform() < p

    def pick(self, options: Sequence):
        return options[int(self.uniform() * len(options))]

    def unit(self, en: str, fr: str):
        """A pair of parts for English words ``en`` translated by French words ``fr``."""
        key = next(self.units)
        return [(key, en.split())], [(key, fr.split())]

    def sentence(self):
        en, fr, plural = self.noun_phrase(0, animate=True)
        vp_en, vp_fr = self.verb_phrase(plural, 0, with_object=True)
        stop_en, stop_fr = self.unit(".", ".")
        return en + vp_en + stop_en, fr + vp_fr + stop_fr

    def noun_phrase(self, depth: int, animate: bool = False, allow_indefinite: bool = True):
        """Determiner, adjectives and noun, then maybe a prepositional phrase and a relative clause."""
        en_sg, en_pl, fr_sg, fr_pl, gender, alive = self.pick(_ANIMATE if animate else NOUNS)
        plural = self.chance(0.4)
        form = (2 if plural else 0) + (gender == "f")  # index into an adjective's French forms, minus 1
        if plural:
            det = self.pick([("the", "les"), ("some", "des")] + NUMBERS)
        elif allow_indefinite and self.chance(0.3):
            det = ("a", "une" if gender == "f" else "un")
        else:
            det = ("the", "la" if gender == "f" else "le")
        before_en, before_fr, after_en, after_fr = [], [], [], []
        if self.chance(0.3):
            adj = self.pick(ADJECTIVES_BEFORE)
            before_en, before_fr = self.unit(adj[0], adj[1 + form])
            if det[1] == "des":  # des becomes de before an adjective: "de petits chats"
                det = ("some", "de")
        det_en, det_fr = self.unit(*det)
        if self.chance(0.4):
            adj = self.pick(ADJECTIVES_AFTER)
            after_en, after_fr = self.unit(adj[0], adj[1 + form])
        noun_en, noun_fr = self.unit(en_pl if plural else en_sg, fr_pl if plural else fr_sg)
        en = det_en + before_en + after_en + noun_en
        fr = det_fr + before_fr + noun_fr + after_fr
        p = self.elaboration / (1 + depth)
        if depth < self.max_depth and self.chance(p):
            prep_en, prep_fr = self.unit(*self.pick(PREPOSITIONS))
            np_en, np_fr, _ = self.noun_phrase(depth + 1)
            en, fr = en + prep_en + np_en, fr + prep_fr + np_fr
        if depth < self.max_depth and self.chance(p):
            rel_en, rel_fr = self.relative_clause(plural, alive, depth + 1)
            en, fr = en + rel_en, fr + rel_fr
        return en, fr, plural

    def relative_clause(self, head_plural: bool, head_animate: bool, depth: int):
        """``that sees the dog`` -> ``qui voit le chien`` (only after an animate noun);
        ``that the dog sees`` -> ``que le chien voit``."""
        if head_animate and self.chance(0.5):
            that_en, that_fr = self.unit("that", "qui")
            vp_en, vp_fr = self.verb_phrase(head_plural, depth, with_object=True)
            return that_en + vp_en, that_fr + vp_fr
        that_en, that_fr = self.unit("that", "que")
        # no "a" here: French would elide "que un" to "qu'un"
        np_en, np_fr, plural = self.noun_phrase(depth, animate=True, allow_indefinite=False)
        vp_en, vp_fr = self.verb_phrase(plural, depth, with_object=False)
        return that_en + np_en + vp_en, that_fr + np_fr + vp_fr

    def verb_phrase(self, plural: bool, depth: int, with_object: bool):
        en_3sg, en_base, fr_3sg, fr_3pl = self.pick(VERBS)
        fr_verb = fr_3pl if plural else fr_3sg
        if self.chance(0.3):  # negation: one unit, two French parts around the verb
            key = next(self.units)
            aux = "do not" if plural else "does not"
            verb_en, verb_fr = self.unit(en_base, fr_verb)
            en = [(key, aux.split())] + verb_en
            fr = [(key, ["ne"])] + verb_fr + [(key, ["pas"])]
        else:
            en, fr = self.unit(en_base if plural else en_3sg, fr_verb)
        if with_object:
            obj_en, obj_fr, _ = self.noun_phrase(depth)
            en, fr = en + obj_en, fr + obj_fr
        return en, fr


def _flatten(en_parts, fr_parts) -> SentencePair:
    """Words and alignment links from the two part lists."""
    positions: dict[int, tuple[list[int], list[int]]] = {}
    src, tgt = [], []
    for side, parts, words in ((0, en_parts, src), (1, fr_parts, tgt)):
        for key, part in parts:
            slot = positions.setdefault(key, ([], []))[side]
            slot.extend(range(len(words), len(words) + len(part)))
            words.extend(part)
    links = sorted((i, j) for s, t in positions.values() for i in s for j in t)
    return SentencePair(tuple(src), tuple(tgt), tuple(links))


def sample_pair(rng: np.random.Generator, elaboration: float = ELABORATION) -> SentencePair:
    """One sentence pair from the grammar, drawn with ``rng`` (a NumPy Generator).

    ``elaboration`` sets how often a noun phrase grows a prepositional phrase or a relative
    clause (probability ``elaboration / (1 + depth)`` each, nesting at most three deep)."""
    return _flatten(*_Grammar(rng, elaboration).sentence())


def generate_pairs(n: int, seed: int = 0, min_len: int = 1, max_len: int | None = None,
                   exclude: Iterable = (), elaboration: float = ELABORATION) -> list[SentencePair]:
    """``n`` pairs with *distinct* source sentences of ``min_len``..``max_len`` source tokens
    (the final ``.`` included), none of whose source is in ``exclude`` (pairs or token tuples).

    The same seed gives the same pairs on every platform (NumPy's seeded generator; no
    dependence on hashing or set order)."""
    n, min_len = checks.integer(n, "n", 0), checks.integer(min_len, "min_len", 1)
    if max_len is not None and checks.integer(max_len, "max_len", 1) < min_len:
        raise ValueError(f"expected max_len >= min_len, got min_len={min_len}, max_len={max_len}")
    seen = {p.src if isinstance(p, SentencePair) else tuple(p) for p in exclude}
    grammar = _Grammar(np.random.default_rng(checks.integer(seed, "seed", 0)), elaboration)
    pairs: list[SentencePair] = []
    tries, budget = 0, 1000 * n + 10_000
    while len(pairs) < n:
        tries += 1
        if tries > budget:
            raise ValueError(f"found only {len(pairs)} of {n} new sentences of {min_len}..{max_len} tokens "
                             f"in {budget} draws: ask for fewer, or widen the length range")
        pair = _flatten(*grammar.sentence())
        if min_len <= len(pair.src) <= (max_len or len(pair.src)) and pair.src not in seen:
            seen.add(pair.src)
            pairs.append(pair)
    return pairs


class Splits(NamedTuple):
    train: list[SentencePair]
    valid: list[SentencePair]
    test: list[SentencePair]


def make_splits(n_train: int, n_valid: int, n_test: int, seed: int = 0, min_len: int = 1,
                max_len: int | None = None, elaboration: float = ELABORATION) -> Splits:
    """Train, validation and test pairs from one seeded stream; no source sentence is in two splits."""
    pairs = generate_pairs(checks.integer(n_train, "n_train", 0) + checks.integer(n_valid, "n_valid", 0)
                           + checks.integer(n_test, "n_test", 0), seed, min_len, max_len, elaboration=elaboration)
    return Splits(pairs[:n_train], pairs[n_train:n_train + n_valid], pairs[n_train + n_valid:])


def length_buckets(edges: Sequence[int], n_per_bucket: int, seed: int = 1, exclude: Iterable = (),
                   elaboration: float = ELABORATION) -> dict[tuple[int, int], list[SentencePair]]:
    """Test pairs grouped by source length: ``edges=[5, 10, 20, 30, 40, 60]`` gives buckets
    (5, 9), (10, 19), ..., (40, 59) (both ends included), ``n_per_bucket`` pairs each, none of
    them in ``exclude`` (e.g. the training pairs)."""
    edges = [checks.integer(e, "bucket edge", 1) for e in edges]
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"expected at least two increasing bucket edges, got {edges}")
    exclude = list(exclude)
    return {(lo, hi - 1): generate_pairs(n_per_bucket, seed + k, lo, hi - 1, exclude, elaboration)
            for k, (lo, hi) in enumerate(zip(edges, edges[1:]))}


# -- vocabularies and batches --------------------------------------------------------------------
class TranslationVocab(Vocab):
    """A word :class:`seqbook.vocab.Vocab` of sentences with the four special tokens first
    (``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3), then the tokens seen at least
    ``min_freq`` times, most frequent first; unknown tokens become ``<unk>``. It encodes token
    lists (not strings) and decodes ids to a token list that ends before the first ``<eos>``."""

    def __init__(self, sentences: Iterable[Sequence[str]], min_freq: int = 1):
        super().__init__((token for sentence in sentences for token in sentence), min_freq, specials=SPECIALS)

    def __repr__(self) -> str:
        return f"TranslationVocab({len(self)} tokens: {', '.join(self.itos[4:10])}, ...)"

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token list -> ids; unknown tokens become ``<unk>``."""
        if isinstance(tokens, str):
            raise TypeError(f"expected a list of tokens, got the str {tokens[:30]!r} (split it first)")
        return super().encode(tokens)

    def decode(self, ids) -> list[str]:
        """Ids (list or 1-d tensor) -> tokens, stopping at the first ``<eos>`` and skipping
        ``<pad>`` and ``<bos>``."""
        out = []
        for i in ids.tolist() if isinstance(ids, torch.Tensor) else ids:
            token = self.token_of(i)
            if i == EOS:
                break
            if i not in (PAD, BOS):
                out.append(token)
        return out


def build_vocabs(pairs: Sequence[SentencePair], min_freq: int = 1) -> tuple[TranslationVocab, TranslationVocab]:
    """Source and target vocabularies of ``pairs`` (build them on the training split only)."""
    return (TranslationVocab((p.src for p in pairs), min_freq),
            TranslationVocab((p.tgt for p in pairs), min_freq))


@dataclass
class Batch:
    """Padded ids of a batch of pairs (``<pad>`` = 0 on the right).

    - ``src`` (batch, src_len), ``src_lengths`` (batch,), ``src_mask`` (batch, src_len) True at real tokens;
    - ``tgt_in`` (batch, tgt_len) = ``<bos> y_1 .. y_m`` and ``tgt_out`` = ``y_1 .. y_m <eos>``:
      the decoder reads ``tgt_in[:, t]`` and is trained to predict ``tgt_out[:, t]``.
    """

    src: torch.Tensor
    src_lengths: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    src_mask: torch.Tensor

    def to(self, device) -> "Batch":
        return Batch(*(t.to(device) for t in (self.src, self.src_lengths, self.tgt_in, self.tgt_out, self.src_mask)))

    def __len__(self) -> int:
        return self.src.shape[0]


def pad(sequences: Sequence[Sequence[int]]) -> torch.Tensor:
    """Id lists -> (batch, longest) int64 tensor padded with ``<pad>``."""
    out = torch.full((len(sequences), max(len(s) for s in sequences)), PAD, dtype=torch.int64)
    for row, seq in enumerate(sequences):
        out[row, :len(seq)] = torch.tensor(seq, dtype=torch.int64)
    return out


def make_batch(pairs: Sequence[SentencePair], src_vocab: TranslationVocab, tgt_vocab: TranslationVocab) -> Batch:
    """One :class:`Batch` from ``pairs`` (every source must have at least one token)."""
    if len(pairs) == 0:
        raise ValueError("expected at least one pair to make a batch, got none")
    src = [src_vocab.encode(p.src) for p in pairs]
    if any(len(s) == 0 for s in src):
        raise ValueError("expected every source sentence to have at least one token, got an empty one")
    tgt = [tgt_vocab.encode(p.tgt) for p in pairs]
    src_ids = pad(src)
    return Batch(src=src_ids, src_lengths=torch.tensor([len(s) for s in src], dtype=torch.int64),
                 tgt_in=pad([[BOS] + t for t in tgt]), tgt_out=pad([t + [EOS] for t in tgt]),
                 src_mask=src_ids != PAD)


def make_batches(pairs: Sequence[SentencePair], src_vocab: TranslationVocab, tgt_vocab: TranslationVocab,
                 batch_size: int, seed: int | None = 0, by_length: bool = False) -> list[Batch]:
    """``pairs`` cut into batches of ``batch_size`` (the last may be smaller).

    ``seed`` shuffles the pairs first (None keeps their order). ``by_length=True`` sorts them by
    source length before cutting, so that each batch holds sentences of similar length and
    little padding, then shuffles the order of the batches."""
    batch_size = checks.integer(batch_size, "batch_size", 1)
    order = list(range(len(pairs)))
    rng = np.random.default_rng(seed) if seed is not None else None
    if rng is not None:
        order = [int(i) for i in rng.permutation(len(pairs))]
    if by_length:
        order.sort(key=lambda i: len(pairs[i].src))  # stable: equal lengths keep the shuffled order
    groups = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if by_length and rng is not None:
        groups = [groups[int(i)] for i in rng.permutation(len(groups))]
    return [make_batch([pairs[i] for i in g], src_vocab, tgt_vocab) for g in groups]


# -- tab-separated files -------------------------------------------------------------------------
_TOKEN = re.compile(r"\w+(?=n't\b)|n't\b"                 # English negation: don't -> do n't
                    r"|\w+(?='(?:s|ve|re|ll|m|d)\b)|'(?:s|ve|re|ll|m|d)\b"  # English clitics: I've -> i 've
                    r"|\w+'(?=\w)"                            # French elision: l'homme -> l' homme
                    r"|\w+|[^\w\s]")                          # other words, punctuation marks


def simple_tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation marks, with English clitics split off (``don't`` ->
    ``do n't``, ``man's`` -> ``man 's``) and French elided words kept with their apostrophe
    (``l'homme`` -> ``l' homme``). Typographic apostrophes count as ``'``."""
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def read_tsv(path: str | Path, max_pairs: int | None = None, tokenize=simple_tokenize) -> list[SentencePair]:
    """Sentence pairs from a tab-separated file: ``source<TAB>target`` a line, the format of the
    Tatoeba/ManyThings pairs (further columns, such as an attribution, are ignored; blank lines
    are skipped). Each side is split by ``tokenize``."""
    pairs = []
    with open(path, encoding="utf-8", newline="") as f:
        for line_no, row in enumerate(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) < 2 or not row[0].strip() or not row[1].strip():
                raise ValueError(f"{path}, line {line_no}: expected 'source<TAB>target', got {row!r}")
            pairs.append(SentencePair(tuple(tokenize(row[0])), tuple(tokenize(row[1]))))
            if max_pairs is not None and len(pairs) >= max_pairs:
                break
    return pairs


def write_tsv(pairs: Iterable[SentencePair], path: str | Path) -> None:
    """Write pairs as ``source<TAB>target`` lines (tokens joined by spaces)."""
    with open(path, "w", encoding="utf-8") as f:
        for p in pairs:
            f.write(" ".join(p.src) + "\t" + " ".join(p.tgt) + "\n")
