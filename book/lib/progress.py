"""A progress bar that draws as a widget in a notebook and as text in a terminal."""

from __future__ import annotations

import os

from tqdm.auto import tqdm


def progress(iterable=None, *, desc: str | None = None, total: int | None = None, **kwargs):
    """Wrap ``iterable`` in a progress bar.

    ``SEQBOOK_QUIET=1`` (set by the website build and the tests) turns bars off, so
    rendered pages and logs are not filled with half-drawn bars.
    """
    disable = kwargs.pop("disable", os.environ.get("SEQBOOK_QUIET") == "1")
    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False, **kwargs)
