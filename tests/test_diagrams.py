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
    # x_t meets the h_{t-1} bus in a junction dot, not a bare T
    dots = [(line.get_xdata()[0], line.get_ydata()[0]) for line in ax.get_lines()
            if line.get_marker() == "o"]
    assert dots == [(1.5, 0.9)], dots
    plt.close(fig)


def test_gru_diagram_shows_reset_update_and_candidate():
    fig = gru_cell_diagram()
    labels = diagram_labels(fig)
    for name in (r"$h_{t-1}$", r"$h_t$", r"$x_t$", r"$r_t$", r"$z_t$", r"$n_t$"):
        assert labels.count(name) == 1, (name, labels)
    assert any(r"r_t\odot(W_{hn}h_{t-1}+b_{hn})" in label for label in labels)  # PyTorch's form
    ax, boxes, nodes = _parts(fig)
    assert len(boxes) == 4                                    # r, z, candidate, W_hn h + b_hn
    assert labels.count("σ") == 2 and labels.count("tanh") == 1
    assert labels.count("⊙") == 3 and labels.count("+") == 1 and labels.count("1−") == 1
    assert len(nodes) == 5
    assert "GRU" in ax.get_title()
    # the reset gate is a ⊙ node on W_hn h_{t-1} + b_hn, left of the tanh box and right of r_t's
    at = {t.get_text(): t.get_position() for t in ax.texts}
    sigma_x = sorted(t.get_position()[0] for t in ax.texts if t.get_text() == "σ")
    tanh_x, tanh_y = at["tanh"]
    linear_x, linear_y = at[r"$W_{hn}h_{t-1}+b_{hn}$"]
    reset = [n.center for n in nodes if sigma_x[-1] < n.center[0] < tanh_x]
    assert len(reset) == 1 and abs(reset[0][1] - tanh_y) < 1e-9        # on the tanh's row
    assert abs(reset[0][0] - linear_x) < 1e-9 and linear_y < reset[0][1]   # fed from below
    plt.close(fig)


