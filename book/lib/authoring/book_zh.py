"""The Chinese edition (简体中文): generated from the English notebooks and the catalogues, never copied.

``python -m seqbook.authoring.book_zh`` (``make book-zh``)

1. writes the Chinese book under ``_build/zh/source``: every chapter notebook with the English
   notebook's own code cells and metadata and the Chinese of its markdown cells
   (``book/locale/zh_CN/<page>.po``, see :mod:`seqbook.authoring.translate`), the Chinese markdown
   pages, the glossary page (``book/locale/zh_CN/glossary.yml``), a ``_toc.yml`` and a
   ``_config.yml`` with ``language: zh_CN``, so that Sphinx, the theme and sphinx-exercise write
   their interface in Chinese;
2. builds it with Jupyter Book, warnings as errors, into ``_build/zh/_build/html``. The build shares
   the English build's execution cache (``_build/.jupyter_cache``): jupyter-cache keys a notebook by
   its code cells and kernel only, which are the English ones, so a chapter that the English build
   has executed is not executed again (and a chapter the Chinese build executes first is not
   executed again by the English one);
3. commits the Chinese notebooks (no outputs) to the local branch ``published`` as
   ``zh/book/<chapter>.ipynb``: the Chinese site's Colab buttons open them there. (The Chinese
   student edition, ``make student-zh``, puts its notebooks at the same paths on the ``student``
   branch, next to the English student notebooks.)

A page listed in ``not_yet_translated`` (``edition.yml``) is built all the same, in English where it
has no current translation, under a notice that says so. A page claimed translated whose catalogue is
stale or incomplete stops the build (``--allow-stale`` builds it with the English in those places).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import yaml

from . import ROOT, figure_alt
from . import translate as tr
from .student_edition import clear_outputs, has_outputs, publish_branch

LANG = tr.LANG
PUBLISHED_BRANCH = "published"
PREFIX = "zh"   # the folder of the Chinese notebooks on the published and student branches
BUILD_ENV = {"SEQBOOK_STATIC": "1", "SEQBOOK_QUIET": "1", "OMP_NUM_THREADS": "1"}

NOTICE_UNTRANSLATED = (
    "```{note}\n本页尚未译成中文，下面的文字是英文原文。中文版的其余部分见左侧目录；"
    "译者的工作流程见仓库 README 中的 “The Chinese edition” 一节。\n```"
)
NOTICE_PARTIAL = (
    "```{note}\n本页的中文翻译尚未完成：没有译文的段落以英文原文显示。\n```"
)
STUDENT_SUFFIX = "（学生版）"


class DriftError(RuntimeError):
    """A page claimed translated has stale or missing translations."""


def _current(entries: dict[str, tr.Entry], unit: tr.Unit) -> str | None:
    entry = entries.get(unit.key)
    if entry is None or not entry.text.strip() or entry.sha != unit.sha:
        return None
    return entry.text


def _insert_after_title(text: str, notice: str) -> str:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if re.match(r"^#\s", line):
            return "\n".join(lines[: i + 1] + ["", notice, ""] + lines[i + 1:])
    return notice + "\n\n" + text


def _check_drift(status: tr.PageStatus, allow_stale: bool) -> None:
    if status.claimed and not status.complete and not allow_stale:
        raise DriftError(
            f"{status.page.name} is claimed translated, but {len(status.stale)} translations are stale and "
            f"{len(status.missing)} missing ({', '.join((status.stale + status.missing)[:8])}...): run "
            "`python -m seqbook.authoring.translate status`, then export, translate and import them "
            "(or build with --allow-stale)")


def notebook_zh(page: tr.Page, status: tr.PageStatus, root: Path = ROOT, lang: str = LANG):
    """The Chinese notebook of a chapter: the English notebook with each markdown cell's current
    translation in place of its English (code cells, outputs, metadata and ids untouched)."""
    nb = nbformat.read(page.path, as_version=4)
    entries = tr.load(page.name, root, lang)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and tr.has_prose(cell.source):
            text = _current(entries, tr.Unit(cell.id, cell.source))
            if text is not None:
                cell.source = text
    if not status.complete:
        first = next(c for c in nb.cells if c.cell_type == "markdown")
        first.source = _insert_after_title(first.source, NOTICE_PARTIAL if status.current else NOTICE_UNTRANSLATED)
    return nb


def markdown_zh(page: tr.Page, status: tr.PageStatus, additions: list[dict], root: Path = ROOT,
                lang: str = LANG) -> str:
    """The Chinese text of a markdown page: each block's current translation in place of its English,
    the Chinese-only additions of ``edition.yml`` after the blocks they name."""
    entries = tr.load(page.name, root, lang)
    keyed = tr.md_units(page.path.read_text())
    keys = {k for _, k in keyed if k}
    for add in additions:
        if add["after"] not in keys:
            raise ValueError(f"edition.yml: an addition to {page.name} goes after block {add['after']!r}, which the "
                             f"page no longer has; expected one of {sorted(keys)}")
    out = []
    for block, key in keyed:
        text = block.text
        if key:
            translated = _current(entries, tr.Unit(key, block.text))
            text = translated if translated is not None else text
        extra = "".join("\n\n" + a["text"].strip("\n") for a in additions if key and a["after"] == key)
        out.append(text + extra + block.after)
    text = "".join(out)
    if not status.complete:
        text = _insert_after_title(text, NOTICE_PARTIAL if status.current else NOTICE_UNTRANSLATED)
    return text


def glossary_page(root: Path = ROOT, lang: str = LANG) -> str:
    """The glossary: English term, Chinese term and the chapter where the term first appears, the last
    found in the English chapters' markdown (so it cannot go out of date)."""
    data = yaml.safe_load((tr.locale_dir(root, lang) / "glossary.yml").read_text())
    chapter_pages = [p for p in tr.pages(root) if p.kind == "ipynb"]
    prose = [(p, "\n".join(c.source for c in nbformat.read(p.path, as_version=4).cells
                           if c.cell_type == "markdown")) for p in chapter_pages]
    rows = []
    for term in data["terms"]:
        pattern = re.compile(term.get("match") or r"\b" + re.escape(term["en"]) + r"(s|es)?\b", re.I)
        first = next(((i, p, m.start()) for i, (p, text) in enumerate(prose) for m in [pattern.search(text)] if m), None)
        if first is None:
            raise ValueError(f"glossary.yml: the term {term['en']!r} occurs in no chapter (pattern {pattern.pattern!r}); "
                             "fix its 'match' or remove it")
        i, p, at = first
        rows.append((i, at, term, p))
    rows.sort(key=lambda r: (r[0], r[1]))
    lines = [data["title"], "", data["intro"].strip(), "", "| English | 中文 | 首次出现 |", "| --- | --- | --- |"]
    for i, _, term, p in rows:
        lines.append(f"| {term['en']} | {term['zh']} | {{doc}}`第 {i + 1} 章 <{p.name}>` |")
    return "\n".join(lines) + "\n"


