"""Text alternatives for the figures that the chapters' code cells draw, in both languages.

myst-nb gives an image output no description of its own: a screen reader, or a reader whose images
do not load, gets the file's name. So each cell that draws a figure carries a description in its
metadata, where myst-nb looks for image options::

    "metadata": {"mystnb": {"image": {"alt": "Perplexity against the order n: ..."}}}

The translation catalogues hold each description as one unit, keyed ``<cell id>/alt`` (see
:mod:`seqbook.authoring.translate`). The Chinese notebooks keep the English metadata, because the
execution cache's key includes every code cell's metadata; instead, this Sphinx extension swaps in
the translation while a page is read. The Chinese build's configuration maps each English description
to its translation in ``seqbook_alt_text``.

The extension also warns about an image in a notebook page that has no description; the website
is built with warnings as errors, so a new figure without one fails the build.
"""

from __future__ import annotations

KEY_SUFFIX = "/alt"


def cell_alt(cell) -> str | None:
    """The description stored in a code cell's metadata, or None."""
    return (cell.get("metadata", {}).get("mystnb", {}).get("image", {}) or {}).get("alt")


def set_cell_alt(cell, text: str) -> None:
    """Store ``text`` as the description of the figure(s) that ``cell`` draws."""
    cell.setdefault("metadata", {}).setdefault("mystnb", {}).setdefault("image", {})["alt"] = text


def describe(app, doctree) -> None:
    """On each image of a page: put the translation in place, or warn that a description is missing."""
    from docutils import nodes          # here, so that the catalogue tools need no Sphinx
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    translations = app.config.seqbook_alt_text or {}
    from_notebook = str(app.env.doc2path(app.env.docname)).endswith(".ipynb")
    for image in doctree.findall(nodes.image):
        alt = image.get("alt")
        if alt:
            image["alt"] = translations.get(alt, alt)
        elif from_notebook:
            logger.warning("a figure has no text alternative: give the code cell that draws it (cell %s, "
                           'counting from 0) the metadata {"mystnb": {"image": {"alt": "<what the figure shows>"}}}',
                           _cell_index(image), location=(app.env.docname, None))


def _cell_index(node) -> str:
    """The index of the notebook cell whose output holds ``node`` (myst-nb records it on the cell's container)."""
    while node is not None:
        if node.get("cell_index") is not None:
            return str(node["cell_index"])
        node = node.parent
    return "?"


def setup(app):
    app.add_config_value("seqbook_alt_text", {}, "env")
    app.connect("doctree-read", describe)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
