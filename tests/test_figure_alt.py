"""Figures' text alternatives: the Sphinx extension that translates them and warns about a missing
one, and the catalogue unit each description becomes. Fast: nothing is built or executed (the built
pages' <img alt> is checked in test_website.py)."""

import logging
from types import SimpleNamespace

import nbformat
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from seqbook.authoring import book_zh, figure_alt
from seqbook.authoring import translate as tr
from test_translate import book_copy, page


def doctree(*images):
    document = new_document("page", get_default_settings(Parser))
    for image in images:
        document += image
    return document


def app(translations, source):
    return SimpleNamespace(config=SimpleNamespace(seqbook_alt_text=translations),
                           env=SimpleNamespace(docname="book/page", doc2path=lambda name: source))


def test_a_description_is_swapped_for_its_translation_and_an_unknown_one_is_kept():
    known, unknown = nodes.image(uri="a.png", alt="A curve that falls."), nodes.image(uri="b.png", alt="Bars.")
    figure_alt.describe(app({"A curve that falls.": "一条下降的曲线。"}, "book/ch.ipynb"), doctree(known, unknown))
    assert known["alt"] == "一条下降的曲线。" and unknown["alt"] == "Bars."


def test_a_notebook_figure_without_a_description_is_a_warning(caplog):
    bare = nodes.image(uri="_images/0123.png")
    with caplog.at_level(logging.WARNING):
        figure_alt.describe(app({}, "book/ch.ipynb"), doctree(bare))
    assert "no text alternative" in caplog.text and '"alt"' in caplog.text and "cell ?" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):              # a markdown page's images are not code cells' figures
        figure_alt.describe(app({}, "book/intro.md"), doctree(nodes.image(uri="logo.png")))
    assert "no text alternative" not in caplog.text


def test_a_description_in_a_cells_metadata_is_a_unit_to_translate(tmp_path):
    root = book_copy(tmp_path)
    ch02 = page(root, "ch02_rnn")
    nb = nbformat.read(ch02.path, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and not figure_alt.cell_alt(c))
    english = "Two curves against the step: the training loss falls below the validation loss."
    figure_alt.set_cell_alt(cell, english)
    nbformat.write(nb, ch02.path)
    key = cell.id + figure_alt.KEY_SUFFIX
    assert tr.Unit(key, english) in tr.units(ch02, root) and key in tr.page_status(ch02, root).missing
    chinese = "两条随步数变化的曲线：训练损失降到验证损失之下。"
    stored, refused = tr.import_translations([tr.Translation("ch02_rnn", key, tr.source_hash(english), chinese)], root)
    assert (stored, refused) == (1, [])
    assert book_zh.alt_translations(root)[english] == chinese
    assert book_zh.config_zh(root, {}, tmp_path / "cache")["sphinx"]["config"]["seqbook_alt_text"][english] == chinese


def test_the_website_build_loads_the_extension_and_every_chapter_describes_its_figures():
    import yaml

    from seqbook.authoring import ROOT, chapters
    for path in chapters():
        nb = nbformat.read(path, as_version=4)
        assert sum(1 for c in nb.cells if c.cell_type == "code" and figure_alt.cell_alt(c)) >= 4, path.name
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "seqbook.authoring.figure_alt" in config["sphinx"]["extra_extensions"]
