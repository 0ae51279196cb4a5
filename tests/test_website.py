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


def figure_alts(page: Path) -> list[str]:
    """The alt text of each figure a code cell drew on a built page (its file is under _images)."""
    tags = re.findall(r'<img\b[^>]*src="\.\./_images/[^"]*"[^>]*>', page.read_text())
    return [html_lib.unescape(m.group(1)) if (m := re.search(r'\balt="([^"]*)"', tag)) else "" for tag in tags]


def test_every_figure_has_a_text_alternative(built):
    """A description of what the figure shows, not its file name (seqbook.authoring.figure_alt)."""
    for nb in chapters():
        alts = figure_alts(built / "html" / "book" / f"{nb.stem}.html")
        assert len(alts) >= 3, f"{nb.stem}: found {len(alts)} figures"
        for alt in alts:
            assert len(alt.split()) >= 12 and not re.search(r"\.(png|jpe?g|svg)\b|_images", alt), f"{nb.stem}: alt {alt!r}"


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


# --- the Chinese edition ---------------------------------------------------------------------------------
# Built from the catalogues into its own folder, sharing the execution cache of the English build
# above: the code cells are the English ones, so not one chapter runs again.

from html.parser import HTMLParser  # noqa: E402

from seqbook.authoring import book_zh  # noqa: E402
from seqbook.authoring import translate as tr  # noqa: E402

ZH_CLAIMED = [p.name for p in tr.pages() if p.kind != "site" and p.name not in tr.edition()["not_yet_translated"]]


@pytest.fixture(scope="module")
def built_zh(built, tmp_path_factory):
    out = tmp_path_factory.mktemp("site-zh")
    source = book_zh.write_sources(out / "source", cache=built / ".jupyter_cache")
    result = book_zh.build(source, out)
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"the Chinese website build failed:\n{log[-6000:]}"
    assert not sphinx_warnings(log), sphinx_warnings(log)
    cached, executed = book_zh.cache_report(log)
    assert (cached, executed) == (len(chapters()), 0), (
        f"the Chinese build should take every chapter from the English build's cache: {cached} cached, {executed} executed")
    return out / "_build"


class ProseBlocks(HTMLParser):
    """The text of each prose element (paragraph, list item, heading, table cell, caption) of a page's
    article, without code, cell inputs and outputs, math and the bibliography's entries."""

    BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "dt", "dd", "caption", "figcaption"}
    SKIP_TAGS = {"pre", "code", "script", "style", "mjx-container", "svg"}
    SKIP_CLASSES = {"cell_output", "cell_input", "highlight", "math", "citation", "headerlink"}
    VOID = {"br", "img", "input", "meta", "link", "hr", "source", "wbr", "col"}

    def __init__(self):
        super().__init__()
        self.stack, self.blocks, self.in_article, self.skip = [], [], False, 0

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        classes = dict(attrs).get("class") or ""
        if tag == "article" and "bd-article" in classes:
            self.in_article = True
        skip = tag in self.SKIP_TAGS or bool(self.SKIP_CLASSES & set(classes.split()))
        self.skip += skip
        self.stack.append((tag, skip))
        if self.in_article and tag in self.BLOCKS:
            self.blocks.append([])

    def handle_endtag(self, tag):
        if tag not in {t for t, _ in self.stack}:
            return  # a stray end tag
        while self.stack:
            open_tag, skip = self.stack.pop()
            self.skip -= skip
            if open_tag == "article":
                self.in_article = False
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self.in_article and not self.skip and self.blocks:
            self.blocks[-1].append(data)

    @classmethod
    def of(cls, path):
        parser = cls()
        parser.feed(path.read_text())
        return [re.sub(r"\s+", " ", "".join(b)).strip() for b in parser.blocks if "".join(b).strip()]


def test_chinese_site_speaks_chinese_and_launches_the_chinese_notebooks(built_zh):
    html = built_zh / "html"
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()
    for nb in chapters():
        page = html / "book" / f"{nb.stem}.html"
        source = page.read_text()
        assert '<html lang="zh-CN"' in source or '<html lang="zh_CN"' in source, f"{page.name}: not a Chinese page"
        assert f"colab.research.google.com/github/seqbook/sequence-models/blob/published/zh/book/{nb.name}" in source
        assert source.count("data:image/png;base64") + source.count('src="../_images/') >= 3, f"{page.name}: figures missing"
        assert "seqbook-explorer" in source or "anim-state" in source or "_anim_" in source
        text = page_text(page)
        assert text.count("练习") >= 5 and "解答" in text, f"{page.name}: exercises not labelled in Chinese"
        if nb.stem in ZH_CLAIMED:
            assert "Exercise" not in text and "Solution to" not in text
        assert "Traceback (most recent call last)" not in source
        assert "Click to show" not in source and "Show code cell" not in source, f"{page.name}: English interface"
    ch01 = page_text(html / "book" / "ch01_ngrams.html")
    for interface in ("搜索", "目录"):                        # the theme's own strings, from language: zh_CN
        assert interface in page_text(html / "book" / "ch01_ngrams.html") or interface in (
            html / "book" / "ch01_ngrams.html").read_text(), interface
    assert "序列、链式法则与马尔可夫假设" in ch01 and "Sequences, the chain rule" not in ch01
    glossary = page_text(html / "book" / "glossary.html")
    assert "随时间反向传播" in glossary and "第 2 章" in glossary
    assert "Shannon" in page_text(html / "book" / "bibliography.html")


