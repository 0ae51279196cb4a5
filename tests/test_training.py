"""The language-model trainer: batching, clipping, truncated BPTT, perplexity, history."""

import math

import pytest
import torch
from torch import nn

from seqbook.lm import RecurrentLM
from seqbook.rnn import RNNScratch
from seqbook.training import (chunks, clip_by_global_norm, global_grad_norm, mean_nll, perplexity, streams,
                              train_lm)


def test_streams_and_chunks_cover_the_text_in_order():
    ids = torch.arange(23)
    rows = streams(ids, 3)
    assert rows.shape == (3, 7) and rows[1, 0] == 7
    pairs = list(chunks(rows, 4))
    assert [x.shape[1] for x, _ in pairs] == [4, 2]
    for x, y in pairs:
        torch.testing.assert_close(y, x + 1)
    assert torch.equal(torch.cat([x for x, _ in pairs], 1), rows[:, :-1])
    with pytest.raises(ValueError, match=r"ids as an int64 tensor of shape \(time,\), got shape \(3, 3\)"):
        streams(torch.zeros(3, 3, dtype=torch.int64), 2)
    with pytest.raises(ValueError, match="at least 8 ids for 4 streams"):
        streams(torch.arange(5), 4)


def test_clipping_matches_torch_and_keeps_the_direction():
    torch.manual_seed(0)
    a, b = nn.Linear(4, 3), nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    x = torch.randn(5, 4) * 10
    a(x).pow(2).sum().backward()
    b(x).pow(2).sum().backward()
    before = [p.grad.clone() for p in a.parameters()]
    mine = clip_by_global_norm(a.parameters(), 1.0)
    ref = torch.nn.utils.clip_grad_norm_(b.parameters(), 1.0)
    assert mine == pytest.approx(float(ref), rel=1e-5) and mine > 1
    for p, q, g in zip(a.parameters(), b.parameters(), before):
        torch.testing.assert_close(p.grad, q.grad)
        torch.testing.assert_close(p.grad * mine, g, rtol=1e-4, atol=1e-4)  # same direction
    assert global_grad_norm(a.parameters()) == pytest.approx(1.0, rel=1e-4)
    # Below the threshold nothing changes.
    small = [p.grad.clone() for p in a.parameters()]
    clip_by_global_norm(a.parameters(), 5.0)
    assert all(torch.equal(p.grad, g) for p, g in zip(a.parameters(), small))
    with pytest.raises(ValueError, match=r"max_norm > 0 \(or None for no clipping\), got 0"):
        clip_by_global_norm(a.parameters(), 0)


def _periodic(n=3000, period=5):
    return torch.arange(n) % period


def test_training_learns_a_periodic_text_and_records_history(device):
    torch.manual_seed(0)
    model = RecurrentLM(5, RNNScratch(5, 16, seed=0))
    ids = _periodic()
    before = perplexity(model, ids[:500])
    h = train_lm(model, ids, 60, batch_size=8, seq_len=10, lr=0.02, clip=1.0, val_ids=ids[:500],
                 eval_every=30, device=device)
    assert next(model.parameters()).device.type == device.type
    assert h.steps == 60 and len(h.grad_norm) == 60 and h.diverged_at is None
    assert h.val_step == [30, 60]
    assert all(b >= a for a, b in zip(h.wall_time, h.wall_time[1:]))
    assert 0 <= h.clipped <= 60
    assert before > 3 and h.val_perplexity[-1] < 1.2  # a deterministic cycle: perplexity near 1
    assert h.loss[-1] < 0.2 * h.loss[0]


def test_same_seed_same_model(device):
    def run():
        torch.manual_seed(0)
        model = RecurrentLM(5, RNNScratch(5, 8, seed=0))
        train_lm(model, _periodic(), 5, batch_size=4, seq_len=8, seed=3, device=device)
        return model.layer.W_hh.detach().clone()
    assert torch.equal(run(), run())


def _trained_W_hh(**state_option):
    torch.manual_seed(0)
    model = RecurrentLM(5, RNNScratch(5, 8, seed=0))
    train_lm(model, _periodic(), 6, batch_size=4, seq_len=8, seed=3, device="cpu", **state_option)
    return model.layer.W_hh.detach().clone()


