"""Otter-Grader assignments from the chapters: ``make grader``.

For every chapter this writes an Otter Assign *master notebook*, generated from the chapter itself
(so a new exercise flows in), and runs ``otter assign`` on it:

- ``_build/grader/chNN/student/``: the notebook a student gets (stubs, ``grader.check`` cells,
  public tests in ``tests/``), with no solution and no hidden test;
- ``_build/grader/chNN/autograder/``: the solutions notebook, every test and ``autograder.zip``
  (upload it to Gradescope, or grade locally with ``otter run``).

What goes into the graded notebook: the chapter's imports, the set-up that the exercises use (only
the statements that compute the names the grading spec lists, sliced out of the chapter), and the
exercises: text, stub, solution, tests. The chapter's experiments stay out, so that a submission
grades in seconds.

How each exercise is graded lives outside the installed package, in ``grading/chNN.py`` (see
``grading/README.md``): points, whether it is autograded or read by the instructor, the hidden
tests and their reference answers. The checker call of a stub is the public test; it is generated
here, the hidden tests are written there.

Usage: ``python -m seqbook.authoring.grader [--out _build/grader] [--chapters 1 2 ...] [--master-only]``
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib.util
import inspect
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat
import yaml

from . import ROOT, chapters
from .exercise_list import _CHECKER, _EXERCISE, exercise_blocks, exercise_label
from .setup_cell import TAG as SETUP_TAG
from .setup_cell import repository_url
from .student_edition import _END, _START, is_solution_cell, solution_cells, strip_solutions

SPECS = ROOT / "grading"
OUT = ROOT / "_build" / "grader"
OTTER_VERSION = "7.0.0"
_OTTER_MARKERS = ("# SOLUTION", "# IGNORE", "# SEED", "# BEGIN PROMPT", "# END PROMPT",
                  "# BEGIN SOLUTION", "# END SOLUTION", "# BEGIN IGNORE", "# END IGNORE")


# -- the grading spec of a chapter (grading/chNN.py) ----------------------------------------------
@dataclass
class HiddenTest:
    """One hidden test: a self-contained function whose parameters name notebook variables."""

    function: Callable
    points: float

    @property
    def name(self) -> str:
        return self.function.__name__


@dataclass
class Question:
    """How one exercise is graded. ``kind`` is "auto" (its checker calls are the public tests, each
    worth ``public`` points, plus the hidden tests) or "manual" (read by the instructor, worth
    ``points``). An autograded exercise with parts to answer in words gets ``written`` points for a
    second, manually graded question. ``note`` is added to the exercise text in the graded notebook."""

    label: str
    kind: str
    points: float = 0
    public: float = 1
    written: float = 0
    note: str = ""
    hidden: list[HiddenTest] = field(default_factory=list)


class GradingSpec:
    """The grading spec of one chapter, filled in by ``grading/chNN.py``.

    ``setup``: names the chapter computes before its exercises that the graded notebook computes
    too (the statements that define them are sliced out of the chapter). ``experiments``: names
    the graded notebook must not compute (trained models, long measurements); a solution's
    statements that need them are left out of the graded solution."""

    def __init__(self, setup=(), experiments=()):
        self.setup, self.experiments = list(setup), set(experiments)
        self.questions: dict[str, Question] = {}

    def _add(self, question: Question) -> Question:
        if question.label in self.questions:
            raise ValueError(f"{question.label} is graded twice in the spec")
        self.questions[question.label] = question
        return question

    def auto(self, label: str, public: float = 1, written: float = 0, note: str = "") -> Question:
        return self._add(Question(label, "auto", public=public, written=written, note=note))

    def manual(self, label: str, points: float, note: str = "") -> Question:
        return self._add(Question(label, "manual", points=points, note=note))

    def hidden(self, label: str, points: float = 1):
        """Decorator: a hidden test of the autograded exercise ``label``."""
        def register(function):
            question = self.questions.get(label)
            if question is None or question.kind != "auto":
                raise ValueError(f"hidden test {function.__name__}: declare {label} with auto() first")
            question.hidden.append(HiddenTest(function, points))
            return function
        return register


def chapter_number(path: Path) -> int:
    return int(re.match(r"ch(\d+)", path.name).group(1))


def spec_path(chapter: Path, specs: Path = SPECS) -> Path:
    return specs / f"ch{chapter_number(chapter):02d}.py"


def load_spec(chapter: Path, specs: Path = SPECS) -> GradingSpec:
    """The :class:`GradingSpec` that ``grading/chNN.py`` defines as ``spec``."""
    path = spec_path(chapter, specs)
    if not path.exists():
        raise FileNotFoundError(f"{chapter.name} has no grading spec: expected {path}")
    module_spec = importlib.util.spec_from_file_location(f"seqbook_grading_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    if not isinstance(getattr(module, "spec", None), GradingSpec):
        raise ValueError(f"{path} must define `spec = GradingSpec(...)`")
    return module.spec


# -- code: statements, the names they define and use ---------------------------------------------
@dataclass
class Statement:
    source: str
    node: ast.stmt
    defines: set          # names bound by plain assignment, def, class, import, for, with
    modifies: set         # names changed in place (x[i] = ..., x.a = ..., x += ..., x.method(...))
    uses: set             # names read that the statement does not bind itself

    @property
    def is_import(self) -> bool:
        return isinstance(self.node, (ast.Import, ast.ImportFrom))


def _bound_names(node: ast.AST) -> set:
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
    return names


def _base_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _statement(node: ast.stmt, lines: list[str]) -> Statement:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    source = "\n".join(lines[first - 1:node.end_lineno])
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        defines = _bound_names(node)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        defines = {node.name}
    else:
        # top-level bindings only: the names a function defined here binds inside it stay local
        defines = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                defines.add(n.id)
    modifies = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store):
            modifies.add(_base_name(n))
        elif isinstance(n, ast.AugAssign):
            modifies.add(_base_name(n.target))
        elif isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) \
                and isinstance(n.value.func, ast.Attribute):
            modifies.add(_base_name(n.value.func))
    loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    uses = loads - _bound_names(node) - set(dir(builtins))
    return Statement(source, node, defines, modifies - {None}, uses)


def statements(source: str) -> list[Statement]:
    """The top-level statements of a code cell, with their source lines (comments inside kept)."""
    lines = source.splitlines()
    return [_statement(node, lines) for node in ast.parse(source).body]


def free_names(sources: list[str]) -> set:
    """Names that code reads without binding them anywhere itself (builtins excluded)."""
    tree = ast.parse("\n\n".join(sources))
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads - _bound_names(tree) - set(dir(builtins))


def without_statements(source: str, drop: Callable[[Statement], bool]) -> str:
    """``source`` with the lines of the top-level statements that ``drop`` picks removed (the
    comments between statements stay), and runs of blank lines squeezed."""
    lines = source.splitlines()
    gone = set()
    for node in ast.parse(source).body:
        if drop(_statement(node, lines)):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            gone |= set(range(first - 1, node.end_lineno))
    kept = [line for i, line in enumerate(lines) if i not in gone]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")


def rename(source: str, mapping: dict) -> str:
    """``source`` with every variable (a Name node) in ``mapping`` renamed, formatting kept."""
    if not mapping:
        return source
    lines = source.splitlines()
    spots = sorted(((n.lineno, n.col_offset, n.end_col_offset, mapping[n.id]) for n in ast.walk(ast.parse(source))
                    if isinstance(n, ast.Name) and n.id in mapping), reverse=True)
    for line, start, end, new in spots:  # offsets are in UTF-8 bytes
        raw = lines[line - 1].encode()
        lines[line - 1] = (raw[:start] + new.encode() + raw[end:]).decode()
    return "\n".join(lines)


def _checker_call(stmt: Statement) -> ast.Call | None:
    value = stmt.node.value if isinstance(stmt.node, (ast.Expr, ast.Assign)) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and _CHECKER.match(value.func.id + "("):
        return value
    return None


def _is_checker_import(stmt: Statement) -> bool:
    return stmt.is_import and all(_CHECKER.match(name + "(") for name in stmt.defines)


# -- the chapter's exercises ----------------------------------------------------------------------
@dataclass
class Check:
    """A checker call of a stub: ``checker(args)``, whose arguments read the variables ``params``."""

    checker: str
    module: str
    arguments: str
    params: list[str]


@dataclass
class Exercise:
    label: str
    title: str
    text: str                      # the exercise as plain Markdown
    stub: str                      # the student's cells, without the checker calls
    solution: str                  # the solution's code, without checker calls
    solution_text: list[str]       # the solution's prose, as plain Markdown
    checks: list[Check]

    @property
    def answer_names(self) -> set:
        """The variables and functions the student's cells define."""
        return set().union(*(s.defines for s in statements(self.stub))) if self.stub else set()


