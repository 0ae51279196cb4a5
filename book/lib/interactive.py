"""Interactive figures: ipywidgets sliders in a live kernel, a static twin on the website.

``explore(render, n=[1, 2, 3], temperature=[0.5, 1.0])`` calls ``render(**values)``, which
draws one matplotlib figure and returns it. In a live kernel the reader gets one slider per
parameter; the figure opens on the first value of each, or on those given as ``start``
(``start={"n": 3}``). When ``SEQBOOK_STATIC=1`` (the website build sets it) every combination is drawn
once, saved as an image, and shown with HTML range sliders and a few lines of JavaScript that
swap the image, so the figure still moves on a page without a kernel.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import os
import re
import unicodedata
import uuid
from typing import Callable

import matplotlib.pyplot as plt

MAX_STATIC_FRAMES = 60


def is_static() -> bool:
    """True when figures should be rendered for a page without a kernel."""
    return os.environ.get("SEQBOOK_STATIC") == "1"


def _check_params(params: dict) -> dict[str, list]:
    if not params:
        raise ValueError("expected at least one parameter, e.g. explore(render, n=[1, 2, 3])")
    out = {}
    for name, values in params.items():
        values = list(values) if not isinstance(values, (str, bytes)) else None
        if not values:
            raise ValueError(f"expected a non-empty list of values for parameter {name!r}")
        out[name] = values
    return out


def _start_values(params: dict[str, list], start: dict | None) -> dict[str, object]:
    """The value each slider opens on: ``start[name]`` where given, else the first value."""
    start = {} if start is None else dict(start)
    for name, value in start.items():
        if name not in params:
            raise ValueError(f"expected start values for the parameters {list(params)}, got one for {name!r}")
        if value not in params[name]:
            raise ValueError(f"expected the start value of {name!r} to be one of {params[name]}, got {value!r}")
    return {name: start.get(name, values[0]) for name, values in params.items()}


# operators and relations that a screen reader should hear (Greek letters are looked up by name)
_SYMBOLS = {"times": " × ", "cdot": " · ", "approx": " ≈ ", "leq": " ≤ ", "le": " ≤ ", "geq": " ≥ ",
            "ge": " ≥ ", "neq": " ≠ ", "pm": " ± ", "to": " → ", "rightarrow": " → ", "infty": "∞",
            "ell": "ℓ", "sqrt": "√", "sum": "Σ", "prod": "Π", "partial": "∂", "nabla": "∇"}


def _plain(tex: str) -> str:
    """Mathtext as plain words for alt text: ``$q_\\tau$`` -> ``q_τ``, ``$\\mathrm{d}x$`` -> ``dx``."""
    def command(match):
        name = match.group(1)
        if name in _SYMBOLS:
            return _SYMBOLS[name]
        try:
            return unicodedata.lookup(f"GREEK {'CAPITAL' if name[0].isupper() else 'SMALL'} LETTER {name.upper()}")
        except KeyError:
            return ""                        # \mathrm, \tilde, ...: keep only their argument
    tex = re.sub(r"\\[,;:! ]", " ", tex)     # TeX spacing
    tex = tex.replace("\\|", "‖")          # a norm
    tex = re.sub(r"\\([A-Za-z]+)", command, tex)
    return " ".join(re.sub(r"[{}\\]", "", tex).split())


def _titles(fig) -> str:
    """The figure's own words for what it shows (its suptitle and axes titles), for a screen reader."""
    titles = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) is not None else []
    titles += [ax.get_title(loc=loc) for ax in fig.axes for loc in ("center", "left", "right")]
    titles = [re.sub(r"\$([^$]*)\$", lambda m: _plain(m.group(1)), t) for t in titles]
    return "; ".join(" ".join(t.split()) for t in titles if t.strip())


