"""The shared argument checks: one exception rule (TypeError for a wrong type or dtype,
ValueError for a wrong shape or value) and messages that say what was expected. The module
tests only assert the exception type and a key phrase; the wording lives here."""

import numpy as np
import pytest
import torch
from torch import nn

from seqbook import checks


def test_describe_names_a_tensors_shape_and_dtype_and_anything_else_by_type_and_value():
    assert checks.describe(torch.zeros(2, 3, dtype=torch.int64)) == "a tensor of shape (2, 3) and dtype torch.int64"
    assert checks.describe([1, 2]) == "list [1, 2]"
    assert checks.describe("x" * 100).endswith("...") and len(checks.describe("x" * 100)) < 80


@pytest.mark.parametrize("value,minimum,error,message", [
    (0, 1, ValueError, "expected a positive integer size, got 0"),
    (-1, 0, ValueError, "expected a non-negative integer size, got -1"),
    (5, 6, ValueError, "expected an integer size >= 6, got 5"),
    (2.0, 1, TypeError, "expected a positive integer size, got float 2.0"),
    (True, 1, TypeError, "expected a positive integer size, got bool True"),
    ("3", None, TypeError, "expected an integer size, got str '3'"),
])
def test_integer(value, minimum, error, message):
    with pytest.raises(error) as caught:
        checks.integer(value, "size", minimum)
    assert str(caught.value) == message


def test_integer_accepts_numpy_integers_and_explains_its_bound():
    assert checks.integer(np.int64(3), "n", 1) == 3 and type(checks.integer(np.int64(3), "n")) is int
    with pytest.raises(ValueError, match=r"^expected an integer vocab >= 3 \(specials first\), got 2$"):
        checks.integer(2, "vocab", 3, note="specials first")
    assert checks.positive_ints(a=1, b=2) == (1, 2)
    with pytest.raises(ValueError, match="positive integer b, got 0"):
        checks.positive_ints(a=1, b=0)


@pytest.mark.parametrize("kwargs,value,error,message", [
    (dict(at_least=0), -1, ValueError, "expected a temperature >= 0, got -1"),
    (dict(above=0), 0, ValueError, "expected a temperature > 0, got 0"),
    (dict(at_least=0, below=1), 1.0, ValueError, "expected a temperature in [0, 1), got 1.0"),
    (dict(at_least=0, at_most=1), 2, ValueError, "expected a temperature between 0 and 1, got 2"),
    (dict(above=0), float("inf"), ValueError, "expected a temperature > 0, got inf"),
    (dict(above=0), float("nan"), ValueError, "expected a temperature > 0, got nan"),
    (dict(above=0), "1", TypeError, "expected a temperature > 0 as a number, got str '1'"),
    (dict(), True, TypeError, "expected a temperature as a number, got bool True"),
])
def test_number(kwargs, value, error, message):
    with pytest.raises(error) as caught:
        checks.number(value, "a temperature", **kwargs)
    assert str(caught.value) == message
    assert checks.number(np.float32(0.5), "p", at_least=0, at_most=1) == 0.5


def test_one_of_lists_the_choices():
    assert checks.one_of("gru", {"gru": 1, "lstm": 2}, "cell") == "gru"
    with pytest.raises(ValueError, match=r"^expected cell as one of 'gru', 'lstm', got 'rnn'$"):
        checks.one_of("rnn", {"gru": 1, "lstm": 2}, "cell")
    with pytest.raises(TypeError, match=r"^expected cell as one of 'gru', 'lstm', got int 3$"):
        checks.one_of(3, ("gru", "lstm"), "cell")


def test_float_tensors_and_sequences():
    x = torch.zeros(2, 3, 4)
    assert checks.float_tensor(x, "x", "(batch, time, 4)", (3,), 4) is x
    with pytest.raises(TypeError, match=r"^expected x as a torch.Tensor of shape \(batch, time, 4\), got list \[1.0\]$"):
        checks.float_tensor([1.0], "x", "(batch, time, 4)")
    with pytest.raises(ValueError, match=r"^expected x of shape \(batch, time, 5\), got \(2, 3, 4\)$"):
        checks.float_tensor(x, "x", "(batch, time, 5)", (3,), 5)
    with pytest.raises(TypeError, match=r"floating-point x .* got dtype torch.int64 \(token ids go through an embedding"):
        checks.float_tensor(x.long(), "x", "(batch, time, 4)")
    with pytest.raises(TypeError, match=r"dtype torch.bool$"):
        checks.float_tensor(x.bool(), "x", "(batch, time, 4)")
    with pytest.raises(ValueError, match="^expected at least one time step, got input of length 0$"):
        checks.sequence(torch.zeros(2, 0, 4), 4)
    with pytest.raises(ValueError, match=r"^expected h of shape \(batch, hidden\) = \(2, 3\), got \(3, 2\)$"):
        checks.state_tensor(torch.zeros(3, 2), "h", (2, 3), "(batch, hidden)")
    with pytest.raises(TypeError, match=r"^expected h as a tensor of shape \(2, 3\), got NoneType None$"):
        checks.state_tensor(None, "h", (2, 3))