def _directive_text(source: str, name: str) -> tuple[str, str]:
    """(title, body) of the first ``{name}`` directive in ``source``, options dropped."""
    lines = source.splitlines()
    opening = re.compile(r"^\s*(?P<fence>```+|:::+)\s*\{%s\}\s*(?P<title>.*?)\s*$" % re.escape(name))
    for i, line in enumerate(lines):
        m = opening.match(line)
        if m:
            break
    else:
        raise ValueError(f"no {{{name}}} directive in {source[:80]!r}")
    fence, body = m.group("fence"), []
    for line in lines[i + 1:]:
        if line.strip() == fence:
            break
        body.append(line)
    else:
        raise ValueError(f"the {{{name}}} directive {m.group('title')!r} is never closed")
    while body and re.match(r"^:[\w-]+:", body[0]):
        body.pop(0)
    return m.group("title"), "\n".join(body).strip()


class _Markdown:
    """MyST roles of a chapter as plain Markdown (for Jupyter, Colab and Gradescope)."""

    def __init__(self, titles: dict, bib: dict):
        self.titles, self.bib = titles, bib

    def __call__(self, text: str) -> str:
        text = re.sub(r"\{ref\}`([^`<]*?)\s*(?:<([^`>]+)>)?`", self._ref, text)
        return re.sub(r"\{cite(?::\w+)?\}`([^`]+)`", self._cite, text)

    def _ref(self, m) -> str:
        label = m.group(2) or m.group(1)
        if m.group(2) and m.group(1):
            return m.group(1)
        return f"the exercise *{self.titles[label]}*" if label in self.titles else f"the section `{label}`"

    def _cite(self, m) -> str:
        return "(" + "; ".join(self.bib.get(k.strip(), k.strip()) for k in m.group(1).split(",")) + ")"


