"""Every notebook's first code cell installs ``seqbook`` in Colab and does nothing elsewhere.

The repository address lives in one place, ``_config.yml`` (``repository.url``); this module
writes the set-up cell from it. ``python -m seqbook.authoring.setup_cell`` rewrites the cell
in every chapter; the tests check that every notebook carries the current one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import yaml

from . import ROOT, chapter_files

TAG = "setup"


def repository_url(config: Path = ROOT / "_config.yml") -> str:
    url = yaml.safe_load(config.read_text())["repository"]["url"]
    return url.rstrip("/")


def setup_source(url: str | None = None) -> str:
    url = url or repository_url()
    return (
        "# Set-up. In Colab this installs the book's package, seqbook; elsewhere it does nothing\n"
        "# (run `make test` or `pip install -r requirements.txt` once, locally).\n"
        "import subprocess, sys\n"
        "if 'google.colab' in sys.modules:\n"
        "    subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet',\n"
        f"                    'git+{url}'], check=True)"
    )


def first_code_cell(nb):
    return next((c for c in nb.cells if c.cell_type == "code"), None)


def sync(path: Path) -> bool:
    """Make the first code cell of ``path`` the current set-up cell; True if it changed."""
    nb = nbformat.read(str(path), as_version=4)
    cell = first_code_cell(nb)
    source = setup_source()
    if cell is not None and TAG in cell.metadata.get("tags", []):
        if cell.source == source:
            return False
        cell.source = source
    else:
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": [TAG, "hide-cell"]})
        first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
        nb.cells.insert(first_code, cell)
    nbformat.write(nb, str(path))
    return True


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]] or chapter_files()
    for p in paths:
        print(("updated " if sync(p) else "up to date ") + str(p))
