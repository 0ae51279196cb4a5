"""The synthetic English -> French corpus, its alignments, splits, vocabularies, batches and the TSV loader."""

import numpy as np
import pytest
import torch

from seqbook.translation import (ADJECTIVES_AFTER, ADJECTIVES_BEFORE, BOS, EOS, NOUNS, NUMBERS, PAD,
                                 PREPOSITIONS, UNK, VERBS, Batch, SentencePair, TranslationVocab, build_vocabs,
                                 generate_pairs, length_buckets, make_batch, make_batches, make_splits, read_tsv,
                                 sample_pair, simple_tokenize, write_tsv)
from seqbook.vocab import Vocab


@pytest.fixture(scope="module")
def pairs():
    return generate_pairs(3000, seed=0)


def test_same_seed_same_corpus_and_other_seed_differs():
    a, b = generate_pairs(50, seed=7), generate_pairs(50, seed=7)
    assert a == b
    assert generate_pairs(50, seed=8) != a
    # a fixed sentence pins the generator across Python and NumPy versions
    first = generate_pairs(1, seed=0)[0]
    assert " ".join(first.src) == "the good girls push five pretty heavy tables that the boys look for ."
    assert " ".join(first.tgt) == "les bonnes filles poussent cinq jolies tables lourdes que les garçons cherchent ."
    rng1, rng2 = np.random.default_rng(3), np.random.default_rng(3)
    assert sample_pair(rng1) == sample_pair(rng2)


def reference_translation(src):
    """The French computed from the English words alone, left to right, by the grammar's rules:
    if it matches every generated target, the target is a function of the source."""
    nouns = {n[i]: (n[2 + i], n[4], i == 1) for n in NOUNS for i in (0, 1)}  # -> French, gender, plural
    adjectives = {a[0]: a[1:] for a in ADJECTIVES_BEFORE + ADJECTIVES_AFTER}
    after = {a[0] for a in ADJECTIVES_AFTER}
    verb_starts = {v[k].split()[0] for v in VERBS for k in (0, 1)} | {"does", "do"}
    preps, numbers = dict(PREPOSITIONS), dict(NUMBERS)
    words, out, i = list(src), [], 0

    def starts(phrase):
        return words[i:i + len(phrase.split())] == phrase.split()

    while i < len(words):
        w = words[i]
        if w in ("the", "a", "some") or w in numbers:  # a noun phrase
            j = i + 1
            while words[j] not in nouns:
                j += 1
            french, gender, plural = nouns[words[j]]
            form = 2 * plural + (gender == "f")
            adjs = words[i + 1:j]
            some = "de" if any(a not in after for a in adjs) else "des"
            det = {"the": ["le", "la", "les", "les"][form], "a": ["un", "une"][form % 2], "some": some}
            out.append(det.get(w) or numbers[w])
            out += [adjectives[a][form] for a in adjs if a not in after] + [french]
            out += [adjectives[a][form] for a in adjs if a in after]
            i = j + 1
        elif w in ("does", "do"):  # negation around the base-form verb
            verb = next(v for v in VERBS if starts(w + " not " + v[1]))
            out += ["ne", verb[2] if w == "does" else verb[3], "pas"]
            i += 2 + len(verb[1].split())
        elif w == "that":
            out.append("qui" if words[i + 1] in verb_starts else "que")
            i += 1
        elif starts("in front of"):
            out.append(preps["in front of"])
            i += 3
        elif w in preps or w == ".":
            out.append(preps.get(w, w))
            i += 1
        else:  # an affirmative verb: 3rd singular or plural
            verb = next(v for v in VERBS if starts(v[0]) or starts(v[1]))
            out.append(verb[2] if starts(verb[0]) else verb[3])
            i += len(verb[0].split())
    return tuple(out)


def test_target_is_a_function_of_the_source(pairs):
    assert all(reference_translation(p.src) == p.tgt for p in pairs)
    long = generate_pairs(200, seed=9, min_len=35)
    assert all(reference_translation(p.src) == p.tgt for p in long)


def test_hand_checked_grammar_phenomena(pairs):
    by_src = {" ".join(p.src): " ".join(p.tgt) for p in pairs}
    text = "\n".join(by_src.values())
    for feature in (" ne ", " pas ", " qui ", " que ", " les ", " une ", " des "):
        assert feature in text, feature
    for src, tgt in by_src.items():
        assert src.endswith(" .") and tgt.endswith(" .")
        # negation wraps the verb: 'does not X' <-> 'ne V pas'
        assert src.count(" not ") == tgt.count(" ne ") == tgt.count(" pas ")
        assert src.count(" that ") == tgt.count(" qui ") + tgt.count(" que ")
        assert "que une" not in tgt and "que un " not in tgt  # French would elide these