def _write(path: Path, data: str | bytes) -> bool:
    """Write only when the content changed, so that an incremental build re-reads changed pages only."""
    data = data.encode() if isinstance(data, str) else data
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def config_zh(root: Path, site: dict[str, str], cache: Path) -> dict:
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["title"] = site.get("config/title", config["title"])
    config.setdefault("execute", {})["cache"] = str(cache)
    config["repository"]["path_to_book"] = PREFIX
    config["repository"]["branch"] = PUBLISHED_BRANCH
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["language"] = LANG
    # myst-nb's prompts of folded cells; it fills {type} with an English word, so the Chinese has none
    sphinx["nb_code_prompt_show"] = "显示代码"
    sphinx["nb_code_prompt_hide"] = "隐藏代码"
    # sphinx-togglebutton picks its default hint before it knows the language
    sphinx["togglebutton_hint"] = "点击显示"
    sphinx["togglebutton_hint_hide"] = "点击隐藏"
    sphinx["html_css_files"] = list(sphinx.get("html_css_files", [])) + ["seqbook-zh.css"]
    sphinx["seqbook_alt_text"] = alt_translations(root)
    return config


def alt_translations(root: Path = ROOT, lang: str = LANG) -> dict[str, str]:
    """Each figure description's current translation, by its English (for :mod:`figure_alt`)."""
    found = {}
    for page in tr.pages(root):
        if page.kind != "ipynb":
            continue
        entries = tr.load(page.name, root, lang)
        for unit in tr.units(page, root):
            if unit.key.endswith(figure_alt.KEY_SUFFIX) and (text := _current(entries, unit)) is not None:
                found[unit.source] = text
    return found