def bibliography(path: Path = ROOT / "book" / "references.bib") -> dict:
    """``key -> "Author et al. year"`` for every entry of a BibTeX file."""
    cites = {}
    for entry in re.split(r"\n(?=@)", path.read_text()):
        key = re.match(r"@\w+\{([^,]+),", entry.strip())
        if not key:
            continue
        author = re.search(r"author\s*=\s*[{\"](.+?)[}\"]\s*,?\s*\n", entry, re.S)
        year = re.search(r"year\s*=\s*[{\"]?(\d{4})", entry)
        if author and year:
            people = [a.strip() for a in re.sub(r"\s+", " ", author.group(1)).split(" and ")]
            surname = lambda a: (a.split(",")[0] if "," in a else a.split()[-1]).strip("{} ")  # noqa: E731
            who = surname(people[0]) + (" et al." if len(people) > 2 else
                                        f" and {surname(people[1])}" if len(people) == 2 else "")
            cites[key.group(1).strip()] = f"{who} {year.group(1)}"
    return cites


def _checker_modules(nb) -> dict:
    """``checker name -> module`` from the chapter's ``from seqbook.exercises... import`` lines."""
    modules = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("seqbook.exercises"):
                modules.update({a.asname or a.name: node.module for a in node.names})
    return modules


