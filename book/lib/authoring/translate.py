"""Translation catalogues: the prose of every page in another language, kept in step with the English.

One catalogue per page, ``book/locale/<lang>/<page>.po`` (gettext PO, read and written with
``polib``), plus ``_site.po`` for the site title and the captions of the table of contents. Each
entry is keyed (``msgctxt``) by

- the cell id, for a markdown cell of a chapter notebook;
- ``<section>/<n>``, for the n-th translatable block under the heading whose slug is ``<section>``,
  on a markdown page (``<section>`` alone is the heading itself; ``top`` is before the first one);
- ``config/title`` and ``toc/<i>/caption`` for the site strings.

It holds the English it was made from (``msgid``), the translation (``msgstr``) and, as an
extracted comment, the SHA-256 of that English (``en-sha256: ...``, normalised: trailing spaces and
blank lines at the ends do not count). A translation is *current* when its hash is the hash of the
English the page has now, *stale* when the English changed since, *missing* when there is none.
Cells and blocks without prose (a ``{solution-end}`` fence, a code block, ``{bibliography}``) are
copied as they are and need none.

Pages not yet translated are listed in ``book/locale/<lang>/edition.yml`` (``not_yet_translated``);
everything else is claimed translated, and the drift test fails for a claimed page with a stale or
missing entry.

Commands (``python -m seqbook.authoring.translate ...``):

- ``status [--translated-only] [-v]``: per page, how many entries are current, stale, missing; exits
  non-zero when any entry is stale or missing (with ``--translated-only``: on a claimed page);
- ``export [--page P ...] [--format md|po] [--all] OUT``: writes what is stale or missing (the
  English, the previous translation and what changed in the English) to a sheet for a translator;
- ``import SHEET ...``: reads the translations back into the catalogues, checks that each one keeps
  the English's math, roles, directives, code and numbers, and writes the hashes.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import polib
import yaml

from . import ROOT, figure_alt

LANG = "zh_CN"
SITE = "_site"


def locale_dir(root: Path = ROOT, lang: str = LANG) -> Path:
    return root / "book" / "locale" / lang


# --- the English units ------------------------------------------------------------------------------

def normalise(text: str) -> str:
    """The text as hashed: line endings unified, trailing spaces and surrounding blank lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def source_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()[:16]


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,}|:{3,})(.*)$")
_DIRECTIVE = re.compile(r"^\{([\w:-]+)\}\s*(.*)$")
# directives whose argument is a label, a path or nothing: no prose in the fence line
_LABEL_ARGUMENT = {"solution", "solution-start", "solution-end", "bibliography", "figure", "image",
                   "include", "literalinclude", "tableofcontents", "glue", "glue:figure", "math"}


def _fence_runs(lines: list[str]):
    """For each line: True while inside a fenced block or a $$ display (blank lines there do not
    end a block)."""
    inside, opener, math = [], None, False
    for line in lines:
        m = _FENCE.match(line)
        if opener is None and not math:
            if m:
                opener = m.group(1)
            elif line.strip() == "$$":
                math = True
            inside.append(False)
            continue
        inside.append(True)
        if math and line.strip() == "$$":
            math = False
        elif opener and m and m.group(1)[0] == opener[0] and len(m.group(1)) >= len(opener) and not m.group(2).strip():
            opener = None
    return inside


@dataclass
class Block:
    text: str
    after: str = ""   # the blank lines that follow it


def split_blocks(text: str) -> list[Block]:
    """A markdown page as blocks separated by blank lines; fenced blocks and $$ displays stay
    whole. ``"".join(b.text + b.after for b in blocks) == text``."""
    lines = text.split("\n")
    inside = _fence_runs(lines)
    blocks: list[Block] = []
    current: list[str] = []
    gap: list[str] = []
    for line, in_fence in zip(lines, inside):
        if not line.strip() and not in_fence:
            gap.append(line)
            continue
        if gap or not current:
            if current:
                blocks.append(Block("\n".join(current), "\n" + "\n".join(gap) + "\n"))
            elif gap:  # blank lines before the first block
                blocks.append(Block("", "\n".join(gap) + "\n"))
            current, gap = [], []
        current.append(line)
    if current:
        blocks.append(Block("\n".join(current), ("\n" + "\n".join(gap)) if gap else ""))
    elif gap:
        blocks.append(Block("", "\n".join(gap)))
    return blocks