def assert_inside_the_axes(ax):
    """Every label and every box of a diagram lies inside its axes' limits."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    for text in ax.texts:
        x, y = text.get_position()
        assert x0 <= x <= x1 and y0 <= y <= y1, text.get_text()
    for patch in ax.patches:
        box = patch.get_extents().transformed(ax.transData.inverted())
        assert x0 - 1e-6 <= box.x0 and box.x1 <= x1 + 1e-6, patch
        assert y0 - 1e-6 <= box.y0 and box.y1 <= y1 + 1e-6, patch


@pytest.mark.parametrize("draw", [lstm_cell_diagram, gru_cell_diagram])
def test_every_part_lies_inside_the_axes(draw):
    fig = draw()
    ax = fig.axes[0]
    assert_inside_the_axes(ax)
    plt.close(fig)


def test_labels_of_something_else_is_a_clear_error():
    with pytest.raises(TypeError, match="expected a matplotlib Figure"):
        diagram_labels("not a figure")


# -- chapter 2: the unrolled RNN and its backward pass ----------------------------------------
from matplotlib.patches import FancyArrowPatch  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from seqbook.diagrams import unrolled_rnn_diagram  # noqa: E402


def _red_arrows(fig):
    red = to_rgba("C3")
    return [p for p in fig.axes[0].patches
            if isinstance(p, FancyArrowPatch) and p.get_edgecolor() == red]


@pytest.mark.parametrize("steps", [1, 4, 6])
def test_unrolled_rnn_shows_every_step_with_the_same_weights(steps):
    fig = unrolled_rnn_diagram(steps)
    labels = diagram_labels(fig)
    for t in range(1, steps + 1):
        for name in (f"$x_{t}$", f"$h_{t}$", f"$L_{t}$"):
            assert labels.count(name) == 1, (name, labels)
    assert labels.count("$h_0$") == 1
    # one copy of each weight matrix per step: the sharing the figure is about
    for weight in ("$W_{xh}$", "$W_{hh}$", "$W_{hq}$"):
        assert labels.count(weight) == steps, (weight, labels)
    assert not _red_arrows(fig) and not any("J_" in label for label in labels)
    assert len([p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]) == 3 * steps + 1
    plt.close(fig)


def test_unrolled_rnn_backward_pass_multiplies_by_one_jacobian_per_step():
    fig = unrolled_rnn_diagram(4, backward=True)
    labels = diagram_labels(fig)
    assert [label for label in labels if label.startswith("$J_")] == ["$J_1$", "$J_2$", "$J_3$", "$J_4$"]
    assert len(_red_arrows(fig)) == 4 + 4          # down from each loss, back across each step
    assert any(r"\mathrm{diag}(\phi'(a_t))\,W_{hh}^\top" in label for label in labels)
    plt.close(fig)


def test_unrolled_rnn_truncation_stops_the_gradient_not_the_state():
    fig = unrolled_rnn_diagram(4, backward=True, detach_after=2)
    labels = diagram_labels(fig)
    assert "detach" in labels and "$J_3$" not in labels           # nothing flows back into h_2
    assert {"$J_1$", "$J_2$", "$J_4$"} <= set(labels)
    assert len(_red_arrows(fig)) == 4 + 3
    assert labels.count("$W_{hh}$") == 4                            # the state still flows forward
    plt.close(fig)


@pytest.mark.parametrize("steps, total", [(1, "L = L_1$"), (2, "L = L_1 + L_2$"),
                                          (4, r"L = L_1 + \dots + L_4$")])
def test_unrolled_rnn_footnote_sums_the_losses_of_the_steps_drawn(steps, total):
    fig = unrolled_rnn_diagram(steps)
    footnote = [label for label in diagram_labels(fig) if "the loss of predicting" in label]
    assert len(footnote) == 1 and total in footnote[0] and f"$T = {steps}$" in footnote[0], footnote
    plt.close(fig)


def test_unrolled_rnn_detach_line_does_not_cross_a_weight_label():
    fig = unrolled_rnn_diagram(4, backward=True, detach_after=2)
    ax = fig.axes[0]
    (cut,) = {x for line in ax.lines for x in line.get_xdata()}
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for text in ax.texts:
        if text.get_text() == "$W_{hh}$":
            box = text.get_window_extent(renderer).transformed(ax.transData.inverted())
            assert not box.x0 <= cut <= box.x1, (text.get_position(), cut)
    plt.close(fig)


def test_unrolled_rnn_parts_lie_inside_the_axes():
    for kwargs in ({}, {"backward": True, "detach_after": 1}):
        fig = unrolled_rnn_diagram(5, **kwargs)
        ax = fig.axes[0]
        assert_inside_the_axes(ax)
        plt.close(fig)


@pytest.mark.parametrize("kwargs, message", [
    ({"steps": 0}, "steps"),
    ({"steps": 9}, "at most 8 steps"),
    ({"steps": 4, "detach_after": 4}, "between 1 and 3"),
    ({"steps": 4, "detach_after": 0}, "detach_after"),
])
def test_unrolled_rnn_bad_arguments_say_what_was_expected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        unrolled_rnn_diagram(**kwargs)


# -- chapters 5 and 6 ----------------------------------------------------------------------------
from seqbook.diagrams import attention_decoder_diagram, transformer_diagram  # noqa: E402


def _inside(fig):
    """Every text and patch of the diagram lies inside its axes."""
    ax = fig.axes[0]
    assert_inside_the_axes(ax)


def test_attention_decoder_diagram_shows_both_orders_with_shapes():
    fig = attention_decoder_diagram()
    labels = diagram_labels(fig)
    titles = [t for t in labels if "queries" in t]
    assert len(titles) == 2 and "previous state" in titles[0] and "new state" in titles[1]
    for name in (r"$s_{i-1}$", r"$s_i$", r"$e_{i\cdot}$", r"$a_{i\cdot}$", r"$c_i$ $(d_h)$",
                 r"annotations $h_1 \dots h_n$", r"$E\,y_{i-1}$", r"$p(y_i)$ ($n_{vocab}$)"):
        assert labels.count(name) == 2, (name, labels)          # once in each panel
    assert labels.count(r"$\tilde s_i$") == 1                     # Luong's attentional vector only
    assert any("input feeding" in t and r"\tilde s_i$ feeds" in t for t in labels)
    assert labels.count("$(n, d_h)$") == 2 and labels.count("$(n)$") == 4 and labels.count("$(d_h)$") >= 4
    assert labels.count("score") == 2 and labels.count("softmax") == 2 and labels.count("GRU") == 2
    assert labels.count("keys") == 2 and labels.count("values") == 2 and labels.count("query") == 2
    # Bahdanau's query leaves s_{i-1} before the GRU; Luong's leaves s_i after it
    ax = fig.axes[0]
    at = {t.get_text(): t.get_position() for t in ax.texts}

    def top_first(text):                        # positions of a label, Bahdanau's panel first
        return sorted((t.get_position() for t in ax.texts if t.get_text() == text), key=lambda p: -p[1])

    (gru_b, gru_l), (query_b, query_l) = top_first("GRU"), top_first("query")
    assert query_b[0] < gru_b[0] and query_l[0] > gru_l[0]
    assert at[r"$\tilde s_i$"][0] > gru_l[0] and at[r"$\tilde s_i$"][1] < gru_b[1]   # in Luong's panel
    _inside(fig)
    plt.close(fig)


def test_transformer_diagram_shows_the_layers_masks_memory_and_norm_order():
    fig = transformer_diagram()
    labels = diagram_labels(fig)
    assert labels.count("Add & LayerNorm") == 5                   # 2 in the encoder layer, 3 in the decoder's
    assert labels.count("feed-forward network") == 2
    assert labels.count("N ×") == 2
    encoder_attention = [t for t in labels if t.startswith("multi-head self-attention")]
    causal = [t for t in labels if t.startswith("masked multi-head\nself-attention")]
    cross = [t for t in labels if t.startswith("multi-head cross-attention")]
    assert len(encoder_attention) == len(causal) == len(cross) == 1
    assert "mask: source padding" in encoder_attention[0] and "mask: causal" in causal[0]
    assert "the memory" in cross[0] and "mask: source padding" in cross[0]
    assert any(t.startswith("memory") and "d_{model}" in t for t in labels)
    assert any(r"\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))" in t for t in labels)   # post-norm, stated
    assert labels.count(r"embedding $\times\sqrt{d_{model}}$") == 2 and labels.count("positions") == 2
    assert any("(m, $n_{vocab}$)" in t for t in labels)
    assert "post-norm" in fig.axes[0].get_title()
    # the cross-attention sits between the decoder's self-attention and its feed-forward network
    ax = fig.axes[0]
    y = {t.get_text(): t.get_position()[1] for t in ax.texts}
    ffn_y = sorted(t.get_position()[1] for t in ax.texts if t.get_text() == "feed-forward network")
    assert y[causal[0]] < y[cross[0]] < ffn_y[-1]
    _inside(fig)
    plt.close(fig)


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
    # one loop per decoder step but the last, in two pieces: it passes behind the state arrow
    assert len(fed_back) == len(straight) + 2 * 4
    # the feedback loops are drawn dark enough to follow (grey 0.3 or darker, at least 1.2 wide)
    from matplotlib.colors import to_rgb
    plain_colours = {to_rgb(q.get_edgecolor()) for q in straight}
    loops = [p for p in fed_back if to_rgb(p.get_edgecolor()) not in plain_colours]
    assert len(loops) == 2 * 4
    assert all(max(to_rgb(p.get_edgecolor())) <= 0.3 + 1e-9 and p.get_linewidth() >= 1.2
               for p in loops)
    plt.close(fig)


def test_seq2seq_diagram_parts_lie_inside_their_axes():
    from seqbook.diagrams import seq2seq_diagram

    fig = seq2seq_diagram()
    for ax in fig.axes:
        assert_inside_the_axes(ax)
    plt.close(fig)


# -- chapter 3: the LSTM unrolled in time --------------------------------------------------------
@pytest.mark.parametrize("steps", [2, 3, 5])
def test_unrolled_lstm_shows_one_product_and_one_sum_per_step(steps):
    from seqbook.diagrams import lstm_unrolled_diagram

    fig = lstm_unrolled_diagram(steps)
    ax, boxes, nodes = _parts(fig)
    labels = diagram_labels(fig)
    # per step: the forget product and the write on the cell, tanh(c) and o ⊙ on the output
    assert labels.count("+") == labels.count("tanh") == steps and labels.count("⊙") == 2 * steps
    assert len(nodes) == 4 * steps
    assert len(boxes) == 4 * steps               # the step, its forget gate, its write, its o gate
    assert sum(label.startswith("step ") for label in labels) == steps
    assert "step t" in labels and r"$c_{t-1}$" in labels and r"$x_{t}$" in labels
    assert sum(label.startswith("$f_{") for label in labels) == steps
    # one more cell state than steps: the one before the first step, then one after each
    assert sum(label.startswith("$c_{") for label in labels) == steps + 1
    # and so many hidden states, each its own label: h is recomputed in every step
    assert sum(label.startswith("$h_{") for label in labels) == steps + 1
    assert sum(label.startswith("$o_{") for label in labels) == steps
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


# -- chapter 4: the beam-search tree --------------------------------------------------------------
def _toy_beam():
    """A hand-made search: <bos>=0, <eos>=1; each level's prefixes in the search's own order
    (best first), which interleaves the parents' children."""
    steps = [[(0,)], [(0, 2), (0, 3), (0, 4)], [(0, 3, 5), (0, 2, 6), (0, 3, 7)],
             [(0, 2, 6, 8), (0, 3, 5, 9)]]
    finished = [(0, 3, 5, 9, 1), (0, 2, 6, 1), (0, 3, 7, 1)]
    score = {p: -0.5 * len(p) - 0.1 * p[-1] for level in steps for p in level}
    score.update({p: -0.4 * len(p) for p in finished})
    return steps, finished, score