@pytest.mark.parametrize("name", ZH_CLAIMED + ["glossary"])
def test_translated_chinese_pages_are_mostly_cjk_with_no_english_paragraph(built_zh, name):
    blocks = ProseBlocks.of(built_zh / "html" / "book" / f"{name}.html")
    if name == "glossary":  # its English column is English by design
        import yaml
        terms = {t["en"] for t in yaml.safe_load((tr.locale_dir() / "glossary.yml").read_text())["terms"]}
        blocks = [b for b in blocks if b not in terms and b != "English"]
    assert len(blocks) >= 2, f"{name}: found no prose on the page"
    text = " ".join(blocks)
    cjk, latin = len(re.findall(r"[\u3400-\u9fff]", text)), len(re.findall(r"[A-Za-z]", text))
    assert cjk / (cjk + latin) > 0.6, f"{name}: only {cjk / (cjk + latin):.0%} of the letters are CJK"
    english = [b for b in blocks if not re.search(r"[\u3400-\u9fff]", b)
               and re.search(r"[A-Za-z][\w'-]*(?:[\s,;:()]+[A-Za-z][\w'-]*){3,}", b)]
    assert not english, f"{name}: English left on the Chinese page: {english[:5]}"


def test_the_english_paragraph_check_would_see_an_untranslated_page(built, built_zh):
    # the control: an untranslated page shows the English prose, as the English site's page does;
    # the check finds dozens of English paragraphs there, and none on the Chinese page
    def english(page):
        return sum(1 for b in ProseBlocks.of(page) if not re.search(r"[\u3400-\u9fff]", b) and len(b.split()) > 8)
    assert english(built / "html" / "book" / "ch02_rnn.html") > 20
    assert english(built_zh / "html" / "book" / "ch02_rnn.html") == 0


def test_chinese_figures_have_chinese_text_alternatives(built, built_zh):
    for nb in chapters():
        english = figure_alts(built / "html" / "book" / f"{nb.stem}.html")
        chinese = figure_alts(built_zh / "html" / "book" / f"{nb.stem}.html")
        assert len(chinese) == len(english), nb.stem
        if nb.stem in ZH_CLAIMED:
            for alt in chinese:
                assert len(re.findall(r"[\u3400-\u9fff]", alt)) >= 10, f"{nb.stem}: alt {alt!r} is not Chinese"


def test_mathjax_typesets_the_chinese_pages(built_zh):
    for name in ("ch01_ngrams", "intro"):
        page = built_zh / "html" / "book" / f"{name}.html"
        png = shots.screenshot(page, ROOT / "_build" / "screenshots" / f"zh_{name}.png")
        assert png.stat().st_size > 50_000
    dom = shots.rendered_dom(built_zh / "html" / "book" / "ch01_ngrams.html")
    assert dom.count("<mjx-container") >= 10, "MathJax did not typeset the Chinese chapter's formulas"


def test_chinese_student_edition_has_no_solutions_and_launches_the_student_branch(built_zh, tmp_path):
    source = built_zh.parent / "source"
    site = write_student_sources(tmp_path / "student", root=source, executed=built_zh / "jupyter_execute",
                                 title_suffix="（学生版）")
    assert "execute_notebooks: 'off'" in (site / "_config.yml").read_text() or \
        "execute_notebooks: off" in (site / "_config.yml").read_text()
    result = build_site(site)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    assert not sphinx_warnings(result.stdout + result.stderr)
    for nb_path in chapters():
        student_page = site / "_build" / "html" / "book" / f"{nb_path.stem}.html"
        text = page_text(student_page)
        assert "练习" in text and "解答" not in text, f"{nb_path.name}: a solution on the Chinese student page"
        assert f"/blob/student/zh/book/{nb_path.name}" in student_page.read_text()
        notebook = (tmp_path / "student" / "notebooks" / nb_path.name).read_text()
        assert '"outputs": []' in notebook and "solution-start" not in notebook
