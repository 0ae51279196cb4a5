"""Plotting helpers and the live/static interactive figure."""

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from seqbook import interactive  # noqa: E402
from seqbook.plotting import animate, heatmap, loss_curves  # noqa: E402


def teardown_function():
    plt.close("all")


def test_heatmap_labels_and_values():
    ax = heatmap(np.arange(6).reshape(2, 3), row_labels=["a", "b"], col_labels=["x", "y", "z"],
                 annotate=True, title="counts")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y", "z"]
    assert ax.get_title() == "counts"
    assert sorted(t.get_text() for t in ax.texts) == ["0.00", "1.00", "2.00", "3.00", "4.00", "5.00"]


def test_heatmap_colorbar_label():
    ax = heatmap(np.eye(2), colorbar_label="p(next | previous)")
    bar_axes = [a for a in ax.figure.axes if a is not ax]
    assert len(bar_axes) == 1 and bar_axes[0].get_ylabel() == "p(next | previous)"
    with pytest.raises(ValueError, match="colorbar_label needs colorbar=True"):
        heatmap(np.eye(2), colorbar=False, colorbar_label="p")


def test_heatmap_bad_input():
    with pytest.raises(ValueError, match="2-d matrix"):
        heatmap(np.zeros(3))
    with pytest.raises(ValueError, match="expected 2 row labels, got 1"):
        heatmap(np.zeros((2, 2)), row_labels=["a"])


def test_loss_curves():
    ax = loss_curves({"train": [3, 2, 1], "valid": [3, 2.5, 2.2]}, logy=True)
    assert len(ax.lines) == 2 and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["train", "valid"]
    with pytest.raises(ValueError, match="at least one named curve"):
        loss_curves({})


def test_animate_makes_a_player_and_closes_the_figure():
    fig, ax = plt.subplots()
    (line,) = ax.plot([0, 1], [0, 0])
    html = animate(fig, lambda k: line.set_ydata([0, k]), frames=3).data
    assert "<input" in html and "anim" in html.lower()
    assert len(re.findall(r"data:image/png;base64", html)) >= 3 or html.count("frames[") >= 3
    assert not plt.fignum_exists(fig.number)


def render(n, t):
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.set_title(f"n={n} t={t}")
    return fig


def test_static_explorer_has_one_image_per_combination():
    html = interactive.static_explorer(render, n=[1, 2, 3], t=[0.5, 1.0])
    assert html.count('type="range"') == 2
    images = re.search(r"var imgs = (\[.*?\])", html).group(1)
    assert images.count('"') == 2 * 6
    assert 'max="2"' in html and 'max="1"' in html
    assert plt.get_fignums() == []  # every frame's figure was closed


def test_static_explorer_limits_and_errors():
    with pytest.raises(ValueError, match="at least one parameter"):
        interactive.static_explorer(render)
    with pytest.raises(ValueError, match="non-empty list of values for parameter 'n'"):
        interactive.static_explorer(render, n=[], t=[1])
    with pytest.raises(ValueError, match="at most 60"):
        interactive.static_explorer(render, n=range(10), t=range(7))