def chapter_exercises(nb) -> list[Exercise]:
    """Every exercise of a chapter notebook, split into text, stub, solution code and prose."""
    blocks = exercise_blocks(nb)
    titles = {exercise_label(b[0]): _directive_text(b[0].source, "exercise")[0] for b in blocks}
    markdown, modules = _Markdown(titles, bibliography()), _checker_modules(nb)
    found = []
    for block in blocks:
        label = exercise_label(block[0])
        if label is None:
            raise ValueError(f"an exercise has no :label: ({block[0].source[:60]!r}): grading needs one")
        title, body = _directive_text(block[0].source, "exercise")
        piece = nbformat.v4.new_notebook(cells=block)
        stub_cells = [c for c in strip_solutions(piece).cells
                      if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", [])]
        solution_code, solution_text = [], []
        for cell in solution_cells(piece):
            if cell.cell_type == "code":
                if "remove-cell" not in cell.metadata.get("tags", []):
                    solution_code.append(cell.source)
            elif _START.search(cell.source) or _END.search(cell.source):
                continue
            elif re.search(r"\{solution\}", cell.source):
                solution_text.append(markdown(_directive_text(cell.source, "solution")[1]))
            elif cell.source.strip():
                solution_text.append(markdown(cell.source))
        checks = []
        for cell in stub_cells:
            for stmt in statements(cell.source):
                call = _checker_call(stmt)
                if call is not None:
                    name = call.func.id
                    if name not in modules:
                        raise ValueError(f"{label}: cannot tell which module {name} comes from")
                    arguments = ast.get_source_segment(cell.source, call)[len(name):]
                    checks.append(Check(name, modules[name], arguments, sorted(free_names([arguments]))))
        drop = lambda s: _checker_call(s) is not None or _is_checker_import(s)  # noqa: E731
        stub = "\n\n".join(filter(None, (without_statements(c.source, drop) for c in stub_cells)))
        solution = "\n\n".join(filter(None, (without_statements(s, drop) for s in solution_code)))
        found.append(Exercise(label, title, markdown(body), stub, solution, solution_text, checks))
    return found


# -- the chapter's set-up, sliced to what the exercises need --------------------------------------
def _chapter_statements(nb) -> tuple[list[Statement], str | None]:
    """The statements of the chapter's code cells before its first exercise (its assert cells
    and set-up cell excepted), and the set-up cell's source."""
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and _EXERCISE.search(c.source))
    found, setup = [], None
    for cell in nb.cells[:first]:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code" or "remove-cell" in tags or is_solution_cell(cell):
            continue
        if SETUP_TAG in tags:
            setup = cell.source
            continue
        found += statements(cell.source)
    return found, setup


def chapter_imports(stmts: list[Statement]) -> list[str]:
    seen = []
    for s in stmts:
        if s.is_import and s.source not in seen:
            seen.append(s.source)
    return seen


def sliced_setup(stmts: list[Statement], wanted: list[str]) -> list[Statement]:
    """The fewest statements, in the chapter's order, that compute the names ``wanted``: a
    backward slice (a statement is kept if it defines or changes a name still needed; then the
    names it reads are needed). Imports are not part of it (the graded notebook has them all)."""
    defined = set().union(*(s.defines for s in stmts))
    missing = [w for w in wanted if w not in defined]
    if missing:
        raise ValueError(f"the spec's set-up names {missing} are not defined before the exercises")
    needed, kept = set(wanted), []
    for s in reversed(stmts):
        if s.is_import:
            needed -= s.defines
            continue
        if (s.defines | s.modifies) & needed:
            kept.append(s)
            needed = (needed - s.defines) | s.uses
    return kept[::-1]


# -- the master notebook --------------------------------------------------------------------------
def _raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def _config(kind: str, **values) -> str:
    return f"# BEGIN {kind}\n" + yaml.safe_dump(values, sort_keys=False, width=1000).strip()


def _test_cell(source: str, points: float, hidden: bool) -> str:
    return ('""" # BEGIN TEST CONFIG\n' + yaml.safe_dump({"points": points, "hidden": hidden}).strip()
            + '\n""" # END TEST CONFIG\n' + source)


def public_test(check: Check, index: int, mapping: dict) -> str:
    params = [mapping.get(p, p) for p in check.params]
    arguments = rename(f"f{check.arguments}", mapping)[1:]
    return (f"def checker_{index}({', '.join(params)}):\n"
            f"    from {check.module} import {check.checker}\n"
            f"    verdict = {check.checker}{arguments}\n"
            f"    assert verdict, str(verdict)")


