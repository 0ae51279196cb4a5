"""The list of every chapter's exercises, for the instructor page.

``python -m seqbook.authoring.exercise_list --write`` regenerates the table between the markers in
``book/instructors.md``; a test checks that the table there is current.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat

from . import ROOT, chapters

PAGE = ROOT / "book" / "instructors.md"
BEGIN, END = "<!-- exercise-list:begin -->", "<!-- exercise-list:end -->"
_EXERCISE = re.compile(r"^\s*(?:```+|:::+)\s*\{exercise\}\s*(?P<title>.*?)\s*\n(?P<body>.*)", re.M | re.S)
_LABEL = re.compile(r"^:label:\s*(\S+)", re.M)
_CHECKER = re.compile(r"\b(check_\w+)\s*\(")


def exercises(path: Path) -> list[dict]:
    """Each exercise of a chapter: its label, title and the checkers its student cells call."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for i, cell in enumerate(nb.cells):
        m = _EXERCISE.search(cell.source) if cell.cell_type == "markdown" else None
        if not m:
            continue
        label = _LABEL.search(m.group("body"))
        checkers = []
        for nxt in nb.cells[i + 1:]:
            if nxt.cell_type == "markdown":
                if _EXERCISE.search(nxt.source) or "{solution" in nxt.source:
                    break
            elif "solution" not in nxt.metadata.get("tags", []):
                checkers += [c for c in _CHECKER.findall(nxt.source) if c not in checkers]
        found.append({"label": label.group(1) if label else None, "title": m.group("title"),
                      "checkers": checkers})
    return found


_HEADING = re.compile(r"^#{1,6}\s")


def exercise_blocks(nb) -> list[list]:
    """The cells of each exercise of notebook ``nb``, in order: from the markdown cell that opens
    the exercise up to (not including) the next exercise or the next heading that is not inside a
    gated solution. A block holds the exercise text, its student cells and its solution."""
    from .student_edition import _END, _START

    blocks, inside = [], False
    for cell in nb.cells:
        md = cell.cell_type == "markdown"
        opens = md and bool(_EXERCISE.search(cell.source))
        if opens or (md and not inside and _HEADING.match(cell.source)):
            blocks.append([cell] if opens else None)
        elif blocks and blocks[-1] is not None:
            blocks[-1].append(cell)
        if md and _START.search(cell.source):
            inside = True
        elif md and _END.search(cell.source):
            inside = False
    return [b for b in blocks if b is not None]


def exercise_label(cell) -> str | None:
    """The ``:label:`` of the exercise that markdown ``cell`` opens (None without one)."""
    m = _EXERCISE.search(cell.source)
    label = _LABEL.search(m.group("body")) if m else None
    return label.group(1) if label else None


def table(root: Path = ROOT) -> str:
    rows = ["| chapter | exercise | label | checker |", "| --- | --- | --- | --- |"]
    for path in chapters(root):
        chapter = int(re.match(r"ch(\d+)", path.name).group(1))
        for ex in exercises(path):
            ref = f"{{ref}}`{ex['label']}`" if ex["label"] else ex["title"]
            check = ", ".join(f"`{c}`" for c in ex["checkers"]) or "(derivation or by hand: see solution)"
            label = f"`{ex['label']}`" if ex["label"] else ""
            rows.append(f"| {chapter} | {ref} | {label} | {check} |")
    return "\n".join(rows)


def current_page_table(page: Path = PAGE) -> str:
    text = page.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()


def write(page: Path = PAGE) -> None:
    text = page.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    page.write_text(text[:start] + "\n" + table() + "\n" + text[end:])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"update the table in {PAGE.relative_to(ROOT)}")
    if parser.parse_args().write:
        write()
    print(table())