def test_carry_state_changes_training_and_truncated_is_its_deprecated_alias():
    import warnings
    carried, reset = _trained_W_hh(carry_state=True), _trained_W_hh(carry_state=False)
    assert not torch.equal(carried, reset)          # the option does something
    assert torch.equal(_trained_W_hh(), carried)    # carrying the state is the default
    for old, new in ((True, carried), (False, reset)):
        with pytest.warns(FutureWarning, match="carry_state"):
            assert torch.equal(_trained_W_hh(truncated=old), new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # the new name does not warn
        _trained_W_hh(carry_state=False)
    with pytest.raises(ValueError, match="carry_state=False and truncated=True"), \
            pytest.warns(FutureWarning):
        _trained_W_hh(carry_state=False, truncated=True)


def test_truncation_cuts_the_gradient_at_the_chunk_boundary():
    """With the state carried but detached, chunk 2's loss changes the weights only through
    chunk 2's own steps; without detaching, its gradient also flows back into chunk 1."""
    torch.manual_seed(0)
    model = RecurrentLM(5, RNNScratch(5, 8, seed=0))
    ids = _periodic(40)[None]

    def chunk2_grad(detach):
        model.zero_grad()
        _, state = model(ids[:, :10])
        if detach:
            state = state.detach()
        logits, _ = model(ids[:, 10:20], state)
        logits.pow(2).sum().backward()
        return model.layer.W_xh.grad.clone(), logits.detach()

    g_full, logits_full = chunk2_grad(False)
    g_cut, logits_cut = chunk2_grad(True)
    torch.testing.assert_close(logits_cut, logits_full)  # the same numbers go forward
    assert (g_full - g_cut).abs().max() > 1e-6            # but less gradient comes back
    with torch.no_grad():
        _, constant = model(ids[:, :10])
    model.zero_grad()
    model(ids[:, 10:20], constant)[0].pow(2).sum().backward()
    torch.testing.assert_close(model.layer.W_xh.grad, g_cut)  # as if chunk 1 were a given constant


def test_divergence_is_recorded_and_stops_training():
    model = RecurrentLM(5, RNNScratch(5, 8, seed=0))
    with torch.no_grad():
        model.output.weight.fill_(float("nan"))
    h = train_lm(model, _periodic(), 20, batch_size=4, seq_len=8, device="cpu")
    assert h.diverged_at == 0 and h.steps == 1 and math.isnan(h.loss[0])


def test_mean_nll_counts_every_token_but_the_first():
    model = RecurrentLM(5, RNNScratch(5, 8, seed=0))
    ids = _periodic(101)
    nll, n = mean_nll(model, ids, seq_len=16)
    assert n == 100
    nll4, n4 = mean_nll(model, ids, seq_len=16, n_streams=4)
    assert n4 == 100 and nll4 > 0
    # Untrained and near-uniform: close to ln 5.
    assert abs(nll - math.log(5)) < 0.5
    with pytest.raises(ValueError, match="at least 5 ids for 4 streams"):
        mean_nll(model, ids[:3], n_streams=4)


def test_bad_arguments():
    model = RecurrentLM(5, RNNScratch(5, 8))
    with pytest.raises(ValueError, match="positive integer steps"):
        train_lm(model, _periodic(), 0)
    with pytest.raises(ValueError, match="at least"):
        train_lm(model, _periodic(50), 3, batch_size=8, seq_len=10)
    with pytest.raises(ValueError, match="optimizer as one of 'adam', 'sgd'"):
        train_lm(model, _periodic(), 3, optimizer="rmsprop", device="cpu")
    with pytest.raises(TypeError, match="train_ids of dtype torch.int64"):
        train_lm(model, torch.zeros(100), 3)


@pytest.mark.parametrize("layer", [nn.LSTM(4, 8, batch_first=True), nn.GRU(4, 8, batch_first=True, num_layers=2)])
def test_trains_with_torch_layers_whose_state_is_a_tuple_or_has_a_layer_dimension(layer, device):
    torch.manual_seed(0)
    model = RecurrentLM(5, layer, embedding_dim=4)
    h = train_lm(model, _periodic(), 40, batch_size=4, seq_len=8, lr=0.02, val_ids=_periodic(200), device=device)
    assert h.diverged_at is None and h.loss[-1] < h.loss[0] and h.val_step == [40]


def _memorisable(seed, n=400, vocab=5):
    return torch.randint(vocab, (n,), generator=torch.Generator().manual_seed(seed))


def _overfitting_run(**kwargs):
    """A model large enough to memorise 400 random tokens: its perplexity on 400 other random
    tokens falls at first (it learns the frequencies), then rises (it learns the training text)."""
    torch.manual_seed(0)
    model = RecurrentLM(5, RNNScratch(5, 48, seed=0))
    history = train_lm(model, _memorisable(1), 240, batch_size=4, seq_len=20, lr=0.01, seed=0,
                       val_ids=_memorisable(2), eval_every=10, device="cpu", **kwargs)
    return model, history


def test_keep_best_returns_the_model_of_the_lowest_validation_perplexity():
    model, h = _overfitting_run(keep_best=True)
    best = min(range(len(h.val_perplexity)), key=h.val_perplexity.__getitem__)
    assert h.val_perplexity[-1] > h.val_perplexity[best] + 0.5       # it did overfit
    assert h.best_step == h.val_step[best] < 240 and h.stopped_early_at is None and h.steps == 240
    assert perplexity(model, _memorisable(2)) == pytest.approx(h.val_perplexity[best], rel=1e-6)


def test_without_keep_best_the_model_is_the_last_one():
    model, h = _overfitting_run()
    assert h.best_step is not None and h.best_step < 240
    assert perplexity(model, _memorisable(2)) == pytest.approx(h.val_perplexity[-1], rel=1e-6)


def test_patience_stops_after_that_many_evaluations_without_improvement():
    model, h = _overfitting_run(keep_best=True, patience=3)
    _, full = _overfitting_run()
    assert h.stopped_early_at == h.best_step + 3 * 10 == h.steps < 240
    assert h.val_perplexity == full.val_perplexity[:len(h.val_perplexity)]   # the same run, cut short
    assert h.val_step[-1] == h.stopped_early_at
    assert perplexity(model, _memorisable(2)) == pytest.approx(min(h.val_perplexity), rel=1e-6)


def test_early_stopping_needs_validation():
    model = RecurrentLM(5, RNNScratch(5, 8))
    with pytest.raises(ValueError, match="expected val_ids for early stopping"):
        train_lm(model, _periodic(), 3, keep_best=True, device="cpu")
    with pytest.raises(ValueError, match="expected eval_every with patience"):
        train_lm(model, _periodic(), 3, patience=2, val_ids=_periodic(100), device="cpu")
    with pytest.raises(ValueError, match="positive integer patience"):
        train_lm(model, _periodic(), 3, patience=0, val_ids=_periodic(100), eval_every=1, device="cpu")