def test_agreement_and_adjective_order():
    pairs = generate_pairs(4000, seed=1)
    found = set()
    for p in pairs:
        s, t = " " + " ".join(p.src), " " + " ".join(p.tgt)
        for needle, expected in [(" the small black cats ", " les petits chats noirs "),
                                 (" the white apple ", " la pomme blanche "),
                                 (" a white apple ", " une pomme blanche "),
                                 (" two green mice ", " deux souris vertes "),
                                 (" some small cats ", " de petits chats "),
                                 (" some cats ", " des chats "),
                                 (" the red cat ", " le chat rouge ")]:
            if needle in s:
                assert expected in t, (s, t)
                found.add(needle)
    assert len(found) >= 3


def test_gold_alignment_links_translations(pairs):
    lexicon = {("cat", "chat"), ("cats", "chats"), ("apple", "pomme"), ("apples", "pommes"), ("sees", "voit"),
               ("see", "voient"), ("that", "qui"), ("that", "que"), ("black", "noir"), ("black", "noire"),
               ("black", "noirs"), ("black", "noires"),
               ("does", "ne"), ("does", "pas"), ("not", "ne"), ("not", "pas"), ("do", "ne"), ("do", "pas"),
               ("looks", "cherche"), ("for", "cherche"), ("front", "devant")}
    checked = 0
    for p in pairs[:500]:
        assert list(p.alignment) == sorted(set(p.alignment))
        assert {i for i, _ in p.alignment} == set(range(len(p.src)))  # every word is aligned
        assert {j for _, j in p.alignment} == set(range(len(p.tgt)))
        for i, j in p.alignment:
            if p.src[i] in {"cat", "apple", "sees", "that", "black", "does", "not", "looks", "front"}:
                assert (p.src[i], p.tgt[j]) in lexicon, (p.src[i], p.tgt[j])
                checked += 1
    assert checked > 200


def test_alignment_of_a_negated_sentence_with_reordering():
    # e.g. "the black dog does not see the cat ." -> "le chien noir ne voit pas le chat ."
    rng = np.random.default_rng(2)
    after = {a[0] for a in ADJECTIVES_AFTER}
    for _ in range(20000):
        p = sample_pair(rng)
        if len(p.src) == 9 and p.src[1] in after and p.src[3:5] == ("does", "not"):
            break
    else:
        pytest.fail("no sentence of the expected shape")
    assert (p.tgt[3], p.tgt[5]) == ("ne", "pas")
    expected = {(0, 0), (1, 2), (2, 1), (3, 3), (3, 5), (4, 3), (4, 5), (5, 4), (6, 6), (7, 7), (8, 8)}
    assert set(p.alignment) == expected, (p.src, p.tgt)


def test_lengths_and_long_sentences():
    long = generate_pairs(10, seed=3, min_len=40)
    assert all(len(p.src) >= 40 for p in long)
    short = generate_pairs(20, seed=3, max_len=8)
    assert all(6 <= len(p.src) <= 8 for p in short)
    with pytest.raises(ValueError, match="max_len >= min_len"):
        generate_pairs(5, min_len=10, max_len=5)
    with pytest.raises(ValueError, match="found only"):
        generate_pairs(1, min_len=400)


def test_splits_are_disjoint_and_deterministic():
    s = make_splits(500, 100, 100, seed=4)
    assert (len(s.train), len(s.valid), len(s.test)) == (500, 100, 100)
    sources = [p.src for split in s for p in split]
    assert len(set(sources)) == len(sources)
    assert make_splits(500, 100, 100, seed=4) == s
    buckets = length_buckets([6, 10, 20, 30], 10, seed=5, exclude=s.train)
    assert list(buckets) == [(6, 9), (10, 19), (20, 29)]
    train = {p.src for p in s.train}
    for (lo, hi), ps in buckets.items():
        assert len(ps) == 10 and all(lo <= len(p.src) <= hi and p.src not in train for p in ps)
    with pytest.raises(ValueError, match="increasing"):
        length_buckets([10, 5], 3)
    with pytest.raises(ValueError, match="n_train"):
        make_splits(-1, 1, 1)