def slug(heading: str) -> str:
    text = re.sub(r"^#+\s*", "", heading.strip().splitlines()[0])
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


# A MyST role, {name}`body`; not when the braces sit inside inline code (``{solution}`` or
# `{solution}`, which names a directive in prose).
_ROLE = r"(?<!`)\{([\w:-]+)\}`([^`]*)`"
# Inline code, which may wrap onto the next line of its paragraph (not across a blank line).
_CODE_SPAN = r"(?<!`)`((?:[^`\n]|\n(?!\s*\n))+)`(?!`)"


def strip_markup(text: str) -> str:
    """The prose of a markdown text: code blocks, math, inline code, roles, directive syntax,
    labels, comments, links' targets and HTML tags removed."""
    out, lines = [], text.split("\n")
    inside = _fence_runs(lines)
    skipping_code = False
    options = False
    for line, in_fence in zip(lines, inside):
        m = _FENCE.match(line)
        if m and not in_fence:  # an opening fence
            d = _DIRECTIVE.match(m.group(2).strip())
            if d:
                out.append("" if d.group(1) in _LABEL_ARGUMENT else d.group(2))
                options = True
            else:
                skipping_code = True
            continue
        if m and in_fence and not m.group(2).strip():  # a closing fence (or a nested opening)
            if skipping_code:
                skipping_code = False
            options = False
            continue
        if skipping_code:
            continue
        if m and in_fence:  # a nested directive opening
            d = _DIRECTIVE.match(m.group(2).strip())
            if d:
                out.append("" if d.group(1) in _LABEL_ARGUMENT else d.group(2))
                options = True
                continue
        if options and re.match(r"^\s*:[\w-]+:", line):
            continue
        options = False
        out.append(line)
    prose = "\n".join(out)
    prose = re.sub(r"\$\$.*?\$\$", " ", prose, flags=re.S)
    prose = re.sub(r"(?<![\\$])\$(?!\$)(?:[^$\\]|\\.)+?\$", " ", prose, flags=re.S)
    prose = re.sub(_ROLE, " ", prose)
    prose = re.sub(r"``.+?``|" + _CODE_SPAN, " ", prose)
    prose = re.sub(r"^\s*\([\w:.-]+\)=\s*$", " ", prose, flags=re.M)
    prose = re.sub(r"^\s*%.*$", " ", prose, flags=re.M)
    prose = re.sub(r"\]\([^)]*\)", "]", prose)
    prose = re.sub(r"<[^>\n]+>", " ", prose)
    prose = re.sub(r"https?://\S+", " ", prose)
    return prose


def has_prose(text: str) -> bool:
    return bool(re.search(r"[A-Za-z]{2,}|[\u3400-\u9fff]", strip_markup(text)))


@dataclass
class Unit:
    """One translatable piece of an English page."""

    key: str
    source: str

    @property
    def sha(self) -> str:
        return source_hash(self.source)


@dataclass
class Page:
    name: str          # the file stem: ch01_ngrams, intro, ... or _site
    path: Path | None  # the English source (None for _site)

    @property
    def kind(self) -> str:
        return "site" if self.path is None else self.path.suffix.lstrip(".")


