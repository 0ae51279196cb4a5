"""Interactive figures and progress bars work with ipywidgets 7 (Colab ships 7.7.1 and renders only
7.x) and with the version installed here (8.x for a local Jupyter). Each version runs in its own
interpreter, since one process can import only one of them. ``make setup`` installs 7.7.1 into
.cache/ipywidgets7; without it that case is skipped (the tests download nothing)."""

import os
import subprocess
import sys
from importlib.metadata import version

import pytest

from seqbook.authoring import ROOT

WIDGETS_7 = ROOT / ".cache" / "ipywidgets7"

SCRIPT = r"""
import os
import warnings
warnings.simplefilter("ignore", DeprecationWarning)   # ipykernel 7 deprecates what ipywidgets 7 uses
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import ipywidgets
from tqdm.notebook import tqdm as notebook_bar
import seqbook.progress
from seqbook.interactive import live_explorer

calls = []
def render(n, tau):
    calls.append((n, tau))
    fig, ax = plt.subplots()
    ax.plot([0, n])
    return fig

box = live_explorer(render, n=[1, 2, 3], tau=[0.5, 1.0])
n_slider, tau_slider = box.children[0].children
n_slider.value = 3
tau_slider.value = 1.0
seqbook.progress.tqdm = notebook_bar      # the bar tqdm.auto picks in a notebook
os.environ["SEQBOOK_QUIET"] = "0"
total = sum(seqbook.progress.progress(range(4), desc="counting"))
print("RESULT", ipywidgets.__version__.split(".")[0], type(box).__name__,
      [type(s).__name__ for s in (n_slider, tau_slider)], calls, total)
"""


@pytest.mark.parametrize("which", ["installed", "colab"])
def test_explorer_and_progress_bar_work_with_ipywidgets(which):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    major = version("ipywidgets").split(".")[0]
    if which == "colab":
        if not (WIDGETS_7 / "ipywidgets" / "__init__.py").exists():
            pytest.skip("ipywidgets 7.7.1 is not in .cache/ipywidgets7: `make setup` installs it")
        env["PYTHONPATH"] = str(WIDGETS_7)
        major = "7"
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(l for l in result.stdout.splitlines() if l.startswith("RESULT"))
    # one slider per parameter; drawn once at start and once per move, with the moved values
    assert line == (f"RESULT {major} VBox ['SelectionSlider', 'SelectionSlider'] "
                    "[(1, 0.5), (3, 0.5), (3, 1.0)] 6"), line


def test_a_parameter_of_names_gets_a_menu_and_one_of_numbers_a_slider():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import ipywidgets

    from seqbook.interactive import live_explorer

    calls = []

    def render(kind, layer):
        calls.append((kind, layer))
        fig, ax = plt.subplots()
        ax.plot([0, layer])
        return fig

    box = live_explorer(render, kind=["encoder", "cross"], layer=[1, 2])
    menu, slider = box.children[0].children
    assert isinstance(menu, ipywidgets.Dropdown) and list(menu.options) == ["encoder", "cross"]
    assert isinstance(slider, ipywidgets.SelectionSlider)
    menu.value = "cross"
    assert calls == [("encoder", 1), ("cross", 1)]
