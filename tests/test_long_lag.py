"""The adding problem: its layout, determinism, baselines, and that training can solve it."""

import pytest
import torch

from seqbook.long_lag import LastStepRegressor, adding_problem, baselines, evaluate, train_adding


def test_layout_follows_hochreiter_and_schmidhuber():
    X, y = adding_problem(500, 40, seed=3)
    assert X.shape == (500, 40, 2) and y.shape == (500,) and X.dtype == y.dtype == torch.float32
    values, markers = X[..., 0], X[..., 1]
    assert ((values >= -1) & (values <= 1)).all()
    assert ((markers == 1).sum(1) == 2).all()
    marked = (markers == 1).nonzero()[:, 1].reshape(500, 2)
    assert (marked[:, 0] < 10).all() and (marked[:, 1] < 40 // 2 - 1).all()
    # -1 at both ends unless the first step is marked; 0 elsewhere.
    assert (markers[:, -1] == -1).all()
    assert ((markers[:, 0] == -1) | (marked[:, 0] == 0)).all()
    expected = 0.5 + (values * (markers == 1)).sum(1) / 4
    torch.testing.assert_close(y, expected)


def test_first_step_marked_means_x1_is_zero_and_the_later_mark_is_far_from_the_end():
    X, y = adding_problem(3000, 40, seed=4)
    values, markers = X[..., 0], X[..., 1]
    # The mark drawn among the first ten falls on step 0 one time in ten; its value X1 is
    # then 0 (the paper's rule). Values are otherwise continuous, so never exactly 0.
    zeroed = (markers[:, 0] == 1) & (values[:, 0] == 0)
    assert 230 < int(zeroed.sum()) < 370
    assert (values[markers[:, 0] != 1, 0] != 0).all()
    later = (markers == 1).nonzero()[:, 1].reshape(3000, 2)[:, 1]
    assert int((40 - 1 - later).min()) == 40 // 2 + 1   # the shortest lag, T/2 + 1


def test_seeded_and_distinct():
    a, b, c = adding_problem(10, 20, seed=1), adding_problem(10, 20, seed=1), adding_problem(10, 20, seed=2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.equal(a[0], c[0])


def test_baselines_are_the_lazy_predictors():
    X, y = adding_problem(4000, 30, seed=0)
    b = baselines(y, X)
    # Var(0.5 + (X1+X2)/4) = 2 * (1/3) / 16 = 1/24; knowing X2 leaves Var(X1)/16 = 1/48.
    assert b["constant 0.5"]["mse"] == pytest.approx(1 / 24, rel=0.1)
    assert b["recent mark only"]["mse"] == pytest.approx(1 / 48, rel=0.1)
    # With the paper's rule (X1 = 0 when the first step is marked, one time in ten):
    assert b["constant 0.5"]["mse"] == pytest.approx(0.9 / 24 + 0.1 / 48, rel=0.05)
    assert b["recent mark only"]["mse"] == pytest.approx(0.9 / 48, rel=0.05)
    assert b["recent mark only"]["solved"] == pytest.approx(0.9 * 0.16 + 0.1, abs=0.03)


def test_bad_arguments():
    with pytest.raises(ValueError, match="length >= 12"):
        adding_problem(5, 8)
    with pytest.raises(ValueError, match="one of"):
        LastStepRegressor("transformer")
    with pytest.raises(ValueError, match=r"expected input of shape \(batch, time, 2\), got \(3, 2\)"):
        LastStepRegressor("gru")(torch.zeros(3, 2))


def test_lstm_with_memory_init_solves_a_short_lag_and_evaluate_scores_it():
    r = train_adding("lstm", 12, steps=900, memory_bias=3.0, stop_below=5e-4, seed=0, n_test=500,
                     device=torch.device("cpu"), show_progress=False)
    assert r["solved"] > 0.8 and r["mse"] < 2e-3 and r["steps"] < 900
    X, y = adding_problem(200, 12, seed=5)
    assert evaluate(r["model"], X, y)["solved"] > 0.8
    r["model"].eval()
    evaluate(r["model"], X, y)
    assert not r["model"].training  # evaluate restores the mode it found


def test_training_is_seeded_without_touching_the_readers_random_stream():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    runs = [train_adding("gru", 12, steps=5, seed=s, n_test=20, device="cpu", show_progress=False) for s in (4, 4, 5)]
    assert torch.equal(torch.get_rng_state(), before)   # the global generator is left alone
    assert runs[0]["curve"] == runs[1]["curve"] and runs[0]["curve"] != runs[2]["curve"]
    # the same weights as building the model right after torch.manual_seed(seed), as before
    torch.manual_seed(4)
    reference = LastStepRegressor("gru", 32)
    fresh = LastStepRegressor("gru", 32, seed=4)
    assert all(torch.equal(a, b) for a, b in zip(reference.state_dict().values(), fresh.state_dict().values()))
