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
