"""Data: the vocabulary, the real-text corpus, the synthetic source, seeding."""

import glob
import gzip
import hashlib
import math
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from seqbook import corpus
from seqbook.corpus import python_docs_text, split
from seqbook.ngram import NGramLM
from seqbook.seeding import generator, numpy_rng, seed_everything
from seqbook.synthetic import LongRangeSource
from seqbook.vocab import UNK, Vocab, tokenize


# -- vocabulary -------------------------------------------------------------------------------
def test_vocab_round_trip_and_order():
    v = Vocab.from_text("abracadabra")
    assert v.itos[0] == UNK and v.itos[1] == "a"  # most frequent first, after <unk>
    ids = v.encode("abracadabra")
    assert v.decode(ids) == "abracadabra"
    assert v.decode(torch.tensor(ids)) == "abracadabra"
    assert len(v) == 1 + len(set("abracadabra"))


def test_vocab_unknown_tokens():
    v = Vocab.from_text("hello")
    assert v.encode("hex") == [v.id_of("h"), v.id_of("e"), 0]
    strict = Vocab.from_text("hello", unknown=False)
    with pytest.raises(KeyError, match="unknown token 'x'"):
        strict.encode("hex")


def test_vocab_min_freq_and_words():
    words = tokenize("The cat, the hat. The end!", level="word")
    assert words == ["the", "cat", ",", "the", "hat", ".", "the", "end", "!"]
    v = Vocab(words, min_freq=2)
    assert v.itos == [UNK, "the"]
    assert v.encode(["cat"]) == [0]


def test_vocab_bad_input():
    with pytest.raises(ValueError, match="level as one of 'char', 'word'"):
        tokenize("abc", level="byte")
    with pytest.raises(TypeError, match="expected text as a str"):
        tokenize(b"abc")
    v = Vocab.from_text("ab")
    with pytest.raises(ValueError, match="outside the vocabulary's range 0..2"):
        v.decode([5])
    with pytest.raises(ValueError, match="1-d tensor"):
        v.decode(torch.zeros(2, 2, dtype=torch.long))


# -- corpus -----------------------------------------------------------------------------------
def test_python_docs_text_is_real_english():
    text = python_docs_text()
    assert len(text) > 400_000
    assert text == text.lower() and text.isascii()
    assert "  " not in text
    assert text.count(" the ") > 3000


def test_python_docs_text_is_the_frozen_copy_whatever_the_python():
    # The chapters quote numbers of this exact text: 432,640 characters, 67 symbols.
    text = python_docs_text()
    assert len(text) == 432_640 and len(set(text)) == 67
    assert len(corpus.python_reference_raw()) == 465_048


def test_a_damaged_frozen_text_is_refused_with_a_clear_message():
    good = gzip.compress("some text".encode(), mtime=0)
    digest = hashlib.sha256(b"some text").hexdigest()
    assert corpus.verified_text(good, digest, "x.gz") == "some text"
    bad = gzip.compress("some text!".encode(), mtime=0)
    with pytest.raises(ValueError, match="x.gz is damaged or was changed: expected SHA-256"):
        corpus.verified_text(bad, digest, "x.gz")


def other_pythons() -> list[str]:
    """Interpreters of Python 3.10-3.13 on this machine other than the running one."""
    found = {}
    candidates = [shutil.which(f"python3.{minor}") for minor in range(10, 14)]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0-3].*/bin/python3")))
    for exe in filter(None, candidates):
        probe = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2])"],
                               capture_output=True, text=True)
        version = probe.stdout.strip()
        if probe.returncode == 0 and version != str(sys.version_info[:2]):
            found.setdefault(version, exe)
    return list(found.values())


def test_the_frozen_text_reads_the_same_on_other_python_versions(tmp_path):
    """Imports only seqbook.corpus (standard library only) under every other Python 3.10-3.13."""
    pythons = other_pythons()
    if not pythons:
        pytest.skip("no other Python 3.10-3.13 interpreter on this machine")
    (tmp_path / "seqbook").symlink_to(Path(corpus.__file__).parent)
    here = hashlib.sha256(python_docs_text().encode()).hexdigest()
    for exe in pythons:
        result = subprocess.run(
            [exe, "-c", "import hashlib, sys; from seqbook.corpus import python_docs_text as t; "
                        "print(sys.version_info[:2], hashlib.sha256(t().encode()).hexdigest())"],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tmp_path)})
        assert result.returncode == 0, result.stderr
        assert result.stdout.split()[-1] == here, f"{exe} reads another text: {result.stdout}"


def test_split():
    a, b, c = split(list(range(100)))
    assert (len(a), len(b), len(c)) == (80, 10, 10)
    assert a + b + c == list(range(100))
    with pytest.raises(ValueError, match="three non-negative fractions"):
        split("abc", (0.5, 0.6, 0.1))


# -- synthetic source -------------------------------------------------------------------------
def test_entropy_rate_by_hand():
    s = LongRangeSource(lag=3, n_countries=2, n_fillers=2, stickiness=0.5, fidelity=1.0)
    # country 1 bit, first filler 1 bit, second filler 1 bit (stickiness 0.5 = fair), language 0
    assert s.entropy_rate() == pytest.approx(3 / 4)


