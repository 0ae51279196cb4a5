"""Screenshots of built pages with headless Chromium, and a check that their math was typeset.

``python -m seqbook.authoring.screenshot _build/html _build/screenshots`` shoots every chapter page.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    raise FileNotFoundError("headless Chromium is needed: install the Debian package `chromium`")


def _run(page: Path, *extra: str, budget_ms: int = 15000) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}",
                               f"--virtual-time-budget={budget_ms}", *extra, page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=180)


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 3000) -> Path:
    """Save a PNG of ``page`` as a reader's browser draws it (scripts run, MathJax typesets)."""
    png.parent.mkdir(parents=True, exist_ok=True)
    _run(page, f"--screenshot={png.resolve()}", f"--window-size={width},{height}")
    if not png.exists() or png.stat().st_size == 0:
        raise RuntimeError(f"Chromium made no screenshot of {page}")
    return png


def rendered_dom(page: Path) -> str:
    """The page's HTML after its scripts ran: typeset math shows up as <mjx-container> elements."""
    return _run(page, "--dump-dom").stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("site", type=Path, help="the built website, e.g. _build/html")
    parser.add_argument("out", type=Path, help="folder for the PNG files")
    args = parser.parse_args(argv)
    pages = sorted((args.site / "book").glob("ch*.html"))
    if not pages:
        print(f"no chapter pages under {args.site}/book: build the website first (make book)")
        return 1
    for page in pages:
        png = screenshot(page, args.out / (page.stem + ".png"))
        math = rendered_dom(page).count("<mjx-container")
        print(f"{png}  ({math} typeset formulas)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