def pages(root: Path = ROOT) -> list[Page]:
    """Every page of the English book, in the order of the table of contents, then the site strings."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", [toc]) for c in part.get("chapters", [])]
    found = []
    for f in files:
        for ext in (".ipynb", ".md"):
            if (root / f"{f}{ext}").exists():
                found.append(Page(Path(f).name, root / f"{f}{ext}"))
                break
        else:
            raise FileNotFoundError(f"_toc.yml lists {f!r}, but neither {f}.ipynb nor {f}.md exists")
    return found + [Page(SITE, None)]


def md_units(text: str) -> list[tuple[Block, str | None]]:
    """The blocks of a markdown page, each with its key (None for a block without prose)."""
    keyed, section, count, seen = [], "top", 0, {}
    for block in split_blocks(text):
        key = None
        first = block.text.lstrip().split("\n", 1)[0]
        if re.match(r"^#{1,6}\s", first) and "\n" not in block.text.strip():
            base = slug(first)
            seen[base] = seen.get(base, 0) + 1
            section = base if seen[base] == 1 else f"{base}-{seen[base]}"
            count = 0
            key = section
        elif block.text.strip() and has_prose(block.text):
            count += 1
            key = f"{section}/{count}"
        keyed.append((block, key))
    return keyed


def site_strings(root: Path = ROOT) -> list[Unit]:
    config = yaml.safe_load((root / "_config.yml").read_text())
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    units = [Unit("config/title", config["title"])]
    for i, part in enumerate(toc.get("parts", [])):
        if part.get("caption"):
            units.append(Unit(f"toc/{i}/caption", part["caption"]))
    return units


def units(page: Page, root: Path = ROOT) -> list[Unit]:
    """The translatable units of ``page``, in document order."""
    if page.kind == "site":
        return site_strings(root)
    if page.kind == "ipynb":
        nb = nbformat.read(page.path, as_version=4)
        found = []
        for cell in nb.cells:
            if cell.cell_type == "markdown" and has_prose(cell.source):
                if not cell.get("id"):
                    raise ValueError(f"{page.path.name}: a markdown cell has no id (nbformat 4.5 ids are needed)")
                found.append(Unit(cell.id, cell.source))
            elif cell.cell_type == "code" and (alt := figure_alt.cell_alt(cell)):
                found.append(Unit(cell.id + figure_alt.KEY_SUFFIX, alt))   # a figure's description
        return found
    return [Unit(key, block.text) for block, key in md_units(page.path.read_text()) if key]


# --- the catalogues ---------------------------------------------------------------------------------

@dataclass
class Entry:
    key: str
    source: str          # the English this translation was made from
    text: str            # the translation
    sha: str             # hash of ``source`` as recorded
    obsolete: bool = False


def catalogue_path(page: str, root: Path = ROOT, lang: str = LANG) -> Path:
    return locale_dir(root, lang) / f"{page}.po"


_SHA = re.compile(r"en-sha256:\s*([0-9a-f]{16})")


def load(page: str, root: Path = ROOT, lang: str = LANG) -> dict[str, Entry]:
    """The entries of a page's catalogue, by key (an empty dict when it has none yet)."""
    path = catalogue_path(page, root, lang)
    if not path.exists():
        return {}
    entries = {}
    for e in polib.pofile(str(path), wrapwidth=0):
        if not e.msgctxt:
            raise ValueError(f"{path}: an entry has no msgctxt (the key of its cell or block)")
        m = _SHA.search(e.comment or "")
        if not m and not e.obsolete:      # gettext writes no comments on obsolete (#~) entries
            raise ValueError(f"{path}: entry {e.msgctxt!r} has no 'en-sha256:' comment; import translations "
                             "with `python -m seqbook.authoring.translate import`, never by hand")
        entries[e.msgctxt] = Entry(e.msgctxt, e.msgid, e.msgstr, m.group(1) if m else "", obsolete=e.obsolete)
    return entries


def save(page: str, entries: dict[str, Entry], order: list[str], root: Path = ROOT, lang: str = LANG) -> Path:
    """Write a page's catalogue: entries in the English's order ``order``, then obsolete ones."""
    path = catalogue_path(page, root, lang)
    path.parent.mkdir(parents=True, exist_ok=True)
    po = polib.POFile(wrapwidth=0)
    po.metadata = {"Project-Id-Version": "seqbook", "Language": lang, "MIME-Version": "1.0",
                   "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit",
                   "X-Seqbook-Page": page}
    rank = {k: i for i, k in enumerate(order)}
    live = sorted((e for k, e in entries.items() if k in rank), key=lambda e: rank[e.key])
    dead = sorted((e for k, e in entries.items() if k not in rank), key=lambda e: e.key)
    for e in live + dead:
        po.append(polib.POEntry(msgctxt=e.key, msgid=e.source, msgstr=e.text, comment=f"en-sha256: {e.sha}",
                                obsolete=e.key not in rank))
    po.save(str(path))
    return path


# --- status -----------------------------------------------------------------------------------------

def edition(root: Path = ROOT, lang: str = LANG) -> dict:
    path = locale_dir(root, lang) / "edition.yml"
    if not path.exists():
        return {"not_yet_translated": [p.name for p in pages(root)]}
    data = yaml.safe_load(path.read_text()) or {}
    names = {p.name for p in pages(root)}
    unknown = set(data.get("not_yet_translated") or []) - names
    if unknown:
        raise ValueError(f"{path}: not_yet_translated names pages the book does not have: {sorted(unknown)}; "
                         f"expected some of {sorted(names)}")
    data["not_yet_translated"] = list(data.get("not_yet_translated") or [])
    return data


