"""Removing solutions from a notebook (unit level; the whole edition is tested with the website)."""

import subprocess

import nbformat
import pytest
import yaml

from seqbook.authoring import chapters
from seqbook.authoring.student_edition import (STUDENT_BRANCH, clear_outputs, publish_branch,
                                               solution_cells, strip_solutions, write_student_sources)

C, M = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell


def notebook(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def test_removes_gated_plain_and_tagged_solutions():
    nb = notebook(
        M("```{exercise} A\n:label: a\n\nDo it.\n```"),
        C("answer = ...\ncheck(answer)"),
        M("```{solution-start} a\n:class: dropdown\n```"),
        C("answer = 42  # GATED"),
        M("Because 42. GATED TEXT"),
        M("```{solution-end}\n```"),
        C("assert check(answer)", metadata={"tags": ["remove-cell", "solution"]}),
        M("```{exercise} B\n:label: b\n```"),
        M(":::{solution} b\nPLAIN SOLUTION\n:::"),
        M("Text after."),
    )
    student = strip_solutions(nb)
    text = "\n".join(c.source for c in student.cells)
    assert [c.source.splitlines()[0] for c in student.cells] == [
        "```{exercise} A", "answer = ...", "```{exercise} B", "Text after."]
    for secret in ("GATED", "PLAIN SOLUTION", "assert check", "solution"):
        assert secret not in text
    assert len(solution_cells(nb)) == 6
    assert len(nb.cells) == 10  # the original is untouched


def test_a_solution_sharing_a_cell_with_its_exercise_is_cut_out_of_it():
    nb = notebook(
        M("```{exercise} A\n:label: a\n\nDerive it.\n```\n\n````{solution} a\n:class: dropdown\n\n"
          "SECRET DERIVATION with a\n```python\nnested = 1\n```\nblock\n````\n\nText after."),
        M("Before.\n\n````{solution} b\nSECRET TWO\n````"),
    )
    student = strip_solutions(nb)
    assert "SECRET" not in "\n".join(c.source for c in student.cells)
    assert student.cells[0].source.startswith("```{exercise} A") and "Text after." in student.cells[0].source
    assert student.cells[1].source == "Before."
    assert [c.source.count("SECRET") for c in solution_cells(nb)] == [1, 1]


@pytest.mark.parametrize("cells, message", [
    ([M("```{solution-start} a\n```")], "never closed"),
    ([M("```{solution-end}\n```")], "without a {solution-start}"),
    ([M("```{solution-start} a\n```"), M("```{solution-start} b\n```")], "before the previous one was closed"),
    ([M("```{solution} a\nnever closed")], "never closed by its fence"),
])
def test_malformed_solutions_are_reported(cells, message):
    with pytest.raises(ValueError, match=message):
        strip_solutions(notebook(*cells))


def test_clear_outputs():
    cell = C("print(1)")
    cell.outputs = [nbformat.v4.new_output("stream", text="1\n")]
    cell.execution_count = 1
    nb = clear_outputs(notebook(cell))
    assert nb.cells[0].outputs == [] and nb.cells[0].execution_count is None


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def test_student_notebooks_are_committed_to_their_own_branch_without_touching_the_work_tree(tmp_path):
    repo, notebooks = tmp_path / "repo", tmp_path / "student"
    repo.mkdir()
    notebooks.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "main.txt").write_text("the instructor's book\n")
    git(repo, "add", "main.txt")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "main")
    (notebooks / "ch01_a.ipynb").write_text('{"cells": []}')
    first = publish_branch(notebooks, repo=repo)
    assert git(repo, "show", "student:book/ch01_a.ipynb") == '{"cells": []}'
    assert "without solutions" in git(repo, "show", "student:README.md")
    assert "MIT License" in git(repo, "show", "student:LICENSE")                 # distributed: licensed
    assert "Attribution 4.0 International" in git(repo, "show", "student:LICENSE-CC-BY-4.0")
    assert git(repo, "branch", "--show-current").strip() == "main"
    assert git(repo, "status", "--porcelain") == ""          # index and work tree untouched
    assert publish_branch(notebooks, repo=repo) == first      # unchanged notebooks: no new commit
    (notebooks / "ch01_a.ipynb").write_text('{"cells": [1]}')
    second = publish_branch(notebooks, repo=repo)
    assert git(repo, "rev-parse", f"{second}^").strip() == first
    assert git(repo, "show", "student:book/ch01_a.ipynb") == '{"cells": [1]}'
    with pytest.raises(FileNotFoundError, match="expected student notebooks"):
        publish_branch(tmp_path / "empty", repo=repo)


def test_the_student_website_launches_the_student_branch(tmp_path):
    site = write_student_sources(tmp_path / "out")
    config = yaml.safe_load((site / "_config.yml").read_text())
    assert config["repository"]["branch"] == STUDENT_BRANCH == "student"
    assert config["launch_buttons"]["colab_url"]
    assert sorted(p.name for p in (tmp_path / "out" / "notebooks").glob("*.ipynb")) == [
        p.name for p in chapters()]


def test_the_student_website_runs_the_chapters_when_an_executed_copy_has_no_outputs(tmp_path):
    """A website build that took a chapter from its cache leaves a copy without outputs."""
    executed = tmp_path / "executed"
    (executed / "book").mkdir(parents=True)
    for i, path in enumerate(chapters()):
        nb = nbformat.read(path, as_version=4)
        if i > 0:                                   # every chapter but the first "executed"
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = [nbformat.v4.new_output("stream", text="ran\n")]
        nbformat.write(nb, executed / "book" / path.name)
    site = write_student_sources(tmp_path / "out", executed=executed)
    assert yaml.safe_load((site / "_config.yml").read_text())["execute"]["execute_notebooks"] == "cache"
    first = nbformat.read(executed / "book" / chapters()[0].name, as_version=4)
    for cell in first.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", text="ran\n")]
    nbformat.write(first, executed / "book" / chapters()[0].name)
    site = write_student_sources(tmp_path / "out", executed=executed)
    assert yaml.safe_load((site / "_config.yml").read_text())["execute"]["execute_notebooks"] == "off"
