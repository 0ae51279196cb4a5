"""Plotting helpers shared by every chapter: heatmaps, loss curves, animations and tables."""

from __future__ import annotations

import html
from typing import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import animation
from matplotlib.axes import Axes

from . import checks


def heatmap(matrix, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
            ax: Axes | None = None, title: str | None = None, xlabel: str | None = None,
            ylabel: str | None = None, cmap: str = "viridis", colorbar: bool = True,
            annotate: bool = False, fmt: str = "{:.2f}", colorbar_label: str | None = None,
            **imshow_kwargs) -> Axes:
    """Draw a 2-d array as a labelled heatmap; rows run down, columns across.

    ``colorbar_label`` names what the colours measure (shown beside the colour bar).
    """
    m = np.asarray(matrix.detach().cpu() if hasattr(matrix, "detach") else matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"expected a 2-d matrix, got shape {m.shape}")
    for labels, size, what in ((row_labels, m.shape[0], "row"), (col_labels, m.shape[1], "column")):
        if labels is not None and len(labels) != size:
            raise ValueError(f"expected {size} {what} labels, got {len(labels)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(max(3, 0.35 * m.shape[1] + 2), max(3, 0.35 * m.shape[0] + 1)))
    im = ax.imshow(m, cmap=cmap, aspect="auto", **imshow_kwargs)
    if row_labels is not None:
        ax.set_yticks(range(m.shape[0]), labels=list(row_labels))
    if col_labels is not None:
        ax.set_xticks(range(m.shape[1]), labels=list(col_labels))
    if annotate:
        mid = (np.nanmax(m) + np.nanmin(m)) / 2
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                ax.text(j, i, fmt.format(m[i, j]), ha="center", va="center", fontsize=7,
                        color="black" if m[i, j] > mid else "white")
    if colorbar_label is not None and not colorbar:
        raise ValueError("colorbar_label needs colorbar=True: there is no colour bar to label")
    if colorbar:
        bar = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        if colorbar_label is not None:
            bar.set_label(colorbar_label)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return ax


def loss_curves(curves: Mapping[str, Sequence[float]], ax: Axes | None = None, xlabel: str = "step",
                ylabel: str = "loss", logy: bool = False, title: str | None = None) -> Axes:
    """One line per named curve, e.g. ``{"train": [...], "validation": [...]}``."""
    if not curves:
        raise ValueError("expected at least one named curve")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for name, values in curves.items():
        ax.plot(np.arange(1, len(values) + 1), values, label=name)
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend()
    ax.grid(alpha=0.3)
    return ax


def animate(fig, update: Callable[[int], object], frames: int, interval: int = 400):
    """Turn ``update(frame)`` into an HTML player with a slider (works on the static website).

    The figure is closed afterwards so that the notebook does not also show it as a still.
    """
    from IPython.display import HTML

    checks.positive_int(frames, "number of frames")
    anim = animation.FuncAnimation(fig, update, frames=frames, interval=interval)
    html = anim.to_jshtml(default_mode="once")
    plt.close(fig)
    return HTML(html)


def html_table(rows, align: str | None = None):
    """A table for the page: ``rows[0]`` is the header, ``align`` one ``"l"`` or ``"r"`` per
    column (default: first column left, the rest right). Returns an IPython ``HTML`` object."""
    from IPython.display import HTML

    rows = [list(r) for r in rows]
    if not rows or any(len(r) != len(rows[0]) for r in rows):
        raise ValueError(f"expected rows of equal length, got lengths {[len(r) for r in rows]}")
    align = align or "l" + "r" * (len(rows[0]) - 1)
    if len(align) != len(rows[0]) or set(align) - {"l", "r"}:
        raise ValueError(f"expected one 'l' or 'r' per column ({len(rows[0])}), got {align!r}")
    side = {"l": "left", "r": "right"}

    def tr(cells, tag):
        return "<tr>" + "".join(f'<{tag} style="text-align:{side[a]}">{html.escape(str(c))}</{tag}>'
                                for c, a in zip(cells, align)) + "</tr>"

    return HTML("<table>" + tr(rows[0], "th") + "".join(tr(r, "td") for r in rows[1:]) + "</table>")