@dataclass
class PageStatus:
    page: Page
    claimed: bool                  # not listed as not yet translated
    current: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    obsolete: list[str] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)   # stored hash is not the hash of stored English
    total: int = 0

    @property
    def complete(self) -> bool:
        return not (self.stale or self.missing or self.inconsistent)


def page_status(page: Page, root: Path = ROOT, lang: str = LANG, claimed: bool = True) -> PageStatus:
    status = PageStatus(page, claimed)
    entries = load(page.name, root, lang)
    found = units(page, root)
    status.total = len(found)
    keys = set()
    for unit in found:
        keys.add(unit.key)
        entry = entries.get(unit.key)
        if entry is None or not entry.text.strip():
            status.missing.append(unit.key)
        elif entry.sha != source_hash(entry.source):
            status.inconsistent.append(unit.key)
        elif entry.sha != unit.sha:
            status.stale.append(unit.key)
        else:
            status.current.append(unit.key)
    status.obsolete = sorted(k for k in entries if k not in keys)
    return status


def book_status(root: Path = ROOT, lang: str = LANG) -> list[PageStatus]:
    pending = set(edition(root, lang)["not_yet_translated"])
    return [page_status(p, root, lang, claimed=p.name not in pending) for p in pages(root)]


def status_report(statuses: list[PageStatus], verbose: bool = False) -> str:
    rows = [f"{'page':<20} {'current':>9} {'stale':>6} {'missing':>8} {'obsolete':>9}  state"]
    for s in statuses:
        if s.complete:
            state = "ok" if s.claimed else "complete: remove it from not_yet_translated in edition.yml"
        else:
            state = "DRIFT: claimed translated" if s.claimed else "not yet translated (edition.yml)"
        rows.append(f"{s.page.name:<20} {len(s.current):>4}/{s.total:<4} {len(s.stale):>6} {len(s.missing):>8} "
                    f"{len(s.obsolete):>9}  {state}")
    for s in statuses:
        if s.claimed or verbose:
            for what in ("stale", "missing", "inconsistent"):
                keys = getattr(s, what)
                if keys:
                    rows.append(f"  {s.page.name}: {what}: {', '.join(keys)}")
    return "\n".join(rows)


# --- checks of a translation against its English -----------------------------------------------------

def _display_math(text: str) -> list[str]:
    return [re.sub(r"\s+", " ", m.strip()) for m in re.findall(r"\$\$(.*?)\$\$", text, flags=re.S)]


def _inline_math(text: str) -> set[str]:
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    return {re.sub(r"\s+", " ", m.strip())
            for m in re.findall(r"(?<![\\$])\$(?!\$)((?:[^$\\]|\\.)+?)\$", text, flags=re.S)}


def _roles(text: str) -> list[str]:
    found = []
    for name, body in re.findall(_ROLE, text):
        target = re.search(r"<([^>]+)>\s*$", body)
        found.append(f"{{{name}}}{target.group(1) if target else body}")
    return sorted(found)


def _directives(text: str) -> list[str]:
    """Directive names in order, with their label-like arguments and their option lines."""
    found, lines = [], text.split("\n")
    options = False
    for line in lines:
        m = _FENCE.match(line)
        d = _DIRECTIVE.match(m.group(2).strip()) if m else None
        if d:
            found.append(f"{m.group(1)}{{{d.group(1)}}}" + (f" {d.group(2)}" if d.group(1) in _LABEL_ARGUMENT else ""))
            options = True
        elif options and re.match(r"^\s*:[\w-]+:", line):
            found.append(line.strip())
        else:
            options = False
    return found


def _code_blocks(text: str) -> list[str]:
    """The fenced code blocks of a markdown text, fence line included. A directive's own fences
    (```{exercise} ... ```) are not code: their closing fence must not open a block."""
    blocks, open_directives, code = [], [], None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if code is not None:
            if m and m.group(1) == code[1] and not m.group(2).strip():
                blocks.append("\n".join([code[0]] + code[2:]))
                code = None
            else:
                code.append(line)
        elif m:
            info = m.group(2).strip()
            if _DIRECTIVE.match(info):
                open_directives.append(m.group(1))
            elif not info and open_directives and open_directives[-1] == m.group(1):
                open_directives.pop()
            else:
                code = [line.strip(), m.group(1)]
    return blocks


