"""The bibliography: every entry well formed, every citation in the book resolves, every entry is cited.

The website build (-W) would find a broken entry too, but only after executing every chapter; this
finds it in a second (a merge once left an entry without its closing brace)."""
import re
from pathlib import Path

import nbformat
import pytest
from pybtex.database import parse_string

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "book" / "references.bib"


def entries_as_written(text):
    """The text of each @entry, split at the lines that start one."""
    return [e for e in re.split(r"\n(?=@)", text) if e.lstrip().startswith("@")]


def cited_keys():
    texts = [p.read_text() for p in (ROOT / "book").glob("*.md")]
    for path in sorted((ROOT / "book").glob("ch*.ipynb")):
        texts += [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
    keys = set()
    for text in texts:
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", text):
            keys.update(k.strip() for k in group.split(","))
    return keys


def test_every_entry_is_well_formed():
    text = BIB.read_text()
    for entry in entries_as_written(text):
        head = entry.splitlines()[0]
        assert entry.count("{") == entry.count("}"), f"unbalanced braces in the entry {head!r}"
        assert re.match(r"@\w+\{[\w:-]+,\s*$", head), f"an entry must start '@type{{key,': {head!r}"
    database = parse_string(text, "bibtex")
    assert len(database.entries) == len(entries_as_written(text)) >= 40


def test_every_citation_resolves_and_every_entry_is_cited():
    keys = set(parse_string(BIB.read_text(), "bibtex").entries)
    cited = cited_keys()
    assert cited - keys == set(), f"cited but not in references.bib: {sorted(cited - keys)}"
    assert keys - cited == set(), f"in references.bib but never cited: {sorted(keys - cited)}"


def test_the_check_sees_a_missing_brace():
    broken = BIB.read_text().replace("year      = {1949}\n}", "year      = {1949}\n", 1)
    assert broken != BIB.read_text()
    assert any(e.count("{") != e.count("}") for e in entries_as_written(broken))
