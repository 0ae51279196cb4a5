"""``CITATION.cff``, the file that tells people how to cite the book, edited as text so that its
comments and layout survive: the release sets ``version`` and ``date-released``, a move to
another repository sets ``repository-code``."""

from __future__ import annotations

import re
from pathlib import Path

import yaml


def _set(text: str, key: str, value: str) -> str:
    """``text`` with the top-level ``key`` set to the quoted ``value``; a missing key goes after
    ``version`` (the release date beside the version) or, without one, at the end."""
    line = f'{key}: "{value}"'
    pattern = re.compile(rf"^{re.escape(key)}:.*$", re.M)
    if pattern.search(text):
        return pattern.sub(lambda _: line, text, count=1)
    version = re.search(r"^version:.*$", text, re.M)
    if version:
        return text[:version.end()] + "\n" + line + text[version.end():]
    return text.rstrip("\n") + "\n" + line + "\n"


def citation_with(text: str, version: str | None = None, date: str | None = None,
                  url: str | None = None) -> str:
    """The citation file ``text`` with a new ``version``, ``date-released`` or ``repository-code``
    (each only when given)."""
    for key, value in (("version", version), ("date-released", date), ("repository-code", url)):
        if value is not None:
            text = _set(text, key, value)
    return text


def citation_fields(path: Path) -> dict:
    """The citation file at ``path``, parsed (dates stay strings, as they are written quoted)."""
    return yaml.safe_load(path.read_text())