def _inline_code(text: str) -> set[str]:
    text = "\n".join(l for l in text.split("\n") if not _FENCE.match(l))
    text = re.sub(_ROLE, " ", text)
    return {" ".join(code.split()) for code in re.findall(_CODE_SPAN, text)}


def _numbers(text: str) -> set[str]:
    prose = strip_markup(text)
    return set(re.findall(r"\d+(?:\.\d+)?", prose))


def _headings(text: str) -> list[str]:
    lines = text.split("\n")
    inside = _fence_runs(lines)
    return [re.match(r"^(#+)", l).group(1) for l, f in zip(lines, inside) if not f and re.match(r"^#{1,6}\s", l)]


def _links(text: str) -> list[str]:
    return sorted(re.findall(r"\]\(([^)]*)\)", text))


_CJK = r"\u3400-\u9fff\uf900-\ufaff"
_CJK_PUNCT = r"\u3000-\u303f\uff00-\uffef"


def check(source: str, text: str) -> list[str]:
    """What a translation ``text`` breaks of its English ``source``: an empty list when it keeps the
    English's display math, inline math, roles (with their targets), directives (names, labels,
    options), code blocks, inline code, headings, link targets and every number of the prose, and
    when it wraps no line between two Chinese characters (a soft line break shows as a space)."""
    problems = []
    if _display_math(source) != _display_math(text):
        problems.append("the display math ($$ ... $$) differs from the English")
    missing, extra = _inline_math(source) - _inline_math(text), _inline_math(text) - _inline_math(source)
    if missing or extra:
        problems.append(f"inline math differs: missing {sorted(missing)}, not in the English {sorted(extra)}")
    if _roles(source) != _roles(text):
        problems.append(f"roles differ: English {_roles(source)}, translation {_roles(text)}")
    if _directives(source) != _directives(text):
        problems.append(f"directives differ: English {_directives(source)}, translation {_directives(text)}")
    if _code_blocks(source) != _code_blocks(text):
        problems.append("a code block differs from the English (code stays English, byte for byte)")
    missing = _inline_code(source) - _inline_code(text)
    extra = _inline_code(text) - _inline_code(source)
    if missing or extra:
        problems.append(f"inline code differs: missing {sorted(missing)}, not in the English {sorted(extra)}")
    if _headings(source) != _headings(text):
        problems.append(f"headings differ: English {_headings(source)}, translation {_headings(text)}")
    if _links(source) != _links(text):
        problems.append(f"link targets differ: English {_links(source)}, translation {_links(text)}")
    lost = _numbers(source) - _numbers(text)
    if lost:
        problems.append(f"numbers of the English missing from the translation: {sorted(lost, key=float)}")
    lines = text.split("\n")
    inside = _fence_runs(lines)
    for a, b, fa, fb in zip(lines, lines[1:], inside, inside[1:]):
        if (not fa and not fb and re.search(f"[{_CJK}{_CJK_PUNCT}]$", a.rstrip())
                and re.match(f"^[{_CJK}]", b.lstrip()) and not re.match(r"^\s*([-*+]|\d+\.|\||#)", b)):
            problems.append(f"a line break between Chinese characters shows as a space: {a[-12:]!r} / {b[:12]!r}")
    return problems


def cjk_share(text: str) -> tuple[int, int]:
    """(CJK characters, Latin letters) in the prose of ``text``."""
    prose = strip_markup(text)
    return len(re.findall(f"[{_CJK}]", prose)), len(re.findall(r"[A-Za-z]", prose))


def english_lines(text: str, words: int = 4) -> list[str]:
    """Lines of prose with ``words`` or more Latin words in a row and no CJK character: English
    left in a translation."""
    found = []
    for line in strip_markup(text).split("\n"):
        if re.search(f"[{_CJK}]", line):
            continue
        if re.search(r"[A-Za-z][\w'-]*(?:[\s,;:()]+[A-Za-z][\w'-]*){%d,}" % (words - 1), line):
            found.append(line.strip())
    return found


# --- export and import ------------------------------------------------------------------------------

_MARK = "@@@"
_HEADER = ("<!-- A translation sheet of the seqbook book ({lang}), written by `python -m seqbook.authoring.translate"
           " export`.\nFor each entry, write the translation under its '@@@ {lang} @@@' line (it may start from the"
           " previous translation).\nKeep every '@@@' line as it is; an entry left empty is skipped. Then run\n"
           "    python -m seqbook.authoring.translate import THIS_FILE\n"
           "Math, roles, directives, code and numbers stay as in the English: import checks them. -->\n")


