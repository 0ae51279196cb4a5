"""Hygiene of the committed notebooks: no outputs, the current set-up cell first, hidden checks,
exercises with solutions, and an instructor page that lists every exercise.
(nbval, run by `make test` over book/*.ipynb, executes them.)"""

import re

import nbformat
import pytest
import yaml

from seqbook.authoring import exercise_list, setup_cell
from seqbook.authoring import ROOT, chapter_files, chapters
from seqbook.authoring.student_edition import solution_cells, strip_solutions

CHAPTERS = chapter_files()


def test_every_chapter_in_the_toc_exists_and_vice_versa():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    listed = [c["file"] for part in toc["parts"] for c in part["chapters"] if "/ch" in c["file"]]
    assert len(listed) == len(chapters()), f"the toc lists chapters that do not exist: {listed}"
    assert chapters() == CHAPTERS, "every chapter notebook is in the toc, in the order of its number"
    assert CHAPTERS, "no chapter notebooks found"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; clear them before committing"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_first_code_cell_is_the_current_setup_cell(path):
    nb = nbformat.read(path, as_version=4)
    cell = setup_cell.first_code_cell(nb)
    assert cell.source == setup_cell.setup_source(), (
        f"{path.name}: run `python -m seqbook.authoring.setup_cell` to refresh its set-up cell")
    assert setup_cell.repository_url() in cell.source


def test_setup_cell_installs_only_in_colab():
    src = setup_cell.setup_source("https://example.org/x")
    ns = {}
    exec(src, ns)  # outside Colab this must do nothing (and not fail)
    assert "if 'google.colab' in sys.modules:" in src and "git+https://example.org/x" in src


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_claims_are_checked_by_hidden_cells(path):
    nb = nbformat.read(path, as_version=4)
    hidden = [c for c in nb.cells if c.cell_type == "code" and "remove-cell" in c.metadata.get("tags", [])]
    asserts = sum(len(re.findall(r"^\s*assert\b", c.source, re.M)) for c in hidden)
    assert asserts >= 5, f"{path.name} has only {asserts} hidden assertions"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_at_least_five_exercises_each_with_a_solution(path):
    nb = nbformat.read(path, as_version=4)
    exercises = exercise_list.exercises(path)
    assert len(exercises) >= 5
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for ex in exercises:
        assert ex["label"], f"{path.name}: exercise {ex['title']!r} has no :label:"
        assert re.search(r"\{solution(?:-start)?\}\s*" + re.escape(ex["label"]), text), (
            f"{path.name}: exercise {ex['label']} has no solution")
    assert any(ex["checkers"] for ex in exercises), f"{path.name}: no exercise has a checker"
    assert solution_cells(nb) and len(strip_solutions(nb).cells) < len(nb.cells)


def test_instructor_page_lists_every_exercise():
    assert exercise_list.current_page_table() == exercise_list.table(), (
        "run `python -m seqbook.authoring.exercise_list --write` to update book/instructors.md")


MAX_LINE = 88  # wider code lines are cut off on the website's page


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_shown_code_fits_the_page(path):
    nb = nbformat.read(path, as_version=4)
    long = [(i, line) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", [])
            for line in c.source.splitlines() if len(line) > MAX_LINE]
    assert not long, f"{path.name}: {len(long)} code lines longer than {MAX_LINE} characters, e.g. {long[:3]}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_markdown_holds_no_control_characters(path):
    """A stray "\\t" in a notebook's JSON turns `$\\tanh$` into a tab and "anh" on the page."""
    nb = nbformat.read(path, as_version=4)
    bad = [(i, repr(ch), c.source[max(0, k - 15):k + 15]) for i, c in enumerate(nb.cells)
           if c.cell_type == "markdown"
           for k, ch in enumerate(c.source) if ord(ch) < 32 and ch != "\n"]
    assert not bad, f"{path.name}: control characters in markdown (cell, char, context): {bad[:5]}"


def library_object(dotted: str):
    """``Name`` or ``Name.attr`` from whichever seqbook module defines ``Name``."""
    import importlib
    import pkgutil

    import seqbook

    head, *rest = dotted.split(".")
    for info in pkgutil.iter_modules(seqbook.__path__):
        module = importlib.import_module(f"seqbook.{info.name}")
        if getattr(getattr(module, head, None), "__module__", None) == module.__name__:
            obj = getattr(module, head)
            for attr in rest:
                obj = getattr(obj, attr)
            return obj
    raise LookupError(f"{dotted} is not defined in any seqbook module")


def printed_library_objects(path) -> list[str]:
    """The library objects a chapter prints with ``inspect.getsource``, by dotted name."""
    nb = nbformat.read(path, as_version=4)
    return sorted({m for c in nb.cells if c.cell_type == "code"
                   for m in re.findall(r"getsource\(([A-Za-z_][\w.]*)\)", c.source)})


def check_statements(obj) -> dict[str, list[int]]:
    """For each function in ``obj``'s source: the source lines of its argument checks, one list
    per check statement (a ``raise``, an ``if`` that ends in one, or a call to ``checks.*`` or
    to a ``check_*`` function)."""
    import ast
    import inspect
    import textwrap

    def is_check_call(node):
        if not isinstance(node, ast.Call):
            return False
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
        return owner == "checks" or name.startswith(("check", "_check"))

    def is_check(stmt):
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.body[-1], ast.Raise):
            return True
        return isinstance(stmt, (ast.Expr, ast.Assign, ast.Return)) and any(map(is_check_call, ast.walk(stmt)))

    def visit(statements, found):
        for stmt in statements:
            if is_check(stmt):
                found.append(list(range(stmt.lineno, stmt.end_lineno + 1)))
            elif not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(stmt, block, []), found)
        return found

    source = obj if isinstance(obj, str) else textwrap.dedent(inspect.getsource(obj))
    return {fn.name: visit(fn.body, []) for fn in ast.walk(ast.parse(source)) if isinstance(fn, ast.FunctionDef)}


def test_the_check_line_counter_counts_checks_and_nothing_else():
    demo = """
def demo(x, n):
    checks.positive_int(n, "n")
    if x is None:
        raise ValueError("expected x")
    for k in range(n):
        x = x + k  # not a check
    if n > 3:
        x = 0      # not a check either
    return check_it(x)
"""
    assert [len(lines) for lines in check_statements(demo)["demo"]] == [1, 2, 1]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_printed_library_code_shows_the_idea_not_the_checks(path):
    """A function a chapter prints has at most one check statement (one call to ``seqbook.checks``,
    say) before its equations, and a printed object at most two check lines in all."""
    for name in printed_library_objects(path):
        found = check_statements(library_object(name))
        crowded = {fn: len(stmts) for fn, stmts in found.items() if len(stmts) > 1}
        assert not crowded, f"{path.name} prints {name}, whose functions check more than once: {crowded}"
        lines = sum(len(lines) for stmts in found.values() for lines in stmts)
        assert lines <= 2, f"{path.name} prints {name} with {lines} lines of argument checks"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_library_source_printed_on_the_page_fits_it(path):
    """Chapters print library code with inspect.getsource: it must fit the page as well."""
    import inspect

    nb = nbformat.read(path, as_version=4)
    shown = {m for c in nb.cells if c.cell_type == "code"
             for m in re.findall(r"getsource\(([A-Za-z_][\w.]*)\)", c.source)}
    long = [(name, line) for name in sorted(shown)
            for line in inspect.getsource(library_object(name)).splitlines() if len(line) > MAX_LINE]
    assert not long, f"{path.name} prints library lines longer than {MAX_LINE} characters: {long[:3]}"