def hidden_test(test: HiddenTest, mapping: dict) -> str:
    """The test function's source without its decorator, with renamed variables."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(test.function)))
    function = tree.body[0]
    function.decorator_list = []

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            node.id = mapping.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            node.arg = mapping.get(node.arg, node.arg)
            return node

    return ast.unparse(Rename().visit(tree))


def _answer_cell(stub: str, solution: str) -> str:
    for text in (stub, solution):
        for line in text.splitlines():
            if line.rstrip().endswith(_OTTER_MARKERS):
                raise ValueError(f"a line ends in one of Otter's markers: {line!r}")
    quote = '"""' if '"""' not in stub else "'''"
    if quote in stub:
        raise ValueError("a stub holds both kinds of triple quotes")
    prompt = f"{quote} # BEGIN PROMPT\n{stub}\n{quote} # END PROMPT\n" if stub else ""
    return f"{prompt}# BEGIN SOLUTION NO PROMPT\n{solution or 'pass'}\n# END SOLUTION"


def _slug(label: str) -> str:
    return re.sub(r"\W+", "_", re.sub(r"^ch\d+-ex-", "", label)).strip("_")


@dataclass
class Plan:
    """What the master notebook of one chapter holds, before it is written as cells."""

    chapter: Path
    spec: GradingSpec
    exercises: list[Exercise]
    imports: list[str]
    setup: list[Statement]
    setup_cell: str | None
    renames: dict               # label -> {name in the book: name in the graded notebook}

    def points(self, label: str) -> tuple[float, float]:
        """(autograded, manually graded) points of an exercise."""
        q = self.spec.questions[label]
        if q.kind == "manual":
            return 0, q.points
        checks = next(e for e in self.exercises if e.label == label).checks
        return q.public * len(checks) + sum(t.points for t in q.hidden), q.written


def check_spec(exercises: list[Exercise], spec: GradingSpec, chapter: str) -> None:
    """Every exercise graded, nothing graded that is not an exercise, every autograded one with
    a checker and hidden tests: the first failure names the exercise and what to do."""
    labels = [e.label for e in exercises]
    where = f"grading/ch{chapter_number(Path(chapter)):02d}.py"
    for label in labels:
        if label not in spec.questions:
            raise ValueError(f"{chapter}: exercise {label} has no grading spec: add "
                             f"`spec.auto({label!r}, ...)` with hidden tests, or `spec.manual({label!r}, "
                             f"points=...)`, to {where}")
    for label in spec.questions:
        if label not in labels:
            raise ValueError(f"{where} grades {label}, which is not an exercise of {chapter}")
    for e in exercises:
        q = spec.questions[e.label]
        if q.kind == "auto" and not e.checks:
            raise ValueError(f"{chapter}: {e.label} is autograded in {where} but its stub calls no checker")
        if q.kind == "auto" and not q.hidden:
            raise ValueError(f"{chapter}: {e.label} is autograded in {where} but has no hidden test")
        if q.kind == "manual" and not (e.solution_text or e.solution):
            raise ValueError(f"{chapter}: {e.label} is graded by hand but has no model solution")


def plan(chapter: Path, specs: Path = SPECS) -> Plan:
    nb = nbformat.read(chapter, as_version=4)
    spec, exercises = load_spec(chapter, specs), chapter_exercises(nb)
    check_spec(exercises, spec, chapter.name)
    stmts, setup_cell = _chapter_statements(nb)
    imported = set().union(*(s.defines for s in stmts if s.is_import))
    computed = set().union(*(s.defines for s in stmts if not s.is_import))
    for e in exercises:
        unknown = (free_names([e.stub, e.solution]) & computed) - imported - set(spec.setup) - spec.experiments
        if unknown:
            raise ValueError(f"{chapter.name}: {e.label} uses {sorted(unknown)}, which the chapter computes before "
                             f"its exercises: list each in {spec_path(chapter).relative_to(ROOT)} as set-up "
                             "(the graded notebook computes it; keep it quick) or as an experiment (the graded "
                             "solution leaves out what needs it)")
        if free_names([e.stub]) & spec.experiments:
            raise ValueError(f"{chapter.name}: the stub of {e.label} needs the experiments "
                             f"{sorted(free_names([e.stub]) & spec.experiments)}: it cannot be graded quickly")
        tainted = set(spec.experiments)

        def needs_experiment(s: Statement) -> bool:
            if s.uses & tainted:
                tainted.update(s.defines)
                return True
            return False

        e.solution = without_statements(e.solution, needs_experiment) if e.solution else e.solution
    setup = sliced_setup(stmts, spec.setup)
    # An answer's name must be its own: a test that runs at the end of the notebook (when its
    # check cell was deleted) must not read another exercise's variable of the same name.
    taken = set().union(*(s.defines for s in setup), imported)
    owners = {}
    for e in exercises:
        for name in e.answer_names:
            owners.setdefault(name, []).append(e.label)
    renames = {e.label: {n: f"{n}_{_slug(e.label)}" for n in e.answer_names
                         if len(owners[n]) > 1 or n in taken}
               for e in exercises}
    return Plan(chapter, spec, exercises, chapter_imports(stmts), setup, setup_cell, renames)


def grader_setup_source(book_setup: str | None) -> str:
    """The chapter's set-up cell, which in Colab also installs Otter's client."""
    url = repository_url()
    return (
        "# Set-up. In Colab this installs the book's package, seqbook, and Otter's client, which\n"
        "# runs the checks below; elsewhere it does nothing (see the chapter's own set-up cell).\n"
        "import subprocess, sys\n"
        "if 'google.colab' in sys.modules:\n"
        "    subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet',\n"
        f"                    'git+{url}', 'otter-grader=={OTTER_VERSION}'], check=True)"
    ) if book_setup is not None else ""


def requirements_text() -> str:
    """What Gradescope's grading image installs besides Otter: the book's package from its
    repository, which brings torch, numpy and matplotlib."""
    return ("# Installed by the autograder on Gradescope (Otter installs itself). The book's package\n"
            "# brings torch, numpy and matplotlib; pin torch here if the image should use a CPU build.\n"
            f"seqbook @ git+{repository_url()}\n")


def master_notebook(p: Plan, requirements: Path) -> nbformat.NotebookNode:
    """The Otter Assign master notebook of a chapter (format v1: raw cells ``# BEGIN QUESTION``...)."""
    number = chapter_number(p.chapter)
    title = nbformat.read(p.chapter, as_version=4).cells[0].source.splitlines()[0].lstrip("# ").strip()
    auto_total = sum(p.points(e.label)[0] for e in p.exercises)
    manual_total = sum(p.points(e.label)[1] for e in p.exercises)
    config = {
        "name": f"ch{number:02d}",
        "requirements": str(requirements),
        "export_cell": {"pdf": False, "instructions": "Submit the zip file (or just this notebook) "
                        "as your instructor asks, e.g. on Gradescope."},
        "generate": {"pdf": False, "show_stdout": False, "show_hidden": False},
        "tests": {"files": True, "ok_format": False},
        "run_tests": False,
        "python_version": "3.12",
    }
    cells = [
        _raw("# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False).strip()),
        nbformat.v4.new_markdown_cell(
            f"# Chapter {number} exercises: {title}\n\n"
            f"The exercises of chapter {number} of *Sequence Models, from the Chain Rule to the "
            f"Transformer*, as a graded assignment: {_points(auto_total)} points are autograded and "
            f"{_points(manual_total)} are read by your instructor. Run the cells from the top. "
            "Write your answer in the cell under each exercise, then run the `grader.check(...)` "
            "cell after it: it runs the exercise's checker, the same as in the chapter, and tells "
            "you what is right or wrong. Passing it does not guarantee full marks: the "
            "autograder runs further tests. Keep the names the cells define (the tests read "
            "them), and write the answers to the written parts in the Markdown cells provided."),
    ]
    setup = grader_setup_source(p.setup_cell)
    if setup:
        cells.append(nbformat.v4.new_code_cell(setup))
    cells.append(nbformat.v4.new_code_cell("\n".join(p.imports)))
    if p.setup:
        cells.append(nbformat.v4.new_markdown_cell(
            "From the chapter: the data and objects that the exercises below use."))
        cells.append(nbformat.v4.new_code_cell("\n".join(s.source for s in p.setup)))
    for e in p.exercises:
        cells += _question_cells(p, e)
    return nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})