def test_beam_tree_layout_never_crosses_edges_and_groups_siblings():
    from seqbook.diagrams import beam_tree_layout

    steps, finished, score = _toy_beam()
    place = beam_tree_layout(steps, finished, score.__getitem__)
    assert set(place) == {p for level in steps for p in level} | set(finished)
    by_column = {}
    for p, (column, row) in place.items():
        assert column == len(p) - 1
        by_column.setdefault(column, []).append((row, p))
    for column, nodes in by_column.items():
        rows = sorted(row for row, _ in nodes)
        assert rows == list(range(len(nodes)))                 # packed from the top
        ordered = [p for _, p in sorted(nodes)]
        if column == 0:
            continue
        parents = [place[p[:-1]][1] for p in ordered]
        assert parents == sorted(parents)                      # no two edges cross
        for a, b in zip(ordered, ordered[1:]):                 # siblings: best first
            if a[:-1] == b[:-1]:
                assert score[a] >= score[b]
    # the search's own order would cross: (0, 3, 5) came before (0, 2, 6)
    assert place[(0, 2, 6)][1] < place[(0, 3, 5)][1]


def test_beam_tree_layout_refuses_an_orphan():
    from seqbook.diagrams import beam_tree_layout

    with pytest.raises(ValueError, match="parent"):
        beam_tree_layout([[(0,)]], [(0, 2, 1)], lambda p: 0.0)