def test_token_ids():
    ids = torch.tensor([[1, 2], [3, 0]])
    assert checks.token_ids(ids, "src", 2, vocab_size=4) is ids
    with pytest.raises(TypeError, match=r"^expected src as an int64 tensor of shape \(batch, time\), got list"):
        checks.token_ids([[1]], "src")
    with pytest.raises(ValueError, match=r"^expected src as an int64 tensor of shape \(batch, time\), got shape \(2,\)$"):
        checks.token_ids(ids[0], "src")
    with pytest.raises(TypeError, match=r"^expected src of dtype torch.int64 \(token ids\), got torch.float32$"):
        checks.token_ids(ids.float(), "src")
    with pytest.raises(ValueError, match=r"^expected src with at least one token, got shape \(2, 0\)$"):
        checks.token_ids(ids[:, :0], "src")
    assert checks.token_ids(ids[:, :0], "src", allow_empty=True).shape == (2, 0)
    with pytest.raises(ValueError, match=r"^expected src in 0..2, got ids from 0 to 3$"):
        checks.token_ids(ids, "src", 2, vocab_size=3)
    assert checks.as_token_ids([4, 5]).tolist() == [4, 5]
    assert checks.as_token_ids((), allow_empty=True).shape == (0,)
    with pytest.raises(TypeError, match="list of integer ids"):
        checks.as_token_ids(["a"])
    with pytest.raises(TypeError, match="list of integer ids"):
        checks.as_token_ids([1.5, 2.0])


def test_padded_batch():
    src = torch.tensor([[4, 5, 0], [6, 0, 0]])
    checks.padded_batch(src, torch.tensor([2, 1]))
    with pytest.raises(ValueError, match=r"^expected 2 src_lengths \(one per sentence\), got 1$"):
        checks.padded_batch(src, torch.tensor([2]))
    with pytest.raises(ValueError, match=r"^expected src_lengths between 1 and 3, got \[2, 0\]$"):
        checks.padded_batch(src, torch.tensor([2, 0]))
    with pytest.raises(TypeError, match="src_lengths of dtype torch.int64"):
        checks.padded_batch(src, torch.tensor([2.0, 1.0]))


def test_masks():
    mask = torch.ones(2, 5, dtype=torch.bool)
    assert checks.bool_mask(mask, "m", "True = padding", (2, 5)) is mask
    with pytest.raises(TypeError, match=r"^expected m as a bool tensor \(True = padding\), got dtype torch.float32$"):
        checks.bool_mask(mask.float(), "m", "True = padding", (2, 5))
    with pytest.raises(ValueError, match=r"^expected m of shape \(2, 4\) \(True = padding\), got \(2, 5\)$"):
        checks.bool_mask(mask, "m", "True = padding", (2, 4))
    checks.bool_mask(mask[:1, None], "m", "True = padding", (2, 3, 5), broadcast=True)
    scores = torch.zeros(2, 3, 5)
    assert checks.scores_and_key_mask(scores, mask).shape == (2, 1, 5)
    assert checks.scores_and_key_mask(scores, None) is None
    with pytest.raises(ValueError, match="at least one real key .* True at padding instead"):
        checks.scores_and_key_mask(scores, torch.tensor([[True] * 5, [False] * 5]))


def test_query_key_value():
    q, k, v = torch.zeros(2, 3, 4), torch.zeros(2, 5, 4), torch.zeros(2, 5, 6)
    checks.query_key_value(q, k, v, 4, 4)
    checks.query_key_value(q, k)
    with pytest.raises(ValueError, match=r"^expected key of shape \(batch, keys, 8\), got \(2, 5, 4\)$"):
        checks.query_key_value(q, k, v, 4, 8)
    with pytest.raises(ValueError, match=r"^expected query, key, value with the same batch and as many values as "
                                         r"keys, got \(2, 3, 4\) and \(2, 5, 4\) and \(2, 4, 6\)$"):
        checks.query_key_value(q, k, v[:, :4])
    with pytest.raises(ValueError, match=r"^expected x, memory with the same batch, got"):
        checks.query_key_value(q, k[:1], names=("x", "memory"))
    with pytest.raises(ValueError, match=r"q of shape \(batch, \[heads,\] queries, d_q\)"):
        checks.query_key_value(q[0], k, v, names="qkv", dims=(3, 4))


def test_logits_and_targets():
    logits, targets = torch.zeros(2, 3, 7), torch.tensor([[1, 2, 0], [3, 0, 0]])
    checks.logits_and_targets(logits, targets, ignore=0)
    with pytest.raises(ValueError, match=r"same batch and time, got \(2, 3, 7\) and \(2, 2\)"):
        checks.logits_and_targets(logits, targets[:, :2])
    with pytest.raises(ValueError, match="^expected at least one target that is not padding, got only padding$"):
        checks.logits_and_targets(logits, torch.zeros_like(targets), ignore=0)
    with pytest.raises(TypeError, match="targets of dtype torch.int64"):
        checks.logits_and_targets(logits, targets.float())


def test_modules():
    checks.torch_module(nn.GRU(2, 3), nn.GRU)
    with pytest.raises(TypeError, match=r"^expected an nn.LSTM or nn.GRU, got Linear$"):
        checks.torch_module(nn.Linear(2, 3), (nn.LSTM, nn.GRU))
    checks.built_with([("batch_first=True", False)])
    with pytest.raises(ValueError, match=r"^expected a module built with num_layers=1, batch_first=True; one layer$"):
        checks.built_with([("num_layers=1", True), ("bias=True", False), ("batch_first=True", True)], "one layer")
