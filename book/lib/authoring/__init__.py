"""Tools for the people who write and teach from the book (not used by the chapters):
the notebooks' set-up cell, the student edition, the exercise list, the benchmark and the
page screenshots. This module knows where the book is and which chapters it has."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def chapter_files(root: Path = ROOT) -> list[Path]:
    """Every chapter notebook on disk (``book/chNN_*.ipynb``), in order, listed in the toc or not."""
    return sorted((root / "book").glob("ch*.ipynb"))


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapters the book publishes: the notebooks ``_toc.yml`` lists, in its order
    (every chapter file when there is no toc)."""
    toc = root / "_toc.yml"
    if not toc.exists():
        return chapter_files(root)
    entries = yaml.safe_load(toc.read_text())
    files = [c["file"] for part in entries.get("parts", [entries]) for c in part.get("chapters", [])]
    return [root / f"{f}.ipynb" for f in files if (root / f"{f}.ipynb").exists()]