def toc_zh(root: Path, site: dict[str, str], glossary_after: str) -> dict:
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    for i, part in enumerate(toc.get("parts", [])):
        part["caption"] = site.get(f"toc/{i}/caption", part.get("caption"))
        files = [c["file"] for c in part["chapters"]]
        if glossary_after in files:
            part["chapters"].insert(files.index(glossary_after) + 1, {"file": "book/glossary"})
    return toc


ZH_CSS = """/* The Chinese edition: a CJK font after the theme's Latin one, no italics on Chinese text. */
html[lang="zh-CN"] body, html[lang="zh_CN"] body {
  font-family: -apple-system, "Segoe UI", "Helvetica Neue", Arial, "Noto Sans CJK SC", "Source Han Sans SC",
               "PingFang SC", "Microsoft YaHei", sans-serif;
}
html[lang="zh-CN"] em, html[lang="zh_CN"] em { font-style: normal; font-weight: 600; }
"""


def write_sources(out: Path, root: Path = ROOT, lang: str = LANG, allow_stale: bool = False,
                  cache: Path | None = None) -> Path:
    """Write the Chinese book into ``out`` (its own _config.yml, _toc.yml and book/) and return ``out``.
    ``cache`` is the jupyter-cache folder to share (default: the English build's)."""
    ed = tr.edition(root, lang)
    statuses = {s.page.name: s for s in tr.book_status(root, lang)}
    for s in statuses.values():
        _check_drift(s, allow_stale)
    site_entries = tr.load(tr.SITE, root, lang)
    site = {u.key: t for u in tr.site_strings(root) if (t := _current(site_entries, u)) is not None}
    book = out / "book"
    written = set()
    for page in tr.pages(root):
        if page.kind == "site":
            continue
        status = statuses[page.name]
        target = book / page.path.name
        if page.kind == "ipynb":
            _write(target, nbformat.writes(notebook_zh(page, status, root, lang)) + "\n")
        else:
            additions = [a for a in ed.get("additions", []) if a["page"] == page.name]
            _write(target, markdown_zh(page, status, additions, root, lang))
        written.add(target.name)
    _write(book / "glossary.md", glossary_page(root, lang))
    written.add("glossary.md")
    for stale in book.glob("*"):
        if stale.is_file() and stale.suffix in (".md", ".ipynb") and stale.name not in written:
            stale.unlink()
    _write(book / "references.bib", (root / "book" / "references.bib").read_bytes())
    for f in (root / "book" / "_static").rglob("*"):
        if f.is_file():
            _write(book / "_static" / f.relative_to(root / "book" / "_static"), f.read_bytes())
    _write(book / "_static" / "seqbook-zh.css", ZH_CSS)
    cache = cache or root / "_build" / ".jupyter_cache"
    _write(out / "_config.yml", yaml.safe_dump(config_zh(root, site, cache.resolve()), sort_keys=False, allow_unicode=True))
    _write(out / "_toc.yml", yaml.safe_dump(toc_zh(root, site, ed.get("glossary_after", "book/notation")),
                                            sort_keys=False, allow_unicode=True))
    return out


def build(source: Path, out: Path, fresh: bool = False) -> subprocess.CompletedProcess:
    """Build the Chinese website from ``source`` into ``out/_build/html`` (warnings are errors)."""
    if fresh and (out / "_build").exists():
        shutil.rmtree(out / "_build")
    jb = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run([str(jb), "build", str(source), "--path-output", str(out), "-W", "-n", "--keep-going"],
                            env={**os.environ, **BUILD_ENV}, capture_output=True, text=True)
    if result.returncode == 0:
        fill_executed(source, out)
    return result


