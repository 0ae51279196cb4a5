"""The Otter-Grader assignments (`make grader`): a spec for every exercise, master notebooks generated
from the chapters, and (slow) real grading with `otter run` of right, untouched, wrong and malformed
submissions."""

import inspect
import json
import re
import resource
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import nbformat
import pytest

from seqbook.authoring import ROOT, chapters
from seqbook.authoring.exercise_list import exercises
from seqbook.authoring.student_edition import strip_solutions
from seqbook.authoring.grader import (build_chapter, chapter_number, current_page_table, hidden_test, plan,
                                      rename, sliced_setup, statements, summary, without_statements)

C, M = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
OTTER = Path(sys.executable).with_name("otter")


# -- the specs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_every_exercise_of_every_chapter_is_graded(chapter):
    p = plan(chapter)   # raises, naming the exercise, if one has no spec or a spec has no exercise
    assert [e.label for e in p.exercises] == [e["label"] for e in exercises(chapter)]
    for e in p.exercises:
        auto, manual = p.points(e.label)
        assert auto + manual > 0, e.label
        if p.spec.questions[e.label].kind == "auto":
            assert e.checks and p.spec.questions[e.label].hidden, e.label


def chapter_with(tmp_path, *cells, spec="spec = GradingSpec()\n"):
    (tmp_path / "book").mkdir(exist_ok=True)
    path = tmp_path / "book" / "ch09_toy.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [M("# A toy chapter"), C("import math\nx_data = [1, 2, 3]\ntotal = sum(x_data)\n"
                                          "fig = print('a plot')"), *cells]
    nbformat.write(nb, path)
    specs = tmp_path / "grading"
    specs.mkdir(exist_ok=True)
    (specs / "ch09.py").write_text("from seqbook.authoring.grader import GradingSpec\n" + spec)
    return path, specs


EXERCISE = [M("## Exercises\n\n```{exercise} Double it\n:label: ch9-ex-double\n\nWrite `double(x)`.\n```"),
            C("from seqbook.exercises.ch01 import check_perplexity as check_double\n\n"
              "def double(x):\n    raise NotImplementedError\n\ncheck_double(double)"),
            M("```{solution-start} ch9-ex-double\n:class: dropdown\n```"),
            C("def double(x):\n    return 2 * x\n\nverdict = check_double(double)", metadata={"tags": ["solution"]}),
            M("Twice x. SOLUTION PROSE"),
            M("```{solution-end}\n```"),
            C("assert verdict", metadata={"tags": ["remove-cell", "solution"]})]


def test_an_exercise_without_a_spec_is_named(tmp_path):
    path, specs = chapter_with(tmp_path, *EXERCISE)
    with pytest.raises(ValueError, match=r"exercise ch9-ex-double has no grading spec: add .*grading/ch09.py"):
        plan(path, specs)


def test_a_spec_for_a_missing_exercise_or_without_hidden_tests_is_refused(tmp_path):
    path, specs = chapter_with(tmp_path, *EXERCISE, spec="spec = GradingSpec()\nspec.auto('ch9-ex-double')\n"
                                                         "spec.manual('ch9-ex-gone', points=1)\n")
    with pytest.raises(ValueError, match="grades ch9-ex-gone, which is not an exercise"):
        plan(path, specs)
    path, specs = chapter_with(tmp_path, *EXERCISE, spec="spec = GradingSpec()\nspec.auto('ch9-ex-double')\n")
    with pytest.raises(ValueError, match="ch9-ex-double is autograded .* but has no hidden test"):
        plan(path, specs)