def _points(x: float) -> str:
    return f"{x:g}"


def _question_cells(p: Plan, e: Exercise) -> list:
    q, mapping = p.spec.questions[e.label], p.renames[e.label]
    auto, manual = p.points(e.label)
    heading = f"## {e.title}\n\n*Exercise `{e.label}`*"
    note = f"\n\n**In this notebook:** {q.note}" if q.note else ""
    renamed = "".join(f"\n\n*Here `{old}` is called `{new}`, so that it does not clash with another "
                      f"exercise's.*" for old, new in mapping.items())
    text = nbformat.v4.new_markdown_cell(f"{heading}\n\n{e.text}{note}{renamed}")
    prose = [nbformat.v4.new_markdown_cell(t) for t in e.solution_text]
    answer = nbformat.v4.new_code_cell(_answer_cell(rename(e.stub, mapping), rename(e.solution, mapping)))
    if q.kind == "manual":
        code = [answer] if e.stub else [nbformat.v4.new_code_cell(e.solution)] if e.solution else []
        return [_raw(_config("QUESTION", name=e.label, manual=True, points=manual)), text,
                _raw("# BEGIN SOLUTION"), *code, *prose, _raw("# END SOLUTION"), _raw("# END QUESTION")]
    tests = [_test_cell(public_test(c, i + 1, mapping), q.public, False) for i, c in enumerate(e.checks)]
    tests += [_test_cell(hidden_test(t, mapping), t.points, True) for t in q.hidden]
    cells = [_raw(_config("QUESTION", name=e.label, points=auto)), text,
             _raw("# BEGIN SOLUTION"), answer, *([] if q.written else prose), _raw("# END SOLUTION"),
             _raw("# BEGIN TESTS"), *[nbformat.v4.new_code_cell(t) for t in tests], _raw("# END TESTS"),
             _raw("# END QUESTION")]
    if q.written:
        cells += [_raw(_config("QUESTION", name=f"{e.label}-written", manual=True, points=manual)),
                  nbformat.v4.new_markdown_cell(
                      f"**{e.title}, the written part.** Answer here the parts of the exercise above "
                      "that ask for an explanation, a derivation or a measurement."),
                  _raw("# BEGIN SOLUTION"), *prose, _raw("# END SOLUTION"), _raw("# END QUESTION")]
    return cells


