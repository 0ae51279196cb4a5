"""The seed sweep: every hidden check of a chapter, run once per training seed."""

import json

import nbformat
import pytest

from seqbook.authoring import seed_sweep

C, M = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
HIDDEN = {"tags": ["remove-cell"]}


def tiny_chapter(path):
    """One check that holds for every seed and one that holds only for even SEQBOOK_SEED."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        M("# A tiny chapter"),
        C("from seqbook.seeding import training_seed\nseed = training_seed(0)\nprint(seed)"),
        C("# the seed is never negative\nassert seed >= 0, seed", metadata=HIDDEN),
        C("# an even seed\nassert seed % 2000 == 0, seed / 1000", metadata=HIDDEN),
        C("assert False  # a visible cell, not a check"),
        C("print('still running')"),
    ]
    nbformat.write(nb, path)
    return path


def test_a_claim_that_holds_for_some_seeds_fails_the_sweep(tmp_path, capsys):
    path = tiny_chapter(tmp_path / "ch09_tiny.ipynb")
    report = tmp_path / "report.json"
    status = seed_sweep.main([str(path), "--seeds", "0-1", "--jobs", "2", "--json", str(report)])
    assert status == 1
    out = capsys.readouterr().out
    rows = {line.split("|")[3].strip(): line for line in out.splitlines()
            if line.startswith("| ch09") and len(line.split("|")) > 5}
    never, even, raised = (rows["the seed is never negative"], rows["an even seed"],
                           rows["a cell of the chapter raised"])
    assert never.count("ok (") == 2 and "FAIL" not in never
    # seed 0 holds with the value it tested, seed 1 fails with its value (1 = 1000 / 1000)
    cells = [c.strip() for c in even.split("|")]
    assert cells[4] == "ok (0)" and cells[5].startswith("**FAIL** AssertionError") and "(1)" in cells[5]
    assert "at `assert seed % 2000 == 0, seed / 1000`" in cells[5]    # the line that failed
    assert raised.count("AssertionError") == 2            # a chapter cell that raises is reported
    assert "2 chapter(s)" not in out and "1 chapter(s) x 2 seed(s): 4 check runs" in out
    assert "s CPU over all kernels" in out
    runs = json.loads(report.read_text())
    assert sorted(r["seed"] for r in runs) == [0, 1] and all(r["cpu_s"] > 0 for r in runs)


def test_a_sweep_where_every_check_holds_passes(tmp_path, capsys):
    path = tiny_chapter(tmp_path / "ch09_tiny.ipynb")
    nb = nbformat.read(path, as_version=4)
    del nb.cells[4]                                         # the raising cell
    nbformat.write(nb, path)
    assert seed_sweep.main([str(path), "--seeds", "0,2", "--jobs", "1"]) == 0
    assert "0 failed" in capsys.readouterr().out


def test_instrumented_checks_keep_their_meaning_and_report_values():
    src = "# pas looks at the verb\nx, n = 0.4812, 10\nassert x > 0.1, (x, n)\nassert n < 20\n"
    ns = {}
    exec(seed_sweep.instrument(src), ns)
    assert ns[seed_sweep.NOTES] == ["0.4812, 10", "10"]
    ns = {}
    exec(seed_sweep.instrument("a, b = 2.5, 7\nassert a > 1 and b < 9 and a"), ns)
    assert ns[seed_sweep.NOTES] == ["2.5", "7"]          # each comparison's left side
    with pytest.raises(AssertionError):
        exec(seed_sweep.instrument("assert 1 > 2, 'no'"), {})
    assert seed_sweep.claim_of(src) == "pas looks at the verb"
    assert seed_sweep.claim_of("x = 1\nassert x == 1") == "assert x == 1"


@pytest.mark.parametrize("text, seeds", [("0-4", [0, 1, 2, 3, 4]), ("0,3", [0, 3]), ("2", [2])])
def test_seed_lists(text, seeds):
    assert seed_sweep.parse_seeds(text) == seeds


def test_bad_seed_list_and_unknown_chapter_say_what_was_expected():
    with pytest.raises(ValueError, match="expected seeds like 0-4"):
        seed_sweep.parse_seeds("zero")
    with pytest.raises(ValueError, match="no chapter called 'ch99'; expected one of ch01"):
        seed_sweep.find_chapters(["ch99"])
    assert [p.stem for p in seed_sweep.find_chapters(["ch05"])] == ["ch05_attention"]