def test_a_name_the_chapter_computes_must_be_set_up_or_an_experiment(tmp_path):
    uses_total = [*EXERCISE[:3], C("def double(x):\n    return 2 * x * total // total\n",
                                   metadata={"tags": ["solution"]}), *EXERCISE[4:]]
    spec = ("spec = GradingSpec({})\nspec.auto('ch9-ex-double')\n"
            "@spec.hidden('ch9-ex-double', points=2)\ndef doubles(double):\n    assert double(2) == 4\n")
    path, specs = chapter_with(tmp_path, *uses_total, spec=spec.format(""))
    with pytest.raises(ValueError, match=r"ch9-ex-double uses \['total'\].*set-up .* or as an experiment"):
        plan(path, specs)
    path, specs = chapter_with(tmp_path, *uses_total, spec=spec.format("setup=['total']"))
    p = plan(path, specs)
    assert [s.source for s in p.setup] == ["x_data = [1, 2, 3]", "total = sum(x_data)"]   # not the plot
    e = p.exercises[0]
    assert e.stub == "def double(x):\n    raise NotImplementedError"       # no checker, no checker import
    assert "check_double" not in e.solution and "return 2 * x" in e.solution
    assert e.solution_text == ["Twice x. SOLUTION PROSE"] and "assert verdict" not in e.solution
    assert [(c.checker, c.module, c.params) for c in e.checks] == [("check_double", "seqbook.exercises.ch01", ["double"])]
    path, specs = chapter_with(tmp_path, *uses_total, spec=spec.format("experiments=['total']"))
    assert "total" not in plan(path, specs).exercises[0].solution    # the statement that needs it is left out


def test_slicing_keeps_what_defines_or_changes_a_needed_name():
    code = ("a = 1\nb = [a]\nunused = 5\nb.append(2)\nb[0] = 7\nc = len(b)\nprint(c)\n"
            "def f(y):\n    return y + a\nd = f(c)")
    kept = [s.source for s in sliced_setup(statements(code), ["d"])]
    assert kept == ["a = 1", "b = [a]", "b.append(2)", "b[0] = 7", "c = len(b)", "def f(y):\n    return y + a",
                    "d = f(c)"]
    with pytest.raises(ValueError, match=r"\['nowhere'\] are not defined"):
        sliced_setup(statements(code), ["nowhere"])


def test_rename_and_statement_removal_keep_the_rest_of_the_code():
    assert rename("answer = ...  # é, your answer\nprint(answer, 'answer')", {"answer": "answer_x"}) \
        == "answer_x = ...  # é, your answer\nprint(answer_x, 'answer')"
    assert without_statements("x = 1\n# keep me\ncheck(x)\ny = 2", lambda s: "check" in s.source) \
        == "x = 1\n# keep me\ny = 2"


def test_hidden_tests_lose_their_decorator_and_follow_renames():
    spec = plan(chapters()[0]).spec
    test = spec.questions["ch1-ex-add-one"].hidden[0]
    source = hidden_test(test, {"answer": "answer_add_one"})
    assert source.startswith("def add_one_probability(answer_add_one):") and "@" not in source.splitlines()[0]


def test_the_grading_specs_are_not_part_of_the_installed_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = config["tool"]["setuptools"]["packages"]
    assert all(not p.startswith("grading") for p in packages)
    assert not any(p.name.startswith("ch") for p in (ROOT / "book" / "lib").rglob("grading*"))
    # no hidden test's body (its statements, in order) is in the package's source
    library = re.sub(r"\s+", " ", "\n".join(p.read_text() for p in (ROOT / "book" / "lib").rglob("*.py")))
    bodies = [re.sub(r"\s+", " ", "\n".join(inspect.getsource(t.function).splitlines()[2:]))
              for ch in chapters() for q in plan(ch).spec.questions.values() for t in q.hidden]
    assert bodies and not [b for b in bodies if b in library]
    # the student set-up (Colab) installs the package, whose dependencies do not include Otter
    assert not any("otter" in d for d in config["project"]["dependencies"])
    assert "otter" not in (ROOT / "requirements.txt").read_text()


# -- built and graded with Otter (slow) ------------------------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not OTTER.exists():
        pytest.fail("otter-grader is not installed: `make test` installs requirements-grader.txt")
    out = tmp_path_factory.mktemp("grader")
    for chapter in chapters():
        build_chapter(chapter, out)
    return out