def test_explore_switches_on_environment(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setenv("SEQBOOK_STATIC", "1")
    interactive.explore(render, n=[1, 2], t=[1])
    assert "seqbook-explorer" in shown[-1].data
    monkeypatch.setenv("SEQBOOK_STATIC", "0")
    interactive.explore(render, n=[1, 2], t=[1])
    box = shown[-1]
    sliders = box.children[0].children
    assert [s.description for s in sliders] == ["n", "t"]
    sliders[0].value = 2  # moving a slider redraws without error
    assert plt.get_fignums() == []


def test_html_table():
    from seqbook.plotting import html_table

    t = html_table([("model", "ppl"), ("RNN", "3.63"), ("a < b", 1)]).data
    assert t.count("<tr>") == 3 and t.count("<th") == 2
    assert '<td style="text-align:right">3.63</td>' in t and "a &lt; b" in t
    with pytest.raises(ValueError, match="equal length"):
        html_table([("a", "b"), ("c",)])
    with pytest.raises(ValueError, match="one 'l' or 'r' per column"):
        html_table([("a", "b")], align="lrr")


def test_static_explorer_opens_on_the_start_values():
    html = interactive.static_explorer(render, n=[1, 2, 3], t=[0.5, 1.0], start={"n": 3, "t": 0.5})
    images = json_images(html)
    assert 'max="2" value="2"' in html and 'max="1" value="0"' in html
    shown = re.search(r'id="explore-\w+-img" src="data:image/png;base64,([^"]+)"', html).group(1)
    assert shown == images[2 * 2 + 0] and shown != images[0]     # combination (n=3, t=0.5)
    assert re.search(r'<b id="explore-\w+-v0">3</b>', html)


def json_images(html):
    return js_list(html, "imgs")


def js_list(html, name):
    """The JavaScript list ``name`` that the static explorer writes into its page."""
    import json
    return json.loads(re.search(rf"\b{name} = (\[.*?\])[,;]", html).group(1))


def test_explorer_start_values_must_be_among_the_values():
    with pytest.raises(ValueError, match=r"one of \[1, 2, 3\], got 5"):
        interactive.static_explorer(render, n=[1, 2, 3], t=[1], start={"n": 5})
    with pytest.raises(ValueError, match="got one for 'tau'"):
        interactive.static_explorer(render, n=[1, 2, 3], t=[1], start={"tau": 1})


def test_live_explorer_opens_on_the_start_values():
    calls = []

    def record(n, t):
        calls.append((n, t))
        return render(n, t)

    box = interactive.live_explorer(record, n=[1, 2, 3], t=[0.5, 1.0], start={"t": 1.0})
    assert [s.value for s in box.children[0].children] == [1, 1.0] and calls == [(1, 1.0)]
    assert plt.get_fignums() == []


def test_static_explorer_images_carry_alt_text_from_the_figure_and_values():
    def titled(n, t):
        fig, (left, right) = plt.subplots(1, 2, figsize=(2, 2))
        fig.suptitle(f"samples at n = {n}")
        left.set_title("next-character distribution")
        return fig

    page = interactive.static_explorer(titled, n=[1, 2], t=[0.5, 1.0], start={"n": 2, "t": 1.0})
    shown_alt = re.search(r'id="explore-\w+-img" src="[^"]+" alt="([^"]+)"', page).group(1)
    assert shown_alt == "samples at n = 2; next-character distribution (t = 1.0)"   # n is in the title
    alts = js_list(page, "alts")
    assert len(alts) == 4 and alts[0] == "samples at n = 1; next-character distribution (t = 0.5)"
    assert "img.alt = alts[index]" in page          # moving a slider changes the text with the image
    untitled = interactive.static_explorer(render_untitled, n=[1])
    assert 'alt="render_untitled (n = 1)"' in untitled


def render_untitled(n):
    return plt.figure(figsize=(1, 1))


@pytest.mark.parametrize("title, alt", [
    (r"$q_\tau$(next | ' the '), $\tilde s_i$ at $\Delta = %s$", "q_τ(next | &#x27; the &#x27;), s_i at Δ = 1 (k = 1)"),
    (r"$W_{hh} = %s \times Q$, $\|g\| \leq 1$", "W_hh = 1 × Q, ‖g‖ ≤ 1 (k = 1)"),   # operators and norms kept
])
def test_alt_text_reads_mathtext_as_plain_words(title, alt):
    def titled(k):
        fig = plt.figure(figsize=(1, 1))
        fig.suptitle(title % k)
        return fig

    page = interactive.static_explorer(titled, k=[1])
    assert f'alt="{alt}"' in page


def test_alt_text_does_not_repeat_a_value_the_title_already_gives():
    def titled(k, t):
        fig = plt.figure(figsize=(1, 1))
        fig.suptitle(f"the same for every pos (k = {k})")
        return fig

    page = interactive.static_explorer(titled, k=[3], t=[1])
    assert 'alt="the same for every pos (k = 3) (t = 1)"' in page
    assert 'alt="the same for every pos (k = 3)"' in interactive.static_explorer(lambda k: titled(k, 0), k=[3])
