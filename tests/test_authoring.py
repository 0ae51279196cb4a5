"""The authoring tools: the set-up cell writer and the exercise list."""

import nbformat

from seqbook.authoring import exercise_list, setup_cell

C, M = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell


def write(path, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    nbformat.write(nb, path)
    return path


def test_setup_cell_is_inserted_then_kept_current(tmp_path):
    path = write(tmp_path / "ch09_x.ipynb", M("# Title"), C("import torch"))
    assert setup_cell.sync(path) is True
    nb = nbformat.read(path, as_version=4)
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    assert nb.cells[1].source == setup_cell.setup_source()
    assert "setup" in nb.cells[1].metadata["tags"]
    assert setup_cell.sync(path) is False  # already current: nothing to do
    nb.cells[1].source = "# an old set-up cell"
    nbformat.write(nb, path)
    assert setup_cell.sync(path) is True
    assert len(nbformat.read(path, as_version=4).cells) == 3


def test_repository_url_comes_from_the_config(tmp_path):
    cfg = tmp_path / "_config.yml"
    cfg.write_text("repository:\n  url: https://example.org/book/\n")
    assert setup_cell.repository_url(cfg) == "https://example.org/book"


def test_exercise_list_finds_labels_and_checkers(tmp_path):
    (tmp_path / "book").mkdir()
    path = write(
        tmp_path / "book" / "ch07_x.ipynb",
        M("```{exercise} By hand\n:label: ch7-ex-hand\n\nCompute.\n```"),
        M("```{solution} ch7-ex-hand\n:class: dropdown\n\n42\n```"),
        M("```{exercise} Code it\n:label: ch7-ex-code\n\nWrite f.\n```"),
        C("def f(x):\n    raise NotImplementedError\ncheck_f(f)"),
        M("And then:"),
        C("h = ...\ncheck_h(h)\ncheck_f(f)"),
        M("```{solution-start} ch7-ex-code\n```"),
        C("def f(x):\n    return x\ncheck_g(f)", metadata={"tags": ["solution"]}),
        M("```{solution-end}\n```"),
    )
    assert exercise_list.exercises(path) == [
        {"label": "ch7-ex-hand", "title": "By hand", "checkers": []},
        {"label": "ch7-ex-code", "title": "Code it", "checkers": ["check_f", "check_h"]},
    ]
    rows = exercise_list.table(tmp_path).splitlines()[2:]
    assert rows == ["| 7 | {ref}`ch7-ex-hand` | `ch7-ex-hand` | (derivation or by hand: see solution) |",
                    "| 7 | {ref}`ch7-ex-code` | `ch7-ex-code` | `check_f`, `check_h` |"]


def test_chapters_follow_the_toc(tmp_path):
    from seqbook.authoring import chapter_files, chapters

    (tmp_path / "book").mkdir()
    for name in ("ch01_a", "ch02_b", "ch03_draft"):
        write(tmp_path / "book" / f"{name}.ipynb", M("# x"))
    assert [p.stem for p in chapters(tmp_path)] == ["ch01_a", "ch02_b", "ch03_draft"]  # no toc: all
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: C\n    chapters:\n"
        "      - file: book/ch02_b\n      - file: book/ch01_a\n      - file: book/ch09_missing\n")
    assert [p.stem for p in chapters(tmp_path)] == ["ch02_b", "ch01_a"]
    assert [p.stem for p in chapter_files(tmp_path)] == ["ch01_a", "ch02_b", "ch03_draft"]


def test_the_website_build_is_set_up_for_a_shared_machine():
    """`make book` runs its kernels on one thread each (two threads on two busy cores slow a chapter
    many times over) and its cell timeout is a safety net far above any cell's run time."""
    import re

    import yaml

    from seqbook.authoring import ROOT

    build_env = re.search(r"^BUILD_ENV := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert "OMP_NUM_THREADS=1" in build_env.split()
    assert yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"] >= 1800


def test_benchmark_reports_wall_and_cpu_time_of_a_kernel(tmp_path):
    from seqbook.authoring import benchmark

    nb = write(tmp_path / "ch09_busy.ipynb", C("total = sum(i * i for i in range(3_000_000))"))
    result = benchmark.run_one(nb)
    assert result["cpu_s"] > 0.1 and result["wall_s"] > 0.1 and result["peak_mib"] > 10
    row = benchmark.table({"ch09_busy.ipynb": result}).splitlines()[-1]
    assert row.startswith("| `ch09_busy.ipynb` |") and row.count("|") == 5