def test_vocab_special_ids_and_round_trip(pairs):
    src_vocab, tgt_vocab = build_vocabs(pairs)
    for v in (src_vocab, tgt_vocab):
        assert v.itos[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
        assert (v.stoi["<pad>"], v.stoi["<bos>"], v.stoi["<eos>"], v.stoi["<unk>"]) == (PAD, BOS, EOS, UNK)
    assert 40 < len(src_vocab) < 120 and 50 < len(tgt_vocab) < 150
    p = pairs[0]
    assert tgt_vocab.decode(tgt_vocab.encode(p.tgt) + [EOS, 5, 6]) == list(p.tgt)
    assert src_vocab.encode(["cat", "zebra"]) == [src_vocab.stoi["cat"], UNK]
    with pytest.raises(TypeError, match="list of tokens"):
        src_vocab.encode("the cat")
    with pytest.raises(ValueError, match="outside"):
        src_vocab.decode([len(src_vocab)])
    # ids do not depend on the order of the sentences
    assert TranslationVocab([p.src for p in pairs[::-1]]).itos == src_vocab.itos


def test_batch_padding_and_shift(pairs):
    src_vocab, tgt_vocab = build_vocabs(pairs)
    chosen = pairs[:5]
    b = make_batch(chosen, src_vocab, tgt_vocab)
    longest = max(len(p.src) for p in chosen)
    assert b.src.shape == (5, longest) and b.src.dtype == torch.int64
    assert b.src_lengths.tolist() == [len(p.src) for p in chosen]
    assert torch.equal(b.src_mask, b.src != PAD)
    for row, p in enumerate(chosen):
        m = len(p.tgt)
        assert b.tgt_in[row, 0] == BOS and b.tgt_out[row, m] == EOS
        assert torch.equal(b.tgt_in[row, 1:m + 1], b.tgt_out[row, :m])
        assert (b.tgt_out[row, m + 1:] == PAD).all() and (b.src[row, len(p.src):] == PAD).all()
    assert len(b.to("cpu")) == 5 and isinstance(b.to("cpu"), Batch)
    with pytest.raises(ValueError, match="at least one pair"):
        make_batch([], src_vocab, tgt_vocab)


def test_make_batches_covers_every_pair_once(pairs):
    src_vocab, tgt_vocab = build_vocabs(pairs)
    chosen = pairs[:300]
    for by_length in (False, True):
        batches = make_batches(chosen, src_vocab, tgt_vocab, 64, seed=0, by_length=by_length)
        assert [len(b) for b in sorted(batches, key=len)][0] == 300 % 64
        assert sum(len(b) for b in batches) == 300
        rows = sorted(tuple(r[r != PAD].tolist()) for b in batches for r in b.src)
        assert rows == sorted(tuple(src_vocab.encode(p.src)) for p in chosen)
    spread = lambda bs: np.mean([float(b.src_lengths.max() - b.src_lengths.min()) for b in bs])
    assert spread(make_batches(chosen, src_vocab, tgt_vocab, 64, by_length=True)) < \
        spread(make_batches(chosen, src_vocab, tgt_vocab, 64))
    with pytest.raises(ValueError, match="batch_size"):
        make_batches(chosen, src_vocab, tgt_vocab, 0)


def test_read_tsv_on_a_written_file(tmp_path):
    path = tmp_path / "fra.txt"
    path.write_text("Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\n"
                    "\n"
                    "I've got the man's book.\tJ'ai le livre de l'homme.\tCC-BY 2.0\n"
                    "Who?\tQui ?\n", encoding="utf-8")
    pairs = read_tsv(path)
    assert [p.src for p in pairs] == [("go", "."), ("i", "'ve", "got", "the", "man", "'s", "book", "."),
                                      ("who", "?")]
    assert pairs[1].tgt == ("j'", "ai", "le", "livre", "de", "l'", "homme", ".")
    assert pairs[2].tgt == ("qui", "?") and pairs[0].alignment is None
    assert read_tsv(path, max_pairs=2) == pairs[:2]
    bad = tmp_path / "bad.txt"
    bad.write_text("one\ttwo\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: expected 'source<TAB>target'"):
        read_tsv(bad)


def test_write_then_read_tsv_round_trip(tmp_path, pairs):
    path = tmp_path / "synthetic.tsv"
    write_tsv(pairs[:50], path)
    back = read_tsv(path, tokenize=str.split)
    assert [(p.src, p.tgt) for p in back] == [(p.src, p.tgt) for p in pairs[:50]]
    assert simple_tokenize("L’arbre, qu'il don't") == ["l'", "arbre", ",", "qu'", "il", "do", "n't"]
    assert SentencePair(("a",), ("b",)).alignment is None


def test_the_translation_vocabulary_is_a_vocab_with_four_specials():
    vocab = TranslationVocab([["b", "a", "b"], ["c", "<eos>"]])
    assert isinstance(vocab, Vocab)
    assert vocab.itos == ["<pad>", "<bos>", "<eos>", "<unk>", "b", "a", "c"]  # specials, then by count
    plain = Vocab(["b", "a", "b", "c"], specials=["<pad>", "<bos>", "<eos>", "<unk>"])
    assert plain.itos == vocab.itos and plain.encode(["z"]) == vocab.encode(["z"]) == [UNK]
    assert Vocab("bab").itos == ["<unk>", "b", "a"]  # unknown=True alone puts <unk> first
    assert vocab.decode([BOS, 4, PAD, 5, EOS, 6]) == ["b", "a"]
    with pytest.raises(ValueError, match="outside the vocabulary's range 0..6"):
        vocab.decode([4, 99])