def test_entropy_rate_matches_a_long_sample():
    s = LongRangeSource()
    nll = -s.true_log2_probs(s.sample(200_000, seed=0))
    stderr = nll.std() / math.sqrt(len(nll))
    assert abs(nll.mean() - s.entropy_rate()) < 4 * stderr + 1e-3


def test_sample_structure_and_determinism():
    s = LongRangeSource(lag=4)
    x = s.sample(1000, seed=7)
    assert x == s.sample(1000, seed=7) and x != s.sample(1000, seed=8)
    assert len(x) == 1000
    for start in range(0, 995, 5):
        sentence = x[start:start + 5]
        assert sentence[0] in s.countries and sentence[-1] in s.languages
        assert all(t in s.fillers for t in sentence[1:-1])
    agree = np.mean([s.languages.index(x[i + 4]) == s.countries.index(x[i]) for i in range(0, 995, 5)])
    assert 0.8 < agree < 0.97  # fidelity 0.9


def test_ngram_reaches_the_entropy_rate_only_once_the_window_spans_the_lag():
    s = LongRangeSource(lag=4)
    train, test = s.sample(100_000, seed=0), s.sample(20_000, seed=1)
    ce = {n: NGramLM(n, alpha=0.01).fit(train, vocab=s.vocab).cross_entropy(test) for n in (2, 4, 5)}
    floor = s.entropy_rate()
    assert ce[2] > floor + 0.3 and ce[4] > floor + 0.1
    assert abs(ce[5] - floor) < 0.05


def test_source_bad_input():
    with pytest.raises(ValueError, match="lag >= 2"):
        LongRangeSource(lag=1)
    with pytest.raises(ValueError, match="fidelity between 0 and 1"):
        LongRangeSource(fidelity=1.5)
    with pytest.raises(ValueError, match="positive integer n_tokens"):
        LongRangeSource().sample(0, seed=0)
    with pytest.raises(ValueError, match="cannot occur there"):
        LongRangeSource().true_log2_probs(["la", "France"])


# -- seeding ----------------------------------------------------------------------------------
def test_seeding_is_reproducible():
    seed_everything(5)
    a = (torch.rand(3), np.random.rand(3))
    seed_everything(5)
    b = (torch.rand(3), np.random.rand(3))
    assert torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert torch.equal(torch.rand(4, generator=generator(1)), torch.rand(4, generator=generator(1)))
    assert numpy_rng(2).random() == numpy_rng(2).random()


@pytest.mark.parametrize("bad", [1.5, "3", None, True])
def test_bad_seed_type(bad):
    with pytest.raises(TypeError, match="expected a non-negative integer seed"):
        seed_everything(bad)


def test_negative_seed():
    with pytest.raises(ValueError, match="non-negative integer seed, got -1"):
        generator(-1)


def test_the_package_as_colab_installs_it_carries_the_frozen_text(tmp_path):
    """`pip install git+URL` builds a wheel (not an editable install): the text must be inside it."""
    root, source = Path(corpus.__file__).resolve().parents[2], tmp_path / "source"
    # a copy of what the build reads, so that setuptools' build/ folder lands in tmp_path
    shutil.copytree(root / "book" / "lib", source / "book" / "lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "LICENSE", "LICENSE-CC-BY-4.0"):
        shutil.copy(root / name, source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    str(source), "-w", str(tmp_path / "wheel")], check=True, cwd=tmp_path)
    (wheel,) = (tmp_path / "wheel").glob("seqbook-*.whl")
    with zipfile.ZipFile(wheel) as archive:  # the package carries its licences
        metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        licences = [n for n in archive.namelist() if "/licenses/" in n]
    assert "License-Expression: MIT" in metadata and len(licences) == 2, (metadata[:600], licences)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(tmp_path / "site"), str(wheel)], check=True)
    result = subprocess.run([sys.executable, "-c", "from seqbook.corpus import python_docs_text as t; "
                             "import seqbook; print(seqbook.__file__, len(t()))"],
                            capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(tmp_path / "site")})
    assert result.returncode == 0, result.stderr[-2000:]
    where, length = result.stdout.split()
    assert where.startswith(str(tmp_path / "site")) and length == "432640"


# -- the reader's training seed (SEQBOOK_SEED) --------------------------------------------------
def test_training_seed_is_the_seed_itself_by_default(monkeypatch):
    from seqbook.seeding import training_seed
    monkeypatch.delenv("SEQBOOK_SEED", raising=False)
    assert [training_seed(s) for s in (0, 1, 7)] == [0, 1, 7]
    assert training_seed() == 0
    monkeypatch.setenv("SEQBOOK_SEED", "0")
    assert training_seed(3) == 3


def test_training_seed_shifts_every_run_without_collisions(monkeypatch):
    from seqbook.seeding import book_seed, training_seed
    seen = set()
    for k in range(5):
        monkeypatch.setenv("SEQBOOK_SEED", str(k))
        assert book_seed() == k
        runs = {training_seed(s) for s in range(10)}
        assert len(runs) == 10 and not runs & seen     # another k never repeats a run
        seen |= runs


@pytest.mark.parametrize("raw", ["one", "-1", "1.5"])
def test_bad_book_seed_names_the_variable(monkeypatch, raw):
    from seqbook.seeding import book_seed
    monkeypatch.setenv("SEQBOOK_SEED", raw)
    with pytest.raises(ValueError, match="expected SEQBOOK_SEED to be a non-negative integer"):
        book_seed()