def fill_executed(source: Path, out: Path) -> int:
    """Give the build's executed copies (``out/_build/jupyter_execute``) their outputs.

    myst-nb writes a chapter's executed copy without outputs when it took the outputs from the
    execution cache (it merges them into a new notebook and writes the old one), which is what the
    Chinese build always does after an English build. The Chinese student edition needs executed
    copies, so merge the cached outputs in here. Returns how many copies were filled."""
    from jupyter_cache import get_cache

    config = yaml.safe_load((source / "_config.yml").read_text())
    cache = get_cache(config["execute"]["cache"])
    filled = 0
    for path in sorted((source / "book").glob("*.ipynb")):
        target = out / "_build" / "jupyter_execute" / "book" / path.name
        if target.exists() and has_outputs(nbformat.read(target, as_version=4)):
            continue
        try:
            _, merged = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            continue  # not in the cache: the build did not take it from there
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(merged, target)
        filled += 1
    return filled


def cache_report(log: str) -> tuple[int, int]:
    """(notebooks taken from the execution cache, notebooks executed) in a build log."""
    return len(re.findall(r"Using cached notebook", log)), len(re.findall(r"Executing notebook using", log))


def publish(source: Path, repo: Path = ROOT) -> str:
    """Commit the Chinese notebooks of ``source`` (outputs cleared) to the ``published`` branch, under zh/."""
    notebooks = source.parent / "notebooks"
    if notebooks.exists():
        shutil.rmtree(notebooks)
    notebooks.mkdir(parents=True)
    for path in sorted((source / "book").glob("*.ipynb")):
        nbformat.write(clear_outputs(nbformat.read(path, as_version=4)), notebooks / path.name)
    readme = ("# 中文版笔记本\n\n本书各章的中文笔记本（代码与英文版相同，只翻译了文字），由 `make book-zh` 从 main 分支的英文"
              "笔记本和 `book/locale/zh_CN` 的翻译生成。请勿在此修改：改动英文章节或翻译目录后重新运行 `make book-zh`。\n")
    return publish_branch(notebooks, repo=repo, branch=PUBLISHED_BRANCH, prefix=PREFIX, readme=readme)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "zh")
    parser.add_argument("--no-build", action="store_true", help="write the Chinese sources only")
    parser.add_argument("--no-branch", action="store_true", help=f"do not commit to the local branch {PUBLISHED_BRANCH!r}")
    parser.add_argument("--fresh", action="store_true", help="rebuild every page (a -W build is only thorough fresh)")
    parser.add_argument("--allow-stale", action="store_true",
                        help="build pages claimed translated even when some translations are stale (English there)")
    args = parser.parse_args(argv)
    try:
        source = write_sources(args.out / "source", allow_stale=args.allow_stale)
    except DriftError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"Chinese sources written to {source}")
    if not args.no_branch:
        commit = publish(source)
        print(f"Chinese notebooks committed to the local branch {PUBLISHED_BRANCH!r} ({commit[:10]}) under {PREFIX}/; "
              f"publish them with `git push origin {PUBLISHED_BRANCH}`, so the Chinese site's Colab buttons work")
    if args.no_build:
        return 0
    start_wall, start_cpu = time.time(), os.times()
    result = build(source, args.out, fresh=args.fresh)
    end_cpu = os.times()
    cpu = (end_cpu.children_user + end_cpu.children_system) - (start_cpu.children_user + start_cpu.children_system)
    log = result.stdout + result.stderr
    print(log[-3000:])
    cached, executed = cache_report(log)
    print(f"Chinese site built in {time.time() - start_wall:.0f} s wall, {cpu:.0f} s CPU; notebooks from the "
          f"execution cache: {cached}, executed: {executed}")
    if result.returncode == 0:
        print(f"Open file://{(args.out / '_build' / 'html' / 'index.html').resolve()}")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
