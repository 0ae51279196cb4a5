"""The website: a fresh build with warnings as errors, what a reader sees in Chromium, and the
student edition built from it without a trace of any solution.

Slow (it executes every chapter once); `make test` runs it in parallel with nbval.
"""

import html as html_lib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from seqbook import __version__
from seqbook.authoring import screenshot as shots
from seqbook.authoring.setup_cell import repository_url
from seqbook.authoring import ROOT, chapters
from seqbook.authoring.student_edition import build_site, solution_cells, strip_solutions, write_student_sources

pytestmark = pytest.mark.slow
JB = str(Path(sys.executable).with_name("jupyter-book"))
ENV = {**os.environ, "SEQBOOK_STATIC": "1", "SEQBOOK_QUIET": "1"}


def jupyter_book(source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([JB, "build", str(source), "--path-output", str(out), "-W", "-n", "--keep-going"],
                          env=ENV, capture_output=True, text=True)


def sphinx_warnings(log: str) -> list[str]:
    """Sphinx's warnings in a build log (a kernel's own "[IPKernelApp] WARNING" chatter is not one)."""
    return re.findall(r"^(?:.*: )?WARNING: .*$", log, flags=re.M)


def output_text(output) -> str:
    """The text of one code-cell output (a stream, or a result's text/plain)."""
    if output.get("output_type") == "stream":
        return output.get("text", "")
    return output.get("data", {}).get("text/plain", "")


def page_text(path: Path) -> str:
    """Visible text of an HTML page, tags removed, whitespace collapsed."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", path.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", "", text)))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    result = jupyter_book(ROOT, out)
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"the website build failed:\n{log[-6000:]}"
    assert not sphinx_warnings(log), sphinx_warnings(log)
    return out / "_build"


def test_every_chapter_page_is_built_with_its_parts(built):
    assert (built / "html" / "_static" / "mathjax" / "tex-chtml.js").exists(), "the site carries no MathJax"
    for nb in chapters():
        page = built / "html" / "book" / f"{nb.stem}.html"
        source = page.read_text()
        assert "colab.research.google.com/github/" in source, f"{page.name}: no Colab launch button"
        assert "_static/mathjax/tex-chtml.js" in source, f"{page.name}: MathJax is not the local copy"
        assert source.count("data:image/png;base64") + source.count('src="../_images/') >= 3, f"{page.name}: figures missing"
        assert "seqbook-explorer" in source or "anim-state" in source or "_anim_" in source, (
            f"{page.name}: no interactive figure with a static twin")
        assert "Traceback (most recent call last)" not in source
        assert page_text(page).count("Exercise") >= 5
    bib = page_text(built / "html" / "book" / "bibliography.html")
    assert "Shannon" in bib


def test_a_reader_sees_typeset_math_and_figures(built):
    page = built / "html" / "book" / "ch01_ngrams.html"
    dom = shots.rendered_dom(page)
    assert dom.count("<mjx-container") >= 10, "MathJax did not typeset the chapter's formulas"
    png = shots.screenshot(page, ROOT / "_build" / "screenshots" / "ch01_ngrams.png")
    assert png.stat().st_size > 50_000  # a blank or unstyled page compresses to far less


MOVE_SLIDER = """<script>
window.addEventListener("load", function () {
  var moved = [];
  document.querySelectorAll(".seqbook-explorer").forEach(function (box) {
    var img = box.querySelector("img"), before = img.src;
    box.querySelectorAll("input[type=range]").forEach(function (s) {
      s.value = s.max;
      s.dispatchEvent(new Event("input"));
    });
    moved.push(img.src !== before && img.src.indexOf("data:image/png;base64,") === 0);
  });
  document.body.setAttribute("data-explorers-moved", moved.join(","));
});
</script></body>"""


def test_interactive_figures_move_without_a_kernel(built):
    """Moving every static slider to its end shows another precomputed frame."""
    for nb in chapters():
        page = built / "html" / "book" / f"{nb.stem}.html"
        if "seqbook-explorer" not in page.read_text():
            continue
        probe = page.with_name(f"{nb.stem}-probe.html")
        probe.write_text(page.read_text().replace("</body>", MOVE_SLIDER, 1))
        moved = re.search(r'data-explorers-moved="([^"]*)"', shots.rendered_dom(probe))
        assert moved and moved.group(1), f"{page.name}: the slider script did not run"
        assert set(moved.group(1).split(",")) == {"true"}, f"{page.name}: a slider did not change its figure"


def test_student_edition_has_no_solution_text(built, tmp_path):
    site = write_student_sources(tmp_path / "student", executed=built / "jupyter_execute")
    result = build_site(site)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    assert not sphinx_warnings(result.stdout + result.stderr)
    instructor_html = built / "html" / "book"
    student_html = site / "_build" / "html" / "book"
    for nb_path in chapters():
        nb = nbformat.read(nb_path, as_version=4)
        student_nb = (tmp_path / "student" / "notebooks" / nb_path.name).read_text()
        # what the student page may show anyway: the kept cells' sources, and their outputs (a
        # chapter prints library code, which a solution may share a line with)
        executed = nbformat.read(built / "jupyter_execute" / "book" / nb_path.name, as_version=4)
        kept_lines = {l.strip() for c in strip_solutions(nb).cells for l in c.source.splitlines()}
        kept_lines |= {l.strip() for c in strip_solutions(executed).cells if c.cell_type == "code"
                       for out in c.outputs for l in output_text(out).splitlines()}
        secrets = {l.strip() for c in solution_cells(nb) for l in c.source.splitlines()
                   if len(l.strip()) >= 25 and l.strip() not in kept_lines and "{solution" not in l}
        assert secrets, f"{nb_path.name}: found no solution text to look for"
        student_page = re.sub(r"\s+", " ", page_text(student_html / f"{nb_path.stem}.html"))
        instructor_page = page_text(instructor_html / f"{nb_path.stem}.html")
        assert "Solution to" in instructor_page and "Solution to" not in student_page
        # its Colab button opens the notebook of the student branch, not main's with solutions
        student_source = (student_html / f"{nb_path.stem}.html").read_text()
        assert f"/blob/student/book/{nb_path.name}" in student_source
        assert "/blob/main/" not in student_source
        for line in secrets:
            assert line not in student_nb, f"solution text in the student notebook: {line!r}"
            assert re.sub(r"\s+", " ", line) not in student_page, f"solution text on the student page: {line!r}"
        assert '"outputs": []' in student_nb


@pytest.mark.parametrize("cell, text, should_pass", [
    ("x = 1", "Fine text.", True),                                   # the control: a clean book builds
    ("x = 1", "See {ref}`a-label-that-does-not-exist`.", False),     # a warning fails the build
    ("1 / 0", "Fine text.", False),                                  # so does a failing cell
])
def test_build_fails_on_a_warning_or_a_failing_cell(tmp_path, cell, text, should_pass):
    book = tmp_path / "mini"
    shutil.copytree(ROOT / "book" / "_static", book / "book" / "_static")
    shutil.copy(ROOT / "_config.yml", book / "_config.yml")
    shutil.copy(ROOT / "book" / "references.bib", book / "book" / "references.bib")
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/page\nchapters:\n  - file: book/nb\n")
    (book / "book" / "page.md").write_text(f"# Page\n\n{text} {{cite}}`shannon1948`\n\n```{{bibliography}}\n```\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Notebook"), nbformat.v4.new_code_cell(cell)]
    nbformat.write(nb, book / "book" / "nb.ipynb")
    result = jupyter_book(book, tmp_path / "out")
    assert (result.returncode == 0) == should_pass, (result.stdout + result.stderr)[-3000:]
    if should_pass:  # the footer: licences, version and repository (filled in by site_footer)
        page = tmp_path / "out" / "_build" / "html" / "book" / "page.html"
        footer = re.search(r'<div class="extra_footer">(.*?)</div>', page.read_text(), re.S).group(1)
        assert "CC BY 4.0" in footer and "MIT licence" in footer and f">{__version__}</a>" in footer
        assert f'href="{repository_url()}"' in footer and "{" not in footer
