"""``CHANGELOG.md``: what changed in each release, newest first, in the layout of
Keep a Changelog: an ``## [Unreleased]`` section collects the changes since the last release, and
each release is a section ``## [X.Y.Z] - YYYY-MM-DD``. A release turns the Unreleased section into
its own and opens a new, empty one above it."""

from __future__ import annotations

import re

UNRELEASED = "Unreleased"
_HEADING = re.compile(r"^## \[(?P<name>[^\]]+)\](?:[ \t]+-[ \t]+(?P<date>\d{4}-\d{2}-\d{2}))?[ \t]*$", re.M)


def sections(text: str) -> list[dict]:
    """The ``## [...]`` sections of a changelog in order: name, date (or None), body (stripped),
    and where the section starts and ends in ``text``."""
    found = list(_HEADING.finditer(text))
    ends = [m.start() for m in found[1:]] + [len(text)]
    return [{"name": m["name"], "date": m["date"], "body": text[m.end():end].strip(),
             "start": m.start(), "end": end} for m, end in zip(found, ends)]


def released_versions(text: str) -> list[str]:
    """The versions that have a section, newest (topmost) first."""
    return [s["name"] for s in sections(text) if s["name"] != UNRELEASED]


def unreleased(text: str) -> str:
    """The body of the Unreleased section ('' when it is empty); ValueError if there is none."""
    for section in sections(text):
        if section["name"] == UNRELEASED:
            return section["body"]
    raise ValueError(f"CHANGELOG.md: expected a section '## [{UNRELEASED}]' for the changes since the last release")


def with_release(text: str, version: str, date: str) -> str:
    """``text`` with its Unreleased changes moved into a new section for ``version``, released on
    ``date``, under a new empty Unreleased section. ValueError if there is nothing to release or
    ``version`` already has a section."""
    if version in released_versions(text):
        raise ValueError(f"CHANGELOG.md already has a section for {version}")
    body = unreleased(text)
    if not body:
        raise ValueError(f"CHANGELOG.md: the [{UNRELEASED}] section is empty; say what changed in {version} "
                         "before releasing it")
    section = next(s for s in sections(text) if s["name"] == UNRELEASED)
    new = f"## [{UNRELEASED}]\n\n## [{version}] - {date}\n\n{body}\n\n"
    return (text[:section["start"]] + new + text[section["end"]:].lstrip("\n")).rstrip("\n") + "\n"


def notes(text: str, version: str) -> str:
    """The body of ``version``'s section (the release notes); ValueError if it has none."""
    for section in sections(text):
        if section["name"] == version:
            return section["body"]
    raise ValueError(f"CHANGELOG.md has no section for {version}: run `make release VERSION={version}` first")
