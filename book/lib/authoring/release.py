"""Cut a release of the book: one version number, written everywhere it appears, and a git tag
that a course can pin.

    make release VERSION=0.2.0              (python -m seqbook.authoring.release 0.2.0)
    make release VERSION=0.2.0 DRY_RUN=1    show what would change, change nothing

A release

1. checks that it can be made: the version has the form X.Y.Z and is not below the current one,
   the tag vX.Y.Z does not exist yet, the working tree has no uncommitted changes, and the
   changelog's [Unreleased] section says what changed;
2. writes the version into ``book/lib/_version.py`` (``seqbook.__version__``, which the package
   metadata and the website's footer read) and ``CITATION.cff`` (with the date), turns the
   changelog's Unreleased section into the release's, and rewrites every chapter's set-up cell to
   install ``git+URL@vX.Y.Z``;
3. commits that as "Release X.Y.Z" and tags the commit vX.Y.Z.

Pushing is left to the maintainer (``git push origin main vX.Y.Z``); the publish workflow then
deploys the website and makes a GitHub release with the notes and the student notebooks.
``--notes X.Y.Z`` prints a release's notes from the changelog (the workflow's use).
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import re
import subprocess
import sys
from pathlib import Path

import nbformat

from . import ROOT, chapter_files
from . import changelog
from .citation import citation_fields, citation_with
from .setup_cell import (current_version, first_code_cell, installed_release, release_tag, repository_url,
                         setup_source, synced)

VERSION_FILE = Path("book/lib/_version.py")
CHANGELOG = Path("CHANGELOG.md")
CITATION = Path("CITATION.cff")


class ReleaseError(RuntimeError):
    """A release that cannot be made now; the message says why and what to do."""


def parse_version(text: str) -> tuple[int, int, int]:
    """``"1.2.3"`` -> ``(1, 2, 3)``; ValueError for anything else."""
    found = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", text.strip())
    if not found:
        raise ValueError(f"expected a version of three numbers like 1.2.3, got {text!r}")
    return tuple(int(part) for part in found.groups())


def version_strings(root: Path = ROOT) -> dict[str, str]:
    """Every place that names the book's version, and the version it names there. The changelog
    counts once it has a release section (its newest must be the current version)."""
    found = {str(VERSION_FILE): current_version(root),
             str(CITATION): str(citation_fields(root / CITATION).get("version"))}
    released = changelog.released_versions((root / CHANGELOG).read_text())
    if released:
        found[f"{CHANGELOG} (newest release)"] = released[0]
    for path in chapter_files(root):
        cell = first_code_cell(nbformat.read(path, as_version=4))
        installs = installed_release(cell.source) if cell is not None else None
        found[f"{path.relative_to(root)} (set-up cell)"] = installs[1] if installs else "(no release)"
    return found


def notebook_text(nb) -> str:
    """What ``nbformat.write`` puts in the file for ``nb``."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def planned_changes(root: Path, version: str, date: str) -> dict[Path, tuple[str, str]]:
    """The files a release of ``version`` on ``date`` changes: path -> (old text, new text).
    The changelog is left out when its Unreleased section is empty (:func:`problems` says so)."""
    changes = {}

    def plan(path: Path, new: str) -> None:
        old = path.read_text()
        if new != old:
            changes[path] = (old, new)

    version_file = root / VERSION_FILE
    plan(version_file, re.sub(r'^__version__ = "[^"]*"$', f'__version__ = "{version}"',
                              version_file.read_text(), flags=re.M))
    plan(root / CITATION, citation_with((root / CITATION).read_text(), version=version, date=date))
    try:
        plan(root / CHANGELOG, changelog.with_release((root / CHANGELOG).read_text(), version, date))
    except ValueError:
        pass
    source = setup_source(repository_url(root / "_config.yml"), version)
    for path in chapter_files(root):
        nb = nbformat.read(path, as_version=4)
        if synced(nb, source):
            plan(path, notebook_text(nb))
    return changes


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def problems(root: Path, version: str) -> list[str]:
    """Why a release of ``version`` cannot be made in ``root`` now (an empty list: it can)."""
    try:
        new = parse_version(version)
    except ValueError as error:
        return [str(error)]
    try:
        _git(root, "rev-parse", "--git-dir")
    except ReleaseError:
        return [f"{root} is not a git repository: a release is a commit and a tag"]
    found = []
    current = current_version(root)
    if new < parse_version(current):
        found.append(f"{version} is older than the current version {current}")
    tag = release_tag(version)
    if _git(root, "tag", "--list", tag):
        found.append(f"the tag {tag} exists already: choose a version that has not been released")
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    if dirty:
        found.append(f"the working tree has uncommitted changes; commit or stash them first:\n{dirty}")
    try:
        changelog.with_release((root / CHANGELOG).read_text(), version, "0000-00-00")
    except ValueError as error:
        found.append(str(error))
    return found