@dataclass
class Todo:
    page: str
    unit: Unit
    state: str                    # missing or stale
    previous: Entry | None        # the stored translation (stale), or the most similar one (missing)
    previous_from: str = ""       # the key the suggestion came from, when it is not this key


def _suggestion(unit: Unit, entries: dict[str, Entry]) -> tuple[Entry | None, str]:
    best, score = None, 0.0
    for e in entries.values():
        if not e.text.strip():
            continue
        r = difflib.SequenceMatcher(None, e.source, unit.source, autojunk=False).ratio()
        if r > score:
            best, score = e, r
    return (best, best.key) if best is not None and score >= 0.6 else (None, "")


def todo(root: Path = ROOT, lang: str = LANG, only: list[str] | None = None, everything: bool = False) -> list[Todo]:
    """What is stale or missing, page by page (``only``: these pages; ``everything``: also the
    current entries, e.g. to review a whole page)."""
    found = []
    known = {p.name: p for p in pages(root)}
    for name in only or known:
        if name not in known:
            raise ValueError(f"no page {name!r}: expected one of {sorted(known)}")
        page = known[name]
        status = page_status(page, root, lang)
        entries = load(page.name, root, lang)
        wanted = set(status.stale + status.missing + status.inconsistent + (status.current if everything else []))
        for unit in units(page, root):
            if unit.key not in wanted:
                continue
            entry = entries.get(unit.key)
            if entry is not None and entry.text.strip():
                state = "current" if unit.key in status.current else "stale"
                found.append(Todo(page.name, unit, state, entry))
            else:
                suggestion, key = _suggestion(unit, entries)
                found.append(Todo(page.name, unit, "missing", suggestion, key))
    return found


