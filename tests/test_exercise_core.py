"""The checker machinery: verdicts, and no traceback ever reaches the student."""

from seqbook.exercises.core import Verdict, Wrong, as_number, call, checker


@checker
def check_double(f):
    got = call(f, 21)
    if got == 21:
        raise Wrong("you returned the input unchanged: multiply it by two.")
    if got != 42:
        raise Wrong(f"double(21) should be 42, got {got!r}.")
    return "double(21) == 42."


@checker
def check_pi(answer):
    if abs(as_number(answer, "a number close to pi") - 3.14159) > 1e-3:
        raise Wrong("that is not pi to three decimals.")
    return "that is pi."


def test_right_answer(capsys):
    v = check_double(lambda x: 2 * x)
    assert isinstance(v, Verdict) and v.passed and bool(v)
    assert "✅ Correct. double(21) == 42." in capsys.readouterr().out


def test_typical_wrong_answer_gets_its_hint(capsys):
    v = check_double(lambda x: x)
    assert not v
    assert "multiply it by two" in capsys.readouterr().out


def test_junk_never_raises(capsys):
    def stub(x):
        raise NotImplementedError

    def broken(x):
        return x / 0

    assert "placeholder" in check_double(stub).message
    assert "ZeroDivisionError" in check_double(broken).message
    assert "expected a function, got str" in check_double("lambda").message
    assert "placeholder" in check_pi(...).message
    assert "expected a number close to pi, got str 'pi'" in check_pi("pi").message
    assert "got the boolean True" in check_pi(True).message
    assert "got nan" in check_pi(float("nan")).message
    assert check_pi(3.1416)
    out = capsys.readouterr().out
    assert "Traceback" not in out and out.count("❌") == 7


def test_number_accepts_scalars_of_any_kind_and_explains_text():
    import numpy as np
    import pytest
    import torch

    from seqbook.exercises.core import number

    assert number(torch.tensor(0.5)) == 0.5 and number(np.float32(0.25)) == 0.25 and number(np.array([2.0])) == 2.0
    assert number(" 0.25 ") == 0.25
    with pytest.raises(Wrong, match=r"as a Python number \(for example 1 / 4\), got the text 'a quarter'"):
        number("a quarter", "a probability", example="1 / 4")


def test_require_function_and_match_typical():
    import pytest

    from seqbook.exercises.core import match_typical, require_function

    with pytest.raises(NotImplementedError):
        require_function(...)
    with pytest.raises(Wrong, match="expected a function, got int"):
        require_function(3)
    wrongs = [(2 / 3, "no smoothing."), (0.5, "denominator.")]
    assert match_typical(1 / 3, 1 / 3, wrongs, "try again") == "0.333333 is right."
    with pytest.raises(Wrong, match="0.666667: no smoothing."):
        match_typical(2 / 3, 1 / 3, wrongs, "try again")
    with pytest.raises(Wrong, match="0.9 is not it. try again"):
        match_typical(0.9, 1 / 3, wrongs, "try again")


def test_a_message_that_is_a_sentence_starts_with_a_capital():
    assert str(Verdict(False, "the answer is still the placeholder")) == "Not yet. The answer is still the placeholder"
    assert str(Verdict(True, "f(3) == 9")) == "Correct. f(3) == 9"