def diff(path: Path, root: Path, old: str, new: str) -> str:
    name = str(path.relative_to(root))
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{name}", f"b/{name}", n=2))


def release(version: str, root: Path = ROOT, date: str | None = None, dry_run: bool = False,
            out=sys.stdout) -> list[Path]:
    """Release ``version`` of the book in the git repository ``root`` (see the module's text).
    Returns the files it changed (or, with ``dry_run``, would change). Raises ReleaseError
    (after the dry run's diff, with ``dry_run``) when the release cannot be made."""
    date = date or datetime.date.today().isoformat()
    try:
        parse_version(version)
    except ValueError as error:
        raise ReleaseError(str(error)) from None
    blockers = problems(root, version)
    if blockers and not dry_run:
        raise ReleaseError(f"cannot release {version}:\n- " + "\n- ".join(blockers))
    changes = planned_changes(root, version, date)
    if dry_run:
        for path, (old, new) in changes.items():
            print(diff(path, root, old, new), file=out)
        print(f"A release of {version} would change {len(changes)} files:", file=out)
        for path in changes:
            print(f"  {path.relative_to(root)}", file=out)
        print(f"then commit them as 'Release {version}' and tag the commit {release_tag(version)}.", file=out)
        if blockers:
            raise ReleaseError(f"a real release of {version} would stop here:\n- " + "\n- ".join(blockers))
        return list(changes)
    for path, (_, new) in changes.items():
        path.write_text(new)
    notes = changelog.notes((root / CHANGELOG).read_text(), version)
    _git(root, "add", "--", *(str(p.relative_to(root)) for p in changes))
    _git(root, "commit", "--quiet", "-m", f"Release {version}\n\n{notes}")
    _git(root, "tag", "--annotate", release_tag(version), "-m", f"seqbook {version}\n\n{notes}")
    print(f"Released {version}: committed {len(changes)} files and tagged {release_tag(version)}.", file=out)
    print(f"Publish it with: git push origin HEAD {release_tag(version)}", file=out)
    return list(changes)


def release_notes(version: str, root: Path = ROOT) -> str:
    """The changelog's notes for ``version``, which must be the book's current version (a tag
    pushed without its release commit fails here)."""
    current = current_version(root)
    if version != current:
        raise ReleaseError(f"the tag {release_tag(version)} names {version}, but the book's version is {current} "
                           f"({VERSION_FILE}): tag the commit that `make release VERSION={version}` made")
    return changelog.notes((root / CHANGELOG).read_text(), version)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("version", nargs="?", help="the new version, X.Y.Z")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's repository (default: %(default)s)")
    parser.add_argument("--date", help="the release date, YYYY-MM-DD (default: today)")
    parser.add_argument("--dry-run", action="store_true", help="print what would change; change nothing")
    parser.add_argument("--notes", metavar="VERSION", help="print the release notes of VERSION and exit")
    args = parser.parse_args(argv)
    try:
        if args.notes:
            print(release_notes(args.notes, args.root.resolve()))
            return 0
        if not args.version:
            parser.error("give the new version, e.g. 0.2.0")
        if args.date and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.date):
            raise ValueError(f"expected the release date as YYYY-MM-DD, got {args.date!r}")
        release(args.version, args.root.resolve(), args.date, args.dry_run)
    except (ReleaseError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