# -- building ---------------------------------------------------------------------------------------
def otter_command() -> list[str]:
    """Otter's command line from the environment this module runs in."""
    otter = Path(sys.executable).with_name("otter")
    if not otter.exists():
        raise FileNotFoundError(f"Otter-Grader is not installed next to {sys.executable}: run `make grader`, "
                                "or `pip install -r requirements-grader.txt`")
    return [str(otter)]


def build_chapter(chapter: Path, out: Path = OUT, run_assign: bool = True) -> Path:
    """Write ``out/chNN/master/chNN.ipynb`` and run ``otter assign`` into ``out/chNN``."""
    name = f"ch{chapter_number(chapter):02d}"
    where = out.resolve() / name   # otter runs in the master's folder: relative paths would break
    if where.exists():
        shutil.rmtree(where)
    (where / "master").mkdir(parents=True)
    requirements = where / "master" / "requirements.txt"
    requirements.write_text(requirements_text())
    master = where / "master" / f"{name}.ipynb"
    nbformat.write(master_notebook(plan(chapter), requirements), master)
    if run_assign:
        result = subprocess.run([*otter_command(), "assign", str(master), str(where)], cwd=where / "master",
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"otter assign failed on {master}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        zips = sorted((where / "autograder").glob(f"{name}-autograder_*.zip"))
        shutil.copy(zips[-1], where / "autograder" / "autograder.zip")
        for z in zips:
            z.unlink()
    return where


def summary(root: Path = ROOT, specs: Path = SPECS) -> str:
    """A Markdown table of questions and points per chapter."""
    rows = ["| chapter | exercises | autograded (points) | read by the instructor (points) | total |",
            "| --- | ---: | ---: | ---: | ---: |"]
    for chapter in chapters(root):
        p = plan(chapter, specs)
        auto = [p.points(e.label)[0] for e in p.exercises]
        manual = [p.points(e.label)[1] for e in p.exercises]
        rows.append(f"| {chapter_number(chapter)} | {len(p.exercises)} | {sum(a > 0 for a in auto)} "
                    f"({_points(sum(auto))}) | {sum(m > 0 for m in manual)} ({_points(sum(manual))}) | "
                    f"{_points(sum(auto) + sum(manual))} |")
    return "\n".join(rows)


PAGE = ROOT / "book" / "instructors.md"
BEGIN, END = "<!-- grading-points:begin -->", "<!-- grading-points:end -->"


def current_page_table(page: Path = PAGE) -> str:
    text = page.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()


def write_page_table(page: Path = PAGE) -> None:
    text = page.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    page.write_text(text[:start] + "\n" + summary() + "\n" + text[end:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--chapters", type=int, nargs="*", help="chapter numbers (default: all)")
    parser.add_argument("--master-only", action="store_true", help="write the master notebooks only")
    parser.add_argument("--write-page", action="store_true",
                        help=f"update the table of points in {PAGE.relative_to(ROOT)} and stop")
    args = parser.parse_args(argv)
    if args.write_page:
        write_page_table()
        print(summary())
        return 0
    selected = [c for c in chapters() if not args.chapters or chapter_number(c) in args.chapters]
    for chapter in selected:
        where = build_chapter(chapter, args.out, run_assign=not args.master_only)
        print(f"{chapter.name}: {where}")
    print(summary())
    return 0


if __name__ == "__main__":
    # run the importable module, not __main__: the specs import GradingSpec from it
    from seqbook.authoring import grader

    sys.exit(grader.main())