def grade(built: Path, name: str, nb, tmp: Path) -> dict:
    """Grade notebook ``nb`` of chapter ``name`` with ``otter run`` (containerless), as an
    instructor would: the results per question, the run's CPU seconds and wall seconds."""
    tmp.mkdir(parents=True, exist_ok=True)
    submission = tmp / f"{name}.ipynb"
    nbformat.write(nb, submission)
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    result = subprocess.run([str(OTTER), "run", "--no-logo", "-a", str(built / name / "autograder" / "autograder.zip"),
                             "-o", str(tmp), str(submission)], capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    tests = json.loads((tmp / "results.json").read_text())["tests"]
    return {"questions": {t["name"]: t for t in tests if "max_score" in t},
            "public": next((t for t in tests if t["name"] == "Public Tests"), None),
            "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "wall": time.monotonic() - start}


def autograded(built: Path, name: str) -> dict:
    """``label -> points`` of the autograded questions, from the test files in the autograder."""
    points = {}
    for test in sorted((built / name / "autograder" / "tests").glob("*.py")):
        total = sum(float(p) for p in re.findall(r"@test_case\(points=([\d.]+)", test.read_text()))
        points[test.stem] = total
    return points


NAMES = [f"ch{chapter_number(c):02d}" for c in chapters()]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_no_student_file_holds_a_solution_or_a_hidden_test(built, name):
    chapter = next(c for c in chapters() if f"ch{chapter_number(c):02d}" == name)
    p = plan(chapter)
    student = "\n".join(f.read_text() for f in (built / name / "student").rglob("*") if f.is_file())
    student_cells = nbformat.read(built / name / "student" / f"{name}.ipynb", as_version=4).cells
    stub_lines = {l.strip() for e in p.exercises for l in rename(e.stub, p.renames[e.label]).splitlines()}
    kept = {l.strip() for c in student_cells for l in c.source.splitlines()} & stub_lines
    secrets = {l.strip() for e in p.exercises for part in [e.solution, *e.solution_text]
               for l in part.splitlines() if len(l.strip()) >= 20 and l.strip() not in kept}
    assert secrets, f"{name}: found no solution text to look for"
    leaks = [line for line in secrets if line in student]
    assert not leaks, f"{name}: solution lines in the student files: {leaks[:5]}"
    public = {l.strip() for f in (built / name / "student" / "tests").glob("*.py") for l in f.read_text().splitlines()}
    book = {l.strip() for c in strip_solutions(nbformat.read(chapter, as_version=4)).cells for l in c.source.splitlines()}
    hidden = {l.strip() for f in (built / name / "autograder" / "tests").glob("*.py") for l in f.read_text().splitlines()
              if len(l.strip()) >= 25} - public - book
    assert hidden, f"{name}: found no hidden test to look for"
    leaks = [line for line in hidden if line in student]
    assert not leaks, f"{name}: hidden tests in the student files: {leaks[:5]}"
    assert "hidden=True" not in student and "BEGIN SOLUTION" not in student
    graded = built / name / "autograder"
    assert all(n in (graded / "tests" / f"{label}.py").read_text()
               for label, q in p.spec.questions.items() for n in (t.name for t in q.hidden))
    assert (graded / "autograder.zip").stat().st_size > 0
    # the student notebook carries no outputs and calls the public tests
    assert all(not c.get("outputs") for c in student_cells if c.cell_type == "code")
    checks = {m for c in student_cells for m in re.findall(r'grader\.check\("([^"]+)"\)', c.source)}
    assert checks == set(autograded(built, name))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_solutions_get_full_points_and_an_untouched_notebook_none(built, name, tmp_path):
    points = autograded(built, name)
    solutions = nbformat.read(built / name / "autograder" / f"{name}.ipynb", as_version=4)
    right = grade(built, name, solutions, tmp_path / "solutions")
    assert {q: r["score"] for q, r in right["questions"].items()} == points
    assert right["cpu"] < 45, f"{name}: grading took {right['cpu']:.0f} s of CPU"
    print(f"{name}: {len(points)} autograded questions, {sum(points.values()):g} points, "
          f"graded in {right['wall']:.1f} s ({right['cpu']:.1f} s CPU)")
    untouched = nbformat.read(built / name / "student" / f"{name}.ipynb", as_version=4)
    none = grade(built, name, untouched, tmp_path / "untouched")
    assert set(none["questions"]) == set(points)
    assert all(r["score"] == 0 for r in none["questions"].values()), none["questions"]


# per chapter: an exercise, a typical wrong answer to it and a phrase of its checker's hint
TYPICAL = {
    "ch01": ("ch1-ex-perplexity", "def perplexity(probs):\n    return float(np.exp(-np.sum(np.log(np.asarray(probs)))))",
             "forgot the mean"),
    "ch02": ("ch2-ex-clipping", "def clip(grads, max_norm):\n"
             "    return [g * min(1.0, max_norm / float(g.norm())) if g.norm() > 0 else g for g in grads]",
             "each tensor on its own"),
    "ch03": ("ch3-ex-bidirectional", "def bidirectional_outputs(fwd, bwd, X):\n"
             "    return torch.cat([fwd(X)[0], bwd(X.flip(1))[0]], dim=-1)", "reverse order"),
    "ch04": ("ch4-ex-length-penalty", "short_score = -3.0 / 1.5\nlong_score = -4.2 / (16 / 6)\nwinner = 'short'",
             "less negative"),
    "ch05": ("ch5-ex-masked-softmax", "def my_masked_softmax(scores, lengths):\n"
             "    mask = torch.arange(scores.shape[-1])[None, :] < lengths[:, None]\n"
             "    return torch.softmax(scores, dim=-1) * mask[:, None, :]", "sum to 1"),
    "ch06": ("ch6-ex-rotation", "def rotation(k, d_model):\n    return seqbook_rotation(k, d_model).T",
             "R_{-k}"),
}


def answer_cell_index(nb, label: str) -> int:
    """The answer cell of an autograded question: the last code cell before its check cell (the
    solutions notebook may have the solution's prose in between)."""
    check = next(i for i, c in enumerate(nb.cells) if c.source.strip() == f'grader.check("{label}")')
    return max(i for i in range(check) if nb.cells[i].cell_type == "code")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_wrong_and_malformed_submissions_are_graded(built, name, tmp_path):
    """One submission per chapter, from the solutions: a typical wrong answer (partial points, the
    checker's hint in the feedback), an answer that raises, a deleted answer cell and a deleted
    check cell. It is graded, not crashed, and every other question keeps its points."""
    points = autograded(built, name)
    nb = nbformat.read(built / name / "autograder" / f"{name}.ipynb", as_version=4)
    labels = list(points)
    wrong_label, wrong_code, hint = TYPICAL[name]
    raising, deleted, unchecked = [l for l in labels if l != wrong_label][:3]
    if name == "ch06":
        nb.cells[answer_cell_index(nb, wrong_label)].source = (
            "from seqbook.positions import rotation_matrix as seqbook_rotation\n" + wrong_code)
    else:
        nb.cells[answer_cell_index(nb, wrong_label)].source = wrong_code
    nb.cells[answer_cell_index(nb, raising)].source = "raise RuntimeError('a bug in my answer')"
    del nb.cells[next(i for i, c in enumerate(nb.cells)        # its tests then run at the end
                      if c.source.strip() == f'grader.check("{unchecked}")')]
    del nb.cells[answer_cell_index(nb, deleted)]
    got = grade(built, name, nb, tmp_path / "malformed")
    scores = {q: r["score"] for q, r in got["questions"].items()}
    assert set(scores) == set(points)
    assert 0 < scores[wrong_label] < points[wrong_label], (wrong_label, scores[wrong_label])
    feedback = got["questions"][wrong_label].get("output", "") + (got["public"] or {}).get("output", "")
    assert hint in feedback, feedback[-2000:]
    assert scores[raising] == 0 and scores[deleted] == 0
    assert scores[unchecked] == points[unchecked]      # its own variables, even when checked last
    for label in set(labels) - {wrong_label, raising, deleted}:
        assert scores[label] == points[label], label


def test_make_grader_is_wired():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^grader: .*\$\(GRADER_STAMP\)", makefile, re.M)
    assert "seqbook.authoring.grader" in makefile
    assert "otter-grader==" in (ROOT / "requirements-grader.txt").read_text()


def test_the_instructor_page_lists_the_current_points():
    assert current_page_table() == summary(), \
        "book/instructors.md is out of date: run `python -m seqbook.authoring.grader --write-page`"
