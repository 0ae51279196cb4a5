"""Every chapter keeps its sections, and every sentence that points at another section points at
one that exists.

A chapter's outline lives in ``tests/outlines/<chapter>.yml``:

- ``headings``: every heading of the chapter, in order, with its ``#`` marks. An edit that drops or
  renames a section fails here until the outline is changed too, on purpose and in the same
  commit (chapter 3 once lost a whole section without any test noticing).
- ``references``: every sentence that refers to another section, by a snippet of its text and the
  heading it means. The test finds such sentences by their words ("as argued", "we saw above",
  "the previous section", "the next section", "the section on ...") and checks that each one is
  declared, that its heading exists, and that it lies on the side the words say: an argument
  referred back to comes before the sentence, "the next section" is the next one.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import yaml

from seqbook.authoring import chapter_files

OUTLINES = Path(__file__).parent / "outlines"
CHAPTERS = chapter_files()

# Words that point at another part of the chapter, by kind. A bare "above" or "below" (the table
# above, the figure below) points at a neighbouring output and is not checked.
KINDS = {
    "back": r"\bas (?:we |was )?(?:argued|saw|showed|explained|derived|discussed|promised)\b"
            r"|\b(?:argued|explained|derived|discussed|saw|showed|shown|measured|defined|introduced)"
            r" (?:above|earlier in (?:this|the) chapter)\b"
            r"|\bthe (?:previous|preceding) section\b|\bthe sections? above\b",
    "next": r"\bnext section\b",
    "later": r"\bnext sections\b|\bthe (?:following|last) section\b",
    "named": r"\bthe section on\b",
}
PHRASE = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in KINDS.items()), re.I)


def headings_and_prose(nb) -> tuple[list[str], list[tuple[int, str]]]:
    """A notebook's headings (``"## Title"``) in order, and its markdown prose as
    ``(number of headings before it, text with its white space collapsed)``, one piece per markdown
    cell and heading. Lines inside fenced blocks (exercises, solutions, notes) are prose, never
    headings."""
    headings, prose = [], []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        fences, lines = [], []           # the open fences, innermost last
        for line in cell.source.splitlines():
            marker = re.match(r"\s*(`{3,}|:{3,})(.*)", line)
            if marker:
                fence, info = marker.group(1), marker.group(2).strip()
                if info or not fences:
                    fences.append(fence)
                elif fence == fences[-1]:
                    fences.pop()
            elif not fences and re.match(r"#{1,6} ", line):
                prose.append((len(headings), " ".join(" ".join(lines).split())))
                headings.append(line.rstrip())
                lines = []
                continue
            lines.append(line)
        prose.append((len(headings), " ".join(" ".join(lines).split())))
    return headings, prose


def level(heading: str) -> int:
    return len(heading) - len(heading.lstrip("#"))


def heading_problems(nb, outline: dict, name: str = "the chapter") -> list[str]:
    """What differs between the notebook's headings and its outline's (nothing: ``[]``)."""
    headings, _ = headings_and_prose(nb)
    expected = outline["headings"]
    missing = [h for h in expected if h not in headings]
    extra = [h for h in headings if h not in expected]
    problems = []
    if missing:
        problems.append(f"{name} lost these sections: {missing}. If that is on purpose, update its "
                        f"outline (and every sentence that refers to them)")
    if extra:
        problems.append(f"{name} has sections its outline does not list: {extra}; add them to the outline")
    if not problems and headings != expected:
        problems.append(f"{name}: the sections are in another order than the outline's")
    if not headings or level(headings[0]) != 1 or [level(h) for h in headings].count(1) != 1:
        problems.append(f"{name} must have exactly one title (# ...), its first heading")
    return problems


def reference_problems(nb, outline: dict, name: str = "the chapter") -> list[str]:
    """Sentences that refer to another section without being declared in the outline, or whose
    declared heading is missing or on the wrong side; and declarations no sentence uses."""
    headings, prose = headings_and_prose(nb)
    declared = outline.get("references") or []
    snippets = [" ".join(ref["text"].split()) for ref in declared]
    problems, used = [], set()
    for before, text in prose:
        for match in PHRASE.finditer(text):
            kind, at = match.lastgroup, match.start()
            context = f"'...{text[max(0, at - 50):match.end() + 40]}...'"
            covering = [i for i, snippet in enumerate(snippets)
                        for start in [m.start() for m in re.finditer(re.escape(snippet), text)]
                        if start <= at < start + len(snippet)]
            if not covering:
                problems.append(f"{name}: {context} refers to another section; declare it in the "
                                f"outline's references, with the heading it means")
                continue
            used.add(covering[0])
            heading = declared[covering[0]]["heading"]
            if heading not in headings:
                problems.append(f"{name}: {context} refers to the section {heading!r}, which the "
                                f"chapter does not have")
                continue
            target, here = headings.index(heading), before - 1   # here: the section it is in
            if kind == "back" and target > here:
                problems.append(f"{name}: {context} refers back to {heading!r}, which comes later")
            elif kind == "next":
                # the next heading of the same rank (a section's subsections are part of it; the
                # title's next section is the first section)
                rank = max(2, level(headings[here])) if here >= 0 else 6
                following = [i for i in range(here + 1, len(headings)) if level(headings[i]) <= rank]
                if not following or target != following[0]:
                    actual = headings[following[0]] if following else "none"
                    problems.append(f"{name}: {context} says 'next section', but the next section "
                                    f"is {actual!r}, not {heading!r}")
            elif kind == "later" and target <= here:
                problems.append(f"{name}: {context} refers forward to {heading!r}, which comes earlier")
            # "the section on X" may point either way: it is enough that the heading exists
    stale = [ref["text"] for i, ref in enumerate(declared) if i not in used]
    if stale:
        problems.append(f"the outline of {name} declares references it no longer makes: {stale}")
    return problems


def outline(path: Path) -> dict:
    file = OUTLINES / f"{path.stem}.yml"
    if not file.exists():
        pytest.fail(f"{path.name} has no outline: write tests/outlines/{file.name} with its headings "
                    f"(see tests/test_outline.py)")
    return yaml.safe_load(file.read_text())


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_headings_match_the_chapters_outline(path):
    problems = heading_problems(nbformat.read(path, as_version=4), outline(path), path.name)
    assert not problems, "\n".join(problems) + f"\n(the outline: tests/outlines/{path.stem}.yml)"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_reference_to_a_section_is_declared_and_resolves(path):
    problems = reference_problems(nbformat.read(path, as_version=4), outline(path), path.name)
    assert not problems, "\n".join(problems) + f"\n(the outline: tests/outlines/{path.stem}.yml)"


# -- the checks themselves, on a small made-up chapter ---------------------------------------------
def _chapter(*markdown: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text) for text in markdown]
    return nb


_ARGUED = "The forward tagger sits at a coin flip, exactly as argued: the word arrives later."
_WHOLE = _chapter(
    "# Gated layers\n\nWe train a stack of two layers (next section).",
    "## Bidirectional layers\n\nA forward layer cannot see a later *not*, so it guesses.",
    _ARGUED,
    "## Stacked layers\n\nMore layers.\n\n```{exercise} A title\n## not a heading\n```",
)
_OUTLINE = {"headings": ["# Gated layers", "## Bidirectional layers", "## Stacked layers"],
            "references": [{"text": "exactly as argued", "heading": "## Bidirectional layers"},
                           {"text": "two layers (next section)", "heading": "## Bidirectional layers"}]}


def test_a_whole_chapter_passes():
    assert heading_problems(_WHOLE, _OUTLINE) == [] and reference_problems(_WHOLE, _OUTLINE) == []


def test_a_lost_section_and_the_argument_it_held_are_both_caught():
    # chapter 3's regression: the section's heading and text went, the sentence after it stayed
    broken = _chapter(_WHOLE.cells[0].source, _ARGUED, _WHOLE.cells[3].source)
    [lost] = heading_problems(broken, _OUTLINE)
    assert "lost these sections" in lost and "Bidirectional" in lost
    problems = reference_problems(broken, _OUTLINE)
    assert any("exactly as argued" in p and "does not have" in p for p in problems), problems


def test_undeclared_stale_and_misplaced_references_are_caught():
    undeclared = {**_OUTLINE, "references": _OUTLINE["references"][1:]}
    assert any("declare it" in p for p in reference_problems(_WHOLE, undeclared))
    stale = {**_OUTLINE, "references": _OUTLINE["references"] + [{"text": "gone", "heading": "## Stacked layers"}]}
    assert any("no longer makes" in p for p in reference_problems(_WHOLE, stale))
    wrong_next = {**_OUTLINE, "references": [_OUTLINE["references"][0],
                                             {"text": "two layers (next section)", "heading": "## Stacked layers"}]}
    assert any("next section is '## Bidirectional layers'" in p for p in reference_problems(_WHOLE, wrong_next))
    forward = {**_OUTLINE, "references": [{"text": "exactly as argued", "heading": "## Stacked layers"},
                                          _OUTLINE["references"][1]]}
    assert any("comes later" in p for p in reference_problems(_WHOLE, forward))


def test_headings_in_another_order_or_unlisted_are_caught():
    assert any("order" in p for p in heading_problems(
        _WHOLE, {"headings": ["# Gated layers", "## Stacked layers", "## Bidirectional layers"]}))
    assert any("does not list" in p for p in heading_problems(
        _WHOLE, {"headings": ["# Gated layers", "## Stacked layers"]}))


def test_the_reference_finder_finds_what_it_should():
    text = ("exactly as argued; we saw above; the previous section; (next section); the next sections; "
            "the section on smoothing; the table above; as measured on the test set; shown earlier")
    kinds = [m.lastgroup for m in PHRASE.finditer(text)]
    assert kinds == ["back", "back", "back", "next", "later", "named"]