def write_sheet(items: list[Todo], out: Path, lang: str = LANG) -> Path:
    parts = [_HEADER.format(lang=lang)]
    for item in items:
        parts.append(f"{_MARK} entry {item.page} {item.unit.key} en-sha256={item.unit.sha} ({item.state}) {_MARK}\n")
        parts.append(f"{_MARK} en {_MARK}\n{normalise(item.unit.source)}\n")
        if item.previous is not None:
            if item.state == "stale":
                diff = difflib.unified_diff(normalise(item.previous.source).split("\n"),
                                            normalise(item.unit.source).split("\n"),
                                            "English then", "English now", lineterm="", n=1)
                parts.append(f"{_MARK} what changed in the English {_MARK}\n" + "\n".join(diff) + "\n")
            label = f"previous {lang}" + (f" (of the similar entry {item.previous_from})" if item.previous_from else "")
            parts.append(f"{_MARK} {label} {_MARK}\n{normalise(item.previous.text)}\n")
        parts.append(f"{_MARK} {lang} {_MARK}\n\n")
    parts.append(f"{_MARK} end {_MARK}\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(parts))
    return out


def write_po_sheet(items: list[Todo], out: Path, lang: str = LANG) -> Path:
    """The same as a PO file, for PO editors (Poedit, Lokalize, Weblate): stale entries are fuzzy and
    carry the previous English as ``#| msgid``; clear the fuzzy flag once an entry is done."""
    po = polib.POFile(wrapwidth=0)
    po.metadata = {"Project-Id-Version": "seqbook", "Language": lang, "MIME-Version": "1.0",
                   "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}
    for item in items:
        e = polib.POEntry(msgctxt=f"{item.page}:{item.unit.key}", msgid=normalise(item.unit.source),
                          msgstr=normalise(item.previous.text) if item.previous is not None else "",
                          comment=f"en-sha256: {item.unit.sha} ({item.state})")
        if item.previous is not None and item.state != "current":
            e.flags.append("fuzzy")
            e.previous_msgid = normalise(item.previous.source)
        po.append(e)
    out.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(out))
    return out


@dataclass
class Translation:
    page: str
    key: str
    sha: str     # the hash of the English it was made from, as exported
    text: str


def read_sheet(path: Path, lang: str = LANG) -> list[Translation]:
    text = path.read_text()
    found = []
    pattern = re.compile(rf"^{_MARK} entry (\S+) (\S+) en-sha256=([0-9a-f]{{16}}) \(\w+\) {_MARK}$", re.M)
    heads = list(pattern.finditer(text))
    if not heads:
        raise ValueError(f"{path}: no '{_MARK} entry ...' lines: expected a sheet written by `translate export`")
    for head, nxt in zip(heads, heads[1:] + [None]):
        body = text[head.end():nxt.start() if nxt else len(text)]
        m = re.search(rf"^{_MARK} {re.escape(lang)} {_MARK}$\n?(.*?)(?=^{_MARK} |\Z)", body, flags=re.M | re.S)
        if not m:
            raise ValueError(f"{path}: entry {head.group(1)} {head.group(2)} has no '{_MARK} {lang} {_MARK}' line")
        found.append(Translation(head.group(1), head.group(2), head.group(3), normalise(m.group(1))))
    return found


def read_po_sheet(path: Path) -> list[Translation]:
    found = []
    for e in polib.pofile(str(path), wrapwidth=0):
        if e.obsolete or "fuzzy" in e.flags or not e.msgctxt or ":" not in e.msgctxt:
            continue
        page, key = e.msgctxt.split(":", 1)
        found.append(Translation(page, key, source_hash(e.msgid), normalise(e.msgstr)))
    return found


def import_translations(translations: list[Translation], root: Path = ROOT, lang: str = LANG) -> tuple[int, list[str]]:
    """Store ``translations`` in the catalogues. Each must be non-empty, made from the English the
    page has now, and pass :func:`check`. Returns (how many were stored, what was refused and why)."""
    known = {p.name: p for p in pages(root)}
    refused, by_page = [], {}
    for t in translations:
        if not t.text.strip():
            continue
        if t.page not in known:
            refused.append(f"{t.page} {t.key}: no such page (expected one of {sorted(known)})")
            continue
        by_page.setdefault(t.page, []).append(t)
    stored = 0
    for name, items in by_page.items():
        page_units = {u.key: u for u in units(known[name], root)}
        entries = load(name, root, lang)
        changed = False
        for t in items:
            unit = page_units.get(t.key)
            if unit is None:
                refused.append(f"{name} {t.key}: the English has no such cell or block any more; export again")
                continue
            if unit.sha != t.sha:
                refused.append(f"{name} {t.key}: the English changed since this sheet was exported; export again")
                continue
            problems = check(unit.source, t.text)
            if problems:
                refused.append(f"{name} {t.key}: " + "; ".join(problems))
                continue
            entries[t.key] = Entry(t.key, normalise(unit.source), t.text, unit.sha)
            stored += 1
            changed = True
        if changed:
            save(name, entries, list(page_units), root, lang)
    return stored, refused


# --- command line -----------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", default=LANG)
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's repository (default: %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("status", help="list current, stale and missing translations per page")
    p.add_argument("--translated-only", action="store_true",
                   help="fail only for pages claimed translated (not listed in edition.yml)")
    p.add_argument("-v", "--verbose", action="store_true", help="also list the keys of pages not yet translated")
    p = sub.add_parser("export", help="write what is stale or missing to a sheet for a translator")
    p.add_argument("out", type=Path)
    p.add_argument("--page", action="append", help="only this page (repeatable), e.g. ch02_rnn")
    p.add_argument("--format", choices=["md", "po"], default=None, help="default: from the file's suffix")
    p.add_argument("--all", action="store_true", help="also the current entries (to review a page)")
    p = sub.add_parser("import", help="store the translations of sheets (md or po) in the catalogues")
    p.add_argument("sheets", type=Path, nargs="+")
    args = parser.parse_args(argv)

    if args.command == "status":
        statuses = book_status(args.root, lang=args.lang)
        print(status_report(statuses, verbose=args.verbose))
        failing = [s for s in statuses if not s.complete and (s.claimed or not args.translated_only)]
        return 1 if failing else 0
    if args.command == "export":
        items = todo(args.root, lang=args.lang, only=args.page, everything=args.all)
        fmt = args.format or ("po" if args.out.suffix == ".po" else "md")
        (write_po_sheet if fmt == "po" else write_sheet)(items, args.out, lang=args.lang)
        print(f"{len(items)} entries written to {args.out}")
        return 0
    translations = []
    for sheet in args.sheets:
        translations += read_po_sheet(sheet) if sheet.suffix == ".po" else read_sheet(sheet, args.lang)
    stored, refused = import_translations(translations, args.root, lang=args.lang)
    print(f"{stored} translations stored")
    for line in refused:
        print("refused:", line)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
