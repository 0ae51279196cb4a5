"""The student edition: every chapter without its solutions, as notebooks and as a website.

What is removed from each notebook:

- the cells of a gated solution, from the ``{solution-start}`` cell to the ``{solution-end}`` cell,
- markdown cells holding a ``{solution}`` directive,
- any cell tagged ``solution`` (e.g. hidden checks that call the solution code).

The exercises and their checkers stay. The website is built from notebooks that have already been
executed (by the instructor website's build), so the student site shows the same figures without
running anything again; the notebooks students download and run have no outputs.

The student notebooks are also committed to a branch of their own (``student``), laid out as on
``main`` (``book/chNN_*.ipynb``), without touching the working tree. The student website's launch
buttons point at that branch, so "open in Colab" opens a notebook without solutions once the branch
is pushed (``git push origin student``).

The Chinese student edition (``--zh``, ``make student-zh``) is made the same way from the Chinese
edition's generated sources and executed notebooks (``make book-zh``): its notebooks go to the same
``student`` branch under ``zh/book/``, and its website's launch buttons open them there.

Usage: ``python -m seqbook.authoring.student_edition [--zh] [--out DIR] [--no-branch]``
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import yaml

from . import ROOT, chapters

SOLUTION_TAG = "solution"
STUDENT_BRANCH = "student"
LICENCES = ("LICENSE", "LICENSE-CC-BY-4.0")  # the student branch is distributed too
_DIRECTIVE = r"^\s*(```+|:::+)\s*\{%s\}"
_START, _END, _PLAIN = (re.compile(_DIRECTIVE % name, re.M) for name in ("solution-start", "solution-end", "solution"))


# A whole {solution} block: its opening fence, everything up to the same fence alone on a line.
_PLAIN_BLOCK = re.compile(r"^[ \t]*(?P<fence>```+|:::+)[ \t]*\{solution\}.*?^[ \t]*(?P=fence)[ \t]*$\n?",
                          re.M | re.S)


def is_solution_cell(cell) -> bool:
    return SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def _split_plain_solutions(cell) -> tuple:
    """(the cell without its {solution} blocks or None if nothing else is left, the removed text)."""
    removed = "".join(m.group(0) for m in _PLAIN_BLOCK.finditer(cell.source))
    rest = _PLAIN_BLOCK.sub("", cell.source).strip()
    if _PLAIN.search(rest):
        raise ValueError("a {solution} block is never closed by its fence")
    kept = nbformat.from_dict(cell)
    kept.source = rest
    return (kept if rest else None), removed


def _partition(nb) -> tuple[list, list]:
    """Split the cells of ``nb`` into (kept, solution) lists. A markdown cell that holds an
    exercise and its ``{solution}`` block together is split: the block goes, the rest stays."""
    kept, removed, inside = [], [], False
    for cell in nb.cells:
        md = cell.cell_type == "markdown"
        if md and _START.search(cell.source):
            if inside:
                raise ValueError("a {solution-start} opens before the previous one was closed")
            inside = True
            removed.append(cell)
        elif md and _END.search(cell.source):
            if not inside:
                raise ValueError("a {solution-end} without a {solution-start} before it")
            inside = False
            removed.append(cell)
        elif inside or is_solution_cell(cell):
            removed.append(cell)
        elif md and _PLAIN.search(cell.source):
            rest, text = _split_plain_solutions(cell)
            removed.append(nbformat.v4.new_markdown_cell(text))
            if rest is not None:
                kept.append(rest)
        else:
            kept.append(cell)
    if inside:
        raise ValueError("a {solution-start} is never closed by a {solution-end}")
    return kept, removed


def strip_solutions(nb):
    """A copy of notebook ``nb`` without solution cells. Raises ValueError on an unclosed solution."""
    out = nbformat.from_dict(nb)
    out.cells = _partition(nb)[0]
    return out


def solution_cells(nb) -> list:
    """What the student edition removes from ``nb``, as cells (a {solution} block that shared a
    cell with other text comes back as a cell of its own)."""
    return _partition(nb)[1]


def has_outputs(nb) -> bool:
    """True when some code cell of ``nb`` carries an output (the notebook has been executed)."""
    return any(c.cell_type == "code" and c.outputs for c in nb.cells)


def clear_outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def write_student_sources(out: Path, root: Path = ROOT, executed: Path | None = None,
                          branch: str = STUDENT_BRANCH, title_suffix: str = " (student edition)") -> Path:
    """Lay out the student book under ``out/site`` and the student notebooks under ``out/notebooks``.

    ``executed`` is a folder of executed notebooks (the website build's ``_build/jupyter_execute``);
    without it the student website executes the chapters itself. The site's launch buttons open the
    notebooks of ``branch`` (see :func:`publish_branch`)."""
    site, notebooks = out / "site", out / "notebooks"
    for d in (site, notebooks):
        if d.exists():
            shutil.rmtree(d)
    notebooks.mkdir(parents=True)
    shutil.copytree(root / "book", site / "book",
                    ignore=shutil.ignore_patterns("lib", "locale", "*.ipynb", ".ipynb_checkpoints", "__pycache__"))
    shutil.copy(root / "_toc.yml", site / "_toc.yml")
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["title"] += title_suffix
    config["repository"]["branch"] = branch
    all_executed = True
    for path in chapters(root):
        source = executed / "book" / path.name if executed is not None else path
        if not source.exists():
            raise FileNotFoundError(f"expected an executed copy of {path.name} at {source}: build the website first")
        student = strip_solutions(nbformat.read(source, as_version=4))
        # A website build that took a chapter from its execution cache writes that chapter's copy
        # without outputs: then the student site must run the chapters itself.
        all_executed &= executed is not None and has_outputs(student)
        nbformat.write(student, site / "book" / path.name)
        nbformat.write(clear_outputs(student), notebooks / path.name)
    if all_executed:
        config["execute"]["execute_notebooks"] = "off"
    (site / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    return site


def _git(repo: Path, *args: str, env: dict | None = None, stdin: bytes | None = None) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True,
                            env={**os.environ, **(env or {})})
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.decode().strip()}")
    return result.stdout.decode().strip()


def publish_branch(notebooks: Path, repo: Path = ROOT, branch: str = STUDENT_BRANCH, prefix: str = "",
                   readme: str | None = None) -> str:
    """Commit the notebooks in ``notebooks`` to ``branch`` of the git repository ``repo``, as
    ``<prefix>/book/<name>.ipynb`` with a ``<prefix>/README.md`` (and the book's licences at the
    root), on top of the branch's previous
    commit (if any). Only that folder's ``book/`` and README change: the English student notebooks
    (prefix "") and the Chinese ones (prefix "zh") share the ``student`` branch. Uses a private index:
    the working tree, the index and the checked-out branch are untouched. Returns the new commit's id."""
    source = _git(repo, "rev-parse", "--short", "HEAD")
    base = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    files = {f"{base}book/{nb.name}": nb.read_bytes() for nb in sorted(notebooks.glob("*.ipynb"))}
    if not files:
        raise FileNotFoundError(f"expected student notebooks in {notebooks}: write them first")
    files[f"{base}README.md"] = (readme if readme is not None else (
        "# Student edition\n\nThe chapters' notebooks without solutions, generated from commit "
        f"{source} of the main branch by `make student`. Do not edit here: change the chapters on "
        "main and run `make student` again.\n\nLicences: the text and figures under CC BY 4.0 "
        "(`LICENSE-CC-BY-4.0`), the code under the MIT licence (`LICENSE`).\n")).encode()
    # the licences sit at the root of the branch, for the English and the Chinese notebooks alike
    files.update({name: (ROOT / name).read_bytes() for name in LICENCES if (ROOT / name).exists()})
    ref = f"refs/heads/{branch}"
    parent = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", ref],
                            capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if parent:
            _git(repo, "read-tree", parent, env=env)
            _git(repo, "rm", "--cached", "-r", "-q", "--ignore-unmatch", f"{base}book", env=env)
        for path, data in files.items():
            blob = _git(repo, "hash-object", "-w", "--stdin", stdin=data)
            _git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = _git(repo, "write-tree", env=env)
    if parent and _git(repo, "rev-parse", f"{parent}^{{tree}}") == tree:
        return parent  # nothing changed
    message = f"{'Chinese ' if base else ''}{branch} edition of {source}"
    who = {}
    if subprocess.run(["git", "-C", str(repo), "var", "GIT_COMMITTER_IDENT"], capture_output=True).returncode:
        who = {f"GIT_{role}_{part}": value for role in ("AUTHOR", "COMMITTER")
               for part, value in (("NAME", "seqbook student edition"), ("EMAIL", "student@seqbook.invalid"))}
    commit = _git(repo, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message, env=who)
    _git(repo, "update-ref", ref, commit)
    return commit


def build_site(site: Path, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SEQBOOK_STATIC": "1", "SEQBOOK_QUIET": "1", **(extra_env or {})}
    jb = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jb), "build", str(site), "-W", "-n", "--keep-going"],
                          env=env, capture_output=True, text=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zh", action="store_true",
                        help="the Chinese student edition, from the Chinese build (make book-zh) into _build/zh/student")
    parser.add_argument("--out", type=Path, default=None, help="default: _build/student (_build/zh/student with --zh)")
    parser.add_argument("--executed", type=Path, default=None,
                        help="executed notebooks from the website build (default: _build/jupyter_execute, "
                             "_build/zh/_build/jupyter_execute with --zh); if missing, the student website "
                             "executes the chapters itself")
    parser.add_argument("--no-site", action="store_true", help="write the notebooks only")
    parser.add_argument("--no-branch", action="store_true",
                        help=f"do not commit the notebooks to the local branch {STUDENT_BRANCH!r}")
    args = parser.parse_args(argv)
    build_dir = ROOT / "_build" / ("zh" if args.zh else "")
    out = args.out or build_dir / "student"
    executed = args.executed or build_dir / ("_build/jupyter_execute" if args.zh else "jupyter_execute")
    executed = executed if (executed / "book").is_dir() else None
    root, suffix, prefix, readme = ROOT, " (student edition)", "", None
    if args.zh:
        root = build_dir / "source"
        if not (root / "_config.yml").exists():
            print(f"no Chinese sources at {root}: run `make book-zh` first", file=sys.stderr)
            return 1
        suffix, prefix = "（学生版）", "zh"
        readme = ("# 中文版学生笔记本\n\n本书各章的中文笔记本，不含解答，由 `make student-zh` 生成。请勿在此修改："
                  "改动 main 分支的章节或 `book/locale/zh_CN` 的翻译后重新生成。\n")
    site = write_student_sources(out, root=root, executed=executed, title_suffix=suffix)
    print(f"student notebooks written to {out / 'notebooks'}")
    if not args.no_branch:
        commit = publish_branch(out / "notebooks", prefix=prefix, readme=readme)
        where = f"{prefix}/book/" if prefix else "book/"
        print(f"and committed to the local branch {STUDENT_BRANCH!r} under {where} ({commit[:10]}); publish them "
              f"with `git push origin {STUDENT_BRANCH}`, so the student website's Colab buttons work")
    if args.no_site:
        return 0
    result = build_site(site)
    print(result.stdout[-3000:], result.stderr[-3000:], sep="\n")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
