"""Every notebook's first code cell installs ``seqbook`` in Colab and does nothing elsewhere.

The cell installs the *release* of the package that the notebooks were written for
(``git+URL@vX.Y.Z``), so that a notebook a class opened in September still runs the same library
code in December, whatever has happened on ``main`` since. Two facts decide the cell, each kept in
one place: the repository address, ``repository.url`` in ``_config.yml``, and the version,
``seqbook.__version__`` (``book/lib/_version.py``).

``python -m seqbook.authoring.setup_cell`` rewrites the cell in every chapter; ``make release``
does so for a new version. A fork or a course's own copy moves the book to its address with
``python -m seqbook.authoring.setup_cell --url https://github.com/OWNER/NAME``, which changes
``_config.yml`` and ``CITATION.cff`` and then every set-up cell. The tests check that every
notebook carries the current cell.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
import yaml

from . import ROOT, chapter_files
from .citation import citation_with

TAG = "setup"
_INSTALLED_RELEASE = re.compile(r"'git\+(?P<url>\S+)@v(?P<version>[^'\s]+)'")


def repository_url(config: Path = ROOT / "_config.yml") -> str:
    url = yaml.safe_load(config.read_text())["repository"]["url"]
    return url.rstrip("/")


def release_tag(version: str) -> str:
    """The git tag of a release: ``v`` and its version (``0.2.0`` -> ``v0.2.0``)."""
    return f"v{version}"


def setup_source(url: str | None = None, version: str | None = None) -> str:
    """The set-up cell for the book at ``url`` (default: ``_config.yml``'s), installing release
    ``version`` (default: the current one, :func:`current_version`). pip keeps what is installed when it satisfies the
    package's requirements, so Colab's own PyTorch is never reinstalled."""
    url = url or repository_url()
    version = version or current_version()
    return (
        "# Set-up. In Colab this installs seqbook, the book's package, at the release that these\n"
        "# notebooks were written for, keeping Colab's own PyTorch. Elsewhere it does nothing\n"
        "# (locally, `make test` or `pip install -r requirements.txt` installs it once).\n"
        "import subprocess, sys\n"
        "if 'google.colab' in sys.modules:\n"
        f"    package = 'git+{url}@{release_tag(version)}'\n"
        "    subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', package],\n"
        "                   check=True)"
    )


def installed_release(source: str) -> tuple[str, str] | None:
    """(repository address, version) that a set-up cell's source installs, or None."""
    found = _INSTALLED_RELEASE.search(source)
    return (found["url"], found["version"]) if found else None


def first_code_cell(nb):
    return next((c for c in nb.cells if c.cell_type == "code"), None)


def synced(nb, source: str) -> bool:
    """Make the first code cell of notebook ``nb`` the set-up cell ``source``, inserting one before
    the first code cell if there is none; True if ``nb`` changed. No other cell is touched."""
    cell = first_code_cell(nb)
    if cell is not None and TAG in cell.metadata.get("tags", []):
        if cell.source == source:
            return False
        cell.source = source
        return True
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": [TAG, "hide-cell"]})
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first_code, cell)
    return True


def sync(path: Path, source: str | None = None) -> bool:
    """Make the first code cell of ``path`` the current set-up cell; True if it changed."""
    nb = nbformat.read(str(path), as_version=4)
    if not synced(nb, source or setup_source()):
        return False
    nbformat.write(nb, str(path))
    return True


def check_repository_url(url: str) -> str:
    """``url`` without a trailing slash; ValueError unless it is a repository's web address."""
    url = url.strip().rstrip("/")
    if not re.fullmatch(r"https://[^\s/]+(/[^\s/']+){2,}", url) or url.endswith(".git"):
        raise ValueError(f"expected the repository's web address, like https://github.com/OWNER/NAME "
                         f"(https, no trailing .git), got {url!r}")
    return url


def move_repository(url: str, root: Path = ROOT) -> list[Path]:
    """Point the book at the repository ``url``: ``_config.yml``'s ``repository.url``,
    ``CITATION.cff``'s ``repository-code`` and every chapter's set-up cell. Returns the files
    that changed."""
    url = check_repository_url(url)
    config = root / "_config.yml"
    text = config.read_text()
    block = re.search(r"^repository:[ \t]*\n(?:[ \t]+.*\n|[ \t]*#.*\n|[ \t]*\n)*", text, re.M)
    line = re.compile(r"^([ \t]+url:[ \t]*)\S+", re.M)
    if not block or not line.search(block.group(0)):
        raise ValueError(f"{config}: expected a `repository:` block with a `url:` line")
    new_block = line.sub(lambda m: m.group(1) + url, block.group(0), count=1)
    new_text = text[:block.start()] + new_block + text[block.end():]
    assert yaml.safe_load(new_text)["repository"]["url"] == url
    changed = []
    if new_text != text:
        config.write_text(new_text)
        changed.append(config)
    citation = root / "CITATION.cff"
    if citation.exists():
        old = citation.read_text()
        if citation_with(old, url=url) != old:
            citation.write_text(citation_with(old, url=url))
            changed.append(citation)
    source = setup_source(url, current_version(root))
    changed += [p for p in chapter_files(root) if sync(p, source)]
    return changed


def current_version(root: Path = ROOT) -> str:
    """The version in ``root``'s ``book/lib/_version.py`` (read as text: ``root`` may be a copy
    of the book other than the one imported)."""
    path = root / "book" / "lib" / "_version.py"
    found = re.search(r'^__version__ = "([^"]+)"$', path.read_text(), re.M)
    if not found:
        raise ValueError(f'{path}: expected a line __version__ = "X.Y.Z"')
    return found.group(1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter")
    parser.add_argument("--url", help="move the book to this repository address (and rewrite every set-up cell)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's folder (default: %(default)s)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.url:
        try:
            moved = move_repository(args.url, root)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        for path in moved:
            print(f"updated {path}")
        return 0
    source = setup_source(repository_url(root / "_config.yml"), current_version(root))
    for path in args.notebooks or chapter_files(root):
        print(("updated " if sync(path, source) else "up to date ") + str(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