def _png(fig, dpi: int) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def static_explorer(render: Callable, dpi: int = 100, start: dict | None = None, **params) -> str:
    """HTML (with inline images and JavaScript) for every combination of ``params``, opening on
    ``start`` (see :func:`explore`)."""
    params = _check_params(params)
    first = _start_values(params, start)
    names = list(params)
    combos = list(itertools.product(*params.values()))
    if len(combos) > MAX_STATIC_FRAMES:
        raise ValueError(f"{len(combos)} combinations would make a heavy page; expected at most "
                         f"{MAX_STATIC_FRAMES}: use fewer values per parameter")
    images, alts = [], []
    for combo in combos:
        fig = render(**dict(zip(names, combo)))
        titles = _titles(fig) or getattr(render, "__name__", "figure")
        values = ", ".join(f"{n} = {v}" for n, v in zip(names, combo) if f"{n} = {v}" not in titles)
        alts.append(f"{titles} ({values})" if values else titles)
        images.append(_png(fig, dpi))
    uid = "explore-" + uuid.uuid4().hex[:8]
    sizes = [len(params[n]) for n in names]
    labels = [[str(v) for v in params[n]] for n in names]
    at = [params[n].index(first[n]) for n in names]
    controls = "".join(
        f'<label style="margin-right:1.5em">{html.escape(n)} = <b id="{uid}-v{k}">{html.escape(labels[k][at[k]])}</b> '
        f'<input type="range" min="0" max="{sizes[k] - 1}" value="{at[k]}" step="1" id="{uid}-s{k}" '
        f'style="vertical-align:middle"></label>'
        for k, n in enumerate(names))
    shown = combos.index(tuple(first[n] for n in names))
    script = f"""
<script>
(function() {{
  var imgs = {json.dumps(images)}, alts = {json.dumps(alts)};
  var sizes = {json.dumps(sizes)}, labels = {json.dumps(labels)};
  function show() {{
    var index = 0;
    for (var k = 0; k < sizes.length; k++) {{
      var v = parseInt(document.getElementById("{uid}-s" + k).value);
      document.getElementById("{uid}-v" + k).textContent = labels[k][v];
      index = index * sizes[k] + v;
    }}
    var img = document.getElementById("{uid}-img");
    img.src = "data:image/png;base64," + imgs[index];
    img.alt = alts[index];
  }}
  for (var k = 0; k < sizes.length; k++) {{
    document.getElementById("{uid}-s" + k).addEventListener("input", show);
  }}
}})();
</script>"""
    return (f'<div class="seqbook-explorer" id="{uid}"><div>{controls}</div>'
            f'<img id="{uid}-img" src="data:image/png;base64,{images[shown]}" '
            f'alt="{html.escape(alts[shown])}" style="max-width:100%"></div>'
            + script)


def live_explorer(render: Callable, start: dict | None = None, **params):
    """An ipywidgets control per parameter, redrawing on change, opening on ``start`` (see
    :func:`explore`): a selection slider for values with an order (numbers), a drop-down menu for
    names (every value a string)."""
    import ipywidgets as widgets
    from IPython.display import display

    params = _check_params(params)
    first = _start_values(params, start)
    out = widgets.Output()

    def control(name, values):
        if all(isinstance(v, str) for v in values):
            return widgets.Dropdown(options=values, value=first[name], description=name)
        return widgets.SelectionSlider(options=values, value=first[name], description=name,
                                       continuous_update=False)

    sliders = {n: control(n, v) for n, v in params.items()}

    def redraw(_=None):
        with out:
            out.clear_output(wait=True)
            fig = render(**{n: s.value for n, s in sliders.items()})
            display(fig)
            plt.close(fig)

    for s in sliders.values():
        s.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(sliders.values())), out])


def explore(render: Callable, start: dict | None = None, **params):
    """Show ``render`` with one control per parameter: live widgets, or the static twin.

    The figure opens on the first value of every parameter, or on ``start[name]`` for the
    parameters ``start`` names (a parameter cannot itself be called ``start``)."""
    from IPython.display import HTML, display

    if is_static():
        display(HTML(static_explorer(render, start=start, **params)))
    else:
        display(live_explorer(render, start=start, **params))
