"""Byte-pair encoding: the merges learned, encoding and decoding, and clear errors."""

import random

import pytest

from seqbook.bpe import END, UNKNOWN, BPE, learn_bpe, merge_pair, word_counts


def test_merges_follow_the_weighted_pair_counts():
    # l-o and o-w occur 4 times (low counts twice); the tie goes to the pair that sorts first
    bpe = learn_bpe(["lower", "lowest", "low", "low"], num_merges=4)
    assert bpe.merges == (("l", "o"), ("lo", "w"), ("low", END), ("low", "e"))
    assert bpe.alphabet == frozenset("lowerst")


def test_counts_weight_the_pairs():
    # counted once per distinct word, a-t (chat, chats, rat) would tie c-h (chat, chats, chien)
    # and win the tie; weighted by the counts, c-h (10) beats a-t (8)
    counts = {"chat": 5, "chats": 2, "chien": 3, "rat": 1}
    assert learn_bpe(counts, 3).merges == (("c", "h"), ("a", "t"), ("ch", "at"))
    assert learn_bpe(list(counts), 1).merges == (("a", "t"),)
    assert learn_bpe(["chat"] * 5 + ["chats"] * 2 + ["chien"] * 3 + ["rat"], 3) == learn_bpe(counts, 3)


def test_encoding_applies_the_merges_in_the_order_learned():
    bpe = BPE(merges=(("b", "c"), ("a", "b")), alphabet=frozenset("abc"))
    # (b, c) first: "abc" -> a bc; (a, b) then no longer occurs
    assert bpe.encode_word("abc") == ["a", "bc", END]
    assert bpe.encode_word("ab") == ["ab", END]


def test_a_merge_joins_every_occurrence_left_to_right():
    assert merge_pair(["a", "a", "a"], ("a", "a")) == ["aa", "a"]
    assert merge_pair(list("abab"), ("a", "b")) == ["ab", "ab"]
    assert merge_pair(["x"], ("x", "y")) == ["x"]


def test_learning_reproduces_the_training_words_and_shrinks_them():
    words = "the cat sat on the mat the cat ate the rat".split()
    bpe = learn_bpe(words, 20)
    for word in set(words):
        symbols = bpe.encode_word(word)
        assert "".join(symbols) == word + END
    assert bpe.encode_word("the") == ["the" + END]          # the most frequent word: one symbol
    assert len(bpe.encode_word("mat")) < len("mat") + 1       # shorter than its letters
    assert set(bpe.encode(words)) <= set(bpe.vocabulary)


def test_unseen_words_are_spelled_with_known_pieces_and_decode_back():
    bpe = learn_bpe({"chat": 5, "chats": 2, "chien": 3, "rat": 1}, 3)
    assert bpe.encode_word("rats") == ["r", "at", "s", END]
    assert bpe.encode_word("chiens") == ["ch", "i", "e", "n", "s", END]
    sentence = ["le", "chat", "voit", "les", "rats"]
    symbols = bpe.encode(sentence)
    # l, v and o were never seen: decoding shows where the unknown characters were
    assert bpe.decode(symbols) == [f"{UNKNOWN}e", "chat", f"{UNKNOWN}{UNKNOWN}it", f"{UNKNOWN}es", "rats"]
    assert bpe.encode_word("zz") == [UNKNOWN, UNKNOWN, END]


def test_decode_inverts_encode_on_random_text():
    rng = random.Random(0)
    words = ["".join(rng.choice("abcde") for _ in range(rng.randint(1, 8))) for _ in range(300)]
    bpe = learn_bpe(words, 50)
    assert bpe.decode(bpe.encode(words)) == words
    assert len(bpe.merges) == 50 and len(set(bpe.merges)) == 50


def test_learning_stops_when_no_pair_repeats():
    assert learn_bpe(["ab"], 10).merges == ()                 # each pair occurs once
    assert learn_bpe(["ab"], 10, min_frequency=1).merges == (("a", "b"), ("ab", END))
    assert learn_bpe(["ab", "ab"], 0).merges == ()


def test_the_vocabulary_lists_characters_markers_and_merged_symbols():
    bpe = learn_bpe(["aa", "aa"], 2)
    # a-a and a-</w> tie (twice each): "</w>" sorts before "a"
    assert bpe.merges == (("a", END), ("a", "a" + END))
    assert bpe.vocabulary == ["a", END, UNKNOWN, "a" + END, "aa" + END]


@pytest.mark.parametrize("bad, match", [
    ("a sentence", "one string"),
    (["ok", ""], "non-empty"),
    (["two words"], "without spaces"),
    (["a</w>b"], "reserved"),
    ({"cat": 0}, "count"),
    ({"cat": 1.5}, "count"),
])
def test_bad_words_are_named(bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        word_counts(bad)


def test_bad_arguments_are_named():
    bpe = learn_bpe(["ab", "ab"], 1)
    with pytest.raises(ValueError, match="num_merges"):
        learn_bpe(["ab"], -1)
    with pytest.raises(ValueError, match="one word"):
        bpe.encode_word("a b")
    with pytest.raises(TypeError, match="list of words"):
        bpe.encode("ab ab")
    with pytest.raises(ValueError, match="end a word"):
        bpe.decode(["ab", "a"])