def test_beam_tree_diagram_shows_punctuation_scores_and_a_legend():
    from seqbook.diagrams import beam_tree_diagram

    steps, finished, score = _toy_beam()
    names = {0: "<bos>", 1: "<eos>", 2: "le", 3: ".", 4: "un", 5: "chat", 6: ",", 7: "la",
             8: "x", 9: "noir"}
    fig = beam_tree_diagram(steps, finished, finished[0], score.__getitem__, names.__getitem__,
                            "a toy beam")
    ax = fig.axes[0]
    texts = [t for t in ax.texts]
    shown = [t.get_text() for t in texts]
    assert "'.'" in shown and "','" in shown and "." not in shown    # punctuation stays visible
    assert shown.count("<eos>") == len(finished)
    assert all(t.get_fontsize() >= 8 for t in texts)
    # every label sits on a white frame above every link, so that no link crosses its letters
    links = [line.get_zorder() for line in ax.get_lines() if len(line.get_xdata()) == 2]
    assert links and all(t.get_bbox_patch() is not None and t.get_zorder() > max(links)
                         and t.get_bbox_patch().get_facecolor()[:3] == (1.0, 1.0, 1.0)
                         for t in texts if t.get_text() in names.values() or "'" in t.get_text())
    assert fig.get_size_inches()[0] <= 7.0 + 1e-9                   # shown at its own size
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(legend) == 5 and "the best translation" in legend
    assert any(entry.startswith("framed: <eos>") for entry in legend)   # what a frame means
    assert any("punctuation" in entry for entry in legend)   # why '.' is quoted
    # the legend sits below the tree, so it hides no node
    fig.canvas.draw()
    legend_box = ax.get_legend().get_window_extent()
    for t in texts:
        assert not legend_box.overlaps(t.get_window_extent())
    with pytest.raises(ValueError, match="best"):
        beam_tree_diagram(steps, finished, (0, 9, 1), score.__getitem__, names.__getitem__, "x")
    plt.close(fig)


# -- every diagram: no escape character shows as text --------------------------------------------

def _all_texts(fig):
    texts = []
    for ax in fig.axes:
        texts += [t.get_text() for t in ax.texts]
        texts += [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        legend = ax.get_legend()
        if legend is not None:
            texts += [t.get_text() for t in legend.get_texts()]
    return texts


from seqbook.diagrams import lstm_unrolled_diagram, seq2seq_diagram  # noqa: E402

EVERY_DIAGRAM = {
    "lstm": lstm_cell_diagram,
    "gru": gru_cell_diagram,
    "unrolled_rnn": lambda: unrolled_rnn_diagram(backward=True, detach_after=2),
    "attention_decoder": attention_decoder_diagram,
    "transformer": transformer_diagram,
    "seq2seq": seq2seq_diagram,
    "lstm_unrolled": lstm_unrolled_diagram,
}


@pytest.mark.parametrize("draw", EVERY_DIAGRAM.values(), ids=EVERY_DIAGRAM.keys())
def test_no_label_shows_a_backslash_outside_math(draw):
    """A backslash belongs only inside $...$ (TeX); elsewhere it is an escape that leaked into the picture."""
    import re

    fig = draw()
    for text in _all_texts(fig):
        plain = re.sub(r"\$[^$]*\$", "", text)
        assert "\\" not in plain, text
    plt.close(fig)
