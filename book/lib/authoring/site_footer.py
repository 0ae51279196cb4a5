"""A Sphinx extension that completes the website's footer, ``html.extra_footer`` in ``_config.yml``.

The footer names the licences, the book's version and its repository. Its text in ``_config.yml``
says ``{version}``, ``{repository_url}`` and ``{repository_branch}`` where those go; this extension
fills them in when the site is built, from ``seqbook.__version__`` and from ``repository.url`` and
``repository.branch`` in the same file, so that neither the version nor the address is written
twice. Jupyter Book loads it through ``sphinx.extra_extensions``.
"""

from __future__ import annotations

import re

from .. import __version__

PLACEHOLDERS = ("version", "repository_url", "repository_branch")


def render(template: str, **values: str) -> str:
    """``template`` with each ``{name}`` replaced by ``values[name]``. ValueError on a placeholder
    that is not one of :data:`PLACEHOLDERS`, or one without a value."""
    unknown = sorted(set(re.findall(r"\{(\w+)\}", template)) - set(values))
    if unknown:
        raise ValueError(f"html.extra_footer in _config.yml names {unknown}; expected only "
                         + ", ".join("{%s}" % name for name in PLACEHOLDERS))
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


def fill_footer(app, config) -> None:
    options = config.html_theme_options
    if not options.get("extra_footer"):
        return
    values = {"version": __version__,
              "repository_url": options.get("repository_url", "").rstrip("/"),
              "repository_branch": options.get("repository_branch", "main")}
    options["extra_footer"] = render(options["extra_footer"], **values)


def setup(app):
    app.connect("config-inited", fill_footer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
