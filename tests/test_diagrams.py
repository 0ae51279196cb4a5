"""The cell diagrams of chapter 3 draw every part they are meant to show, in the book's notation."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Circle, FancyBboxPatch  # noqa: E402

from seqbook.diagrams import diagram_labels, gru_cell_diagram, lstm_cell_diagram  # noqa: E402


def _parts(fig):
    ax = fig.axes[0]
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    nodes = [p for p in ax.patches if isinstance(p, Circle)]
    return ax, boxes, nodes


def test_lstm_diagram_shows_gates_candidate_and_cell_path():
    fig = lstm_cell_diagram()
    assert isinstance(fig, Figure)
    labels = diagram_labels(fig)
    for name in (r"$c_{t-1}$", r"$c_t$", r"$h_{t-1}$", r"$h_t$", r"$x_t$",
                 r"$f_t$", r"$i_t$", r"$o_t$", r"$\tilde c_t$"):
        assert labels.count(name) == 1, (name, labels)
    assert not any("C_" in label or "g_t" in label for label in labels)   # chapter 3's notation
    ax, boxes, nodes = _parts(fig)
    assert len(boxes) == 4                                    # i, f, candidate, o
    assert labels.count("σ") == 3 and labels.count("tanh") == 2   # 3 gates; candidate and tanh(c_t)
    assert labels.count("⊙") == 3 and labels.count("+") == 1
    assert len(nodes) == 5                                    # ⊙ ⊙ ⊙ + tanh
    assert "LSTM" in ax.get_title()
    plt.close(fig)


def test_gru_diagram_shows_reset_update_and_candidate():
    fig = gru_cell_diagram()
    labels = diagram_labels(fig)
    for name in (r"$h_{t-1}$", r"$h_t$", r"$x_t$", r"$r_t$", r"$z_t$", r"$n_t$"):
        assert labels.count(name) == 1, (name, labels)
    assert any(r"r_t\odot(W_{hn}h_{t-1}+b_{hn})" in label for label in labels)  # PyTorch's form
    ax, boxes, nodes = _parts(fig)
    assert len(boxes) == 3                                    # r, z, candidate
    assert labels.count("σ") == 2 and labels.count("tanh") == 1
    assert labels.count("⊙") == 2 and labels.count("+") == 1 and labels.count("1−") == 1
    assert len(nodes) == 4
    assert "GRU" in ax.get_title()
    plt.close(fig)


@pytest.mark.parametrize("draw", [lstm_cell_diagram, gru_cell_diagram])
def test_every_part_lies_inside_the_axes(draw):
    fig = draw()
    ax = fig.axes[0]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    for text in ax.texts:
        x, y = text.get_position()
        assert x0 <= x <= x1 and y0 <= y <= y1, text.get_text()
    for patch in ax.patches:
        box = patch.get_extents().transformed(ax.transData.inverted())
        assert x0 - 1e-6 <= box.x0 and box.x1 <= x1 + 1e-6, patch
        assert y0 - 1e-6 <= box.y0 and box.y1 <= y1 + 1e-6, patch
    plt.close(fig)


def test_labels_of_something_else_is_a_clear_error():
    with pytest.raises(TypeError, match="expected a matplotlib Figure"):
        diagram_labels("not a figure")


# -- chapter 4: the encoder-decoder in training and at inference -------------------------------
def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_seq2seq_diagram_shows_teacher_forcing_and_inference():
    from matplotlib.patches import FancyArrowPatch

    from seqbook.diagrams import seq2seq_diagram

    fig = seq2seq_diagram()
    training, inference = fig.axes
    assert "teacher forcing" in training.get_title(loc="left")
    assert "inference" in inference.get_title(loc="left")
    for ax in (training, inference):
        labels = _texts(ax)
        boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
        assert labels.count("enc") == 4 and labels.count("dec") == 5 and len(boxes) == 9
        assert [w for w in labels if w in (".", "eats", "cat", "the")][:4] == [".", "eats", "cat", "the"]
        assert labels.count("<bos>") == 1 and labels.count("<eos>") == 1
        assert labels.count(r"$s_0$") == 1                       # the one path from source to target
    train_labels, infer_labels = _texts(training), _texts(inference)
    # training reads the reference (tgt_in) and is scored at every position
    assert train_labels.count(r"$-\log p$") == 5 and "chien" not in train_labels
    # inference reads its own outputs: the wrong word it wrote is the next step's input
    assert infer_labels.count("chien") == 2 and r"$-\log p$" not in infer_labels
    fed_back = [p for p in inference.patches if isinstance(p, FancyArrowPatch)]
    straight = [p for p in training.patches if isinstance(p, FancyArrowPatch)]
    assert len(fed_back) == len(straight) + 4                   # one loop per decoder step but the last
    plt.close(fig)


def test_seq2seq_diagram_parts_lie_inside_their_axes():
    from seqbook.diagrams import seq2seq_diagram

    fig = seq2seq_diagram()
    for ax in fig.axes:
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        for text in ax.texts:
            x, y = text.get_position()
            assert x0 <= x <= x1 and y0 <= y <= y1, text.get_text()
        for patch in ax.patches:
            box = patch.get_extents().transformed(ax.transData.inverted())
            assert x0 - 1e-6 <= box.x0 and box.x1 <= x1 + 1e-6, patch
            assert y0 - 1e-6 <= box.y0 and box.y1 <= y1 + 1e-6, patch
    plt.close(fig)


# -- chapter 3: the LSTM unrolled in time --------------------------------------------------------
@pytest.mark.parametrize("steps", [2, 3, 5])
def test_unrolled_lstm_shows_one_product_and_one_sum_per_step(steps):
    from seqbook.diagrams import lstm_unrolled_diagram

    fig = lstm_unrolled_diagram(steps)
    ax, boxes, nodes = _parts(fig)
    labels = diagram_labels(fig)
    assert labels.count("⊙") == labels.count("+") == steps and len(nodes) == 2 * steps
    assert len(boxes) == 3 * steps                      # the step, its forget gate, its write
    assert sum(label.startswith("step ") for label in labels) == steps
    assert "step t" in labels and r"$c_{t-1}$" in labels and r"$x_{t}$" in labels
    assert sum(label.startswith("$f_{") for label in labels) == steps
    # one more cell state than steps: the one before the first step, then one after each
    assert sum(label.startswith("$c_{") for label in labels) == steps + 1
    assert f"{steps} steps" in ax.get_title()
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    for patch in ax.patches:
        box = patch.get_extents().transformed(ax.transData.inverted())
        assert x0 - 1e-6 <= box.x0 and box.x1 <= x1 + 1e-6 and y0 - 1e-6 <= box.y0 and box.y1 <= y1 + 1e-6
    plt.close(fig)


def test_unrolled_lstm_refuses_a_bad_number_of_steps():
    from seqbook.diagrams import lstm_unrolled_diagram

    for bad in (1, 6, 2.5, True):
        with pytest.raises(ValueError, match="between 2 and 5 steps"):
            lstm_unrolled_diagram(bad)
