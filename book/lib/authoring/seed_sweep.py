"""Run chapters once per training seed and tabulate which hidden checks hold for which seed.

A hidden check is a code cell tagged ``remove-cell`` that contains an ``assert``: the claim a chapter
makes, tested. A claim about a trained model must hold for every training seed, so this tool
executes each chapter in a fresh kernel with ``SEQBOOK_SEED`` = 0, 1, ... (see
:mod:`seqbook.seeding`), one thread per kernel, several kernels in parallel, and prints one row
per check: the claim in a few words and, for every seed, whether it held and the values it tested.

    python -m seqbook.authoring.seed_sweep --seeds 0-4                 # every chapter
    python -m seqbook.authoring.seed_sweep --seeds 0,3 ch05 ch06       # some chapters, some seeds

The exit status is 1 when any check fails (or any cell raises) for any seed, else 0. The wall time
and the CPU time of all kernels are printed at the end; ``--json`` also writes the whole result.

The values come from the checks themselves: before a check cell runs, each ``assert test, message``
in it is rewritten to also record ``message`` (and, where there is no message, the left-hand side
of the comparison), so the table shows the numbers a claim was tested on without any change to the
chapters. The claim's words are the first comment line of the cell (else its first ``assert``).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import ROOT, chapters

NOTE, NOTES = "__seed_sweep_note", "__seed_sweep_notes"
MARK = "\x1eseed-sweep "            # the line a rewritten check prints with what it recorded
MAX_VALUES = 40                      # values recorded per check cell (asserts in loops repeat)
SHOWN_VALUES = 6                     # of which the table shows the first few (--json keeps all)

# What every rewritten check cell runs first: a fresh list, and a function that adds one value to
# it, short and readable (a one-element tensor as its number, a float to 4 significant digits).
_PRELUDE = f'''
{NOTES} = []
def {NOTE}(value):
    def one(v):
        if hasattr(v, "numel") and v.numel() == 1:
            v = v.item()
        return format(v, ".4g") if isinstance(v, float) else str(v)
    try:
        text = ", ".join(map(one, value)) if isinstance(value, tuple) else one(value)
    except Exception:
        text = "?"
    text = " ".join(text.split())
    {NOTES}.append(text if len(text) <= 48 else text[:45] + "...")
'''


def is_check(cell) -> bool:
    """A hidden check: a code cell tagged ``remove-cell`` that asserts something."""
    return (cell.get("cell_type") == "code" and "remove-cell" in cell.get("metadata", {}).get("tags", [])
            and any(isinstance(n, ast.Assert) for n in ast.walk(_parse(cell["source"]) or ast.Module(body=[], type_ignores=[]))))


def _parse(source: str):
    try:
        return ast.parse(source)
    except SyntaxError:                 # IPython magics: such a cell is run as it is
        return None


def claim_of(source: str) -> str:
    """The claim a check tests, in a few words: its first comment line, else its first assert."""
    lines = [line.strip() for line in source.splitlines()]
    for line in lines:
        if line.startswith("#") and line.lstrip("# ").strip():
            return _shorten(line.lstrip("# ").strip())
    for line in lines:
        if line.startswith("assert"):
            return _shorten(line)
    return "(no assert)"


def _shorten(text: str, width: int = 64) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


class _RecordAsserts(ast.NodeTransformer):
    """``assert test, msg`` -> record msg (else the left side of each comparison in the test),
    then assert."""

    def visit_Assert(self, node: ast.Assert):
        if node.msg is not None:
            values = [node.msg]
        else:
            parts = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            values = [part.left for part in parts if isinstance(part, ast.Compare)]
        if not values:
            return node
        calls = [ast.Expr(ast.Call(ast.Name(NOTE, ast.Load()), [value], [])) for value in values]
        guarded = ast.Try(body=calls, handlers=[ast.ExceptHandler(ast.Name("Exception", ast.Load()),
                                                                  None, [ast.Pass()])],
                          orelse=[], finalbody=[])
        return [guarded, node]


def instrument(source: str) -> str:
    """The check cell's source, rewritten to print (on a marked line) the values its asserts test."""
    tree = _parse(source)
    if tree is None:
        return source
    tree = _RecordAsserts().visit(tree)
    body = ast.parse(_PRELUDE).body
    # on success, print the values; on failure, the values and the line that failed, then re-raise
    report = ast.parse(f"print({MARK!r} + __import__('json').dumps({{'values': {NOTES}[:{MAX_VALUES}]}}))").body
    failed = ast.parse(
        f"print({MARK!r} + __import__('json').dumps({{'values': {NOTES}[:{MAX_VALUES}], 'failed': "
        f"__import__('traceback').extract_tb(__import__('sys').exc_info()[2])[0].line}}))").body
    reraise = ast.ExceptHandler(ast.Name("BaseException", ast.Load()), None, [*failed, ast.Raise()])
    wrapped = ast.Try(body=tree.body or [ast.Pass()], handlers=[reraise], orelse=report, finalbody=[])
    module = ast.Module(body=[*body, wrapped], type_ignores=[])
    return ast.unparse(ast.fix_missing_locations(module))


# -- running one chapter with one seed ----------------------------------------------------------
# A child process per run, so that RUSAGE_CHILDREN measures that run's kernel alone.
_CHILD = r"""
import json, os, resource, sys, tempfile, time
import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
start = time.perf_counter()
# IPC sockets, not TCP ports: kernels started at the same moment cannot pick the same port.
sockets = tempfile.TemporaryDirectory()
km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets.name, "kernel"))
client = NotebookClient(nb, km=km, timeout=int(sys.argv[3]), allow_errors=True,
                        resources={"metadata": {"path": sys.argv[2]}})
try:
    client.execute()
    crashed = None
except Exception as exc:                 # a dead kernel or a timeout: report it, keep the outputs
    crashed = f"{type(exc).__name__}: {exc}"[:500]
if km.has_kernel:                        # a kernel we started ourselves: stop it, so that its
    km.shutdown_kernel(now=crashed is not None)   # CPU time counts in RUSAGE_CHILDREN
sockets.cleanup()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cells = [{"outputs": c.get("outputs", [])} if c.cell_type == "code" else {} for c in nb.cells]
print(json.dumps({"wall_s": time.perf_counter() - start, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "crashed": crashed, "cells": cells}))
"""


@dataclass
class CellResult:
    index: int
    cell_id: str
    claim: str
    check: bool                     # a hidden check (else an ordinary cell, reported only on error)
    ok: bool
    values: list[str] = field(default_factory=list)
    error: str = ""
    printed: str = ""


@dataclass
class Run:
    chapter: str
    seed: int
    wall_s: float
    cpu_s: float
    crashed: str | None
    cells: list[CellResult]

    @property
    def failed(self) -> list[CellResult]:
        return [c for c in self.cells if not c.ok]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ARROW = re.compile(r"^-+>\s*\d+\s(.*)")          # IPython's marker of the line that raised


def _error_of(outputs) -> str:
    """The error's type and message, and the line of the cell that raised it."""
    for out in outputs:
        if out.get("output_type") == "error":
            lines = [_ANSI.sub("", line) for tb in out.get("traceback", []) for line in tb.split("\n")]
            raised = [m.group(1) for m in map(_ARROW.match, lines) if m]
            where = " ".join(raised[-1].split()) if raised else ""
            text = f"{out.get('ename')}: {out.get('evalue')}".strip().rstrip(":")
            return (f"{text} at `{where}`" if where else text)[:300]
    return ""


def _printed_of(outputs) -> str:
    """What the check printed itself (besides the recorded values)."""
    text = "".join(out.get("text", "") for out in outputs if out.get("output_type") == "stream")
    return "\n".join(line for line in text.split("\n") if line and not line.startswith(MARK))[:2000]


def _report_of(outputs) -> dict:
    """What a rewritten check printed on its marked line: its values, and the line that failed."""
    for out in outputs:
        if out.get("output_type") == "stream":
            for line in out.get("text", "").split("\n"):
                if line.startswith(MARK):
                    return json.loads(line[len(MARK):])
    return {}


def run_chapter(path: Path, seed: int, timeout: int = 900) -> Run:
    """Execute one chapter with ``SEQBOOK_SEED=seed``; every check's verdict and values."""
    with open(path) as f:
        nb = json.load(f)
    checks = {i for i, c in enumerate(nb["cells"]) if is_check(_as_cell(c))}
    for i in checks:
        nb["cells"][i]["source"] = instrument(_source(nb["cells"][i]))
    env = {**os.environ, "SEQBOOK_SEED": str(seed), "OMP_NUM_THREADS": "1", "SEQBOOK_QUIET": "1"}
    env.pop("SEQBOOK_STATIC", None)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / path.name
        scratch.write_text(json.dumps(nb))
        out = subprocess.run([sys.executable, "-c", _CHILD, str(scratch), str(path.parent), str(timeout)],
                             capture_output=True, text=True, env=env)
    if out.returncode != 0 or not out.stdout.strip():
        return Run(path.stem, seed, 0.0, 0.0, f"the run did not start: {out.stderr[-500:]}", [])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    original = json.loads(path.read_text())["cells"]
    cells = []
    for i, cell in enumerate(original):
        if cell["cell_type"] != "code":
            continue
        outputs = result["cells"][i].get("outputs", [])
        report, error = _report_of(outputs), _error_of(outputs)
        if report.get("failed"):        # a check's own report names its line, as written
            error = f"{error.split(' at `')[0]} at `{' '.join(report['failed'].split())}`"[:300]
        if i in checks or error:
            cells.append(CellResult(i, cell.get("id", ""), claim_of(_source(cell)) if i in checks else
                                    "a cell of the chapter raised", i in checks, not error,
                                    report.get("values", []), error, _printed_of(outputs)))
    return Run(path.stem, seed, result["wall_s"], result["cpu_s"], result["crashed"], cells)


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _as_cell(cell):
    return {**cell, "source": _source(cell)}


# -- the table ----------------------------------------------------------------------------------
def table(runs: list[Run], seeds: list[int]) -> str:
    """One row per check (and per cell that raised): chapter, cell, claim, then per seed
    ``ok`` or ``FAIL`` with the values tested."""
    by_key: dict[tuple, dict[int, CellResult]] = {}
    for run in sorted(runs, key=lambda r: (r.chapter, r.seed)):
        for cell in run.cells:
            key = (run.chapter, cell.index, cell.cell_id, cell.claim)
            by_key.setdefault(key, {})[run.seed] = cell
    header = ["chapter", "cell", "claim", *(f"seed {s}" for s in seeds)]
    rows = [header, ["---"] * len(header)]
    for (chapter, index, cell_id, claim), per_seed in sorted(by_key.items()):
        row = [chapter.split("_")[0], f"{index} `{cell_id}`", claim.replace("|", "/")]
        for s in seeds:
            cell = per_seed.get(s)
            if cell is None:
                row.append("ok" if any(r.chapter == chapter and r.seed == s for r in runs) else "not run")
                continue
            values = ", ".join(cell.values[:SHOWN_VALUES]).replace("|", "/")
            verdict = "ok" if cell.ok else f"**FAIL** {cell.error}".replace("|", "/")
            row.append(f"{verdict} ({values})" if values else verdict)
        rows.append(row)
    for run in runs:
        if run.crashed:
            rows.append([run.chapter.split("_")[0], "-", "the run stopped", *(
                f"**FAIL** {run.crashed}" if s == run.seed else "" for s in seeds)])
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,3,7"`` -> [0, 3, 7]."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"expected seeds like 0-4 or 0,2,3, got {text!r}")
        seeds.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(set(seeds))


def find_chapters(names: list[str], root: Path = ROOT) -> list[Path]:
    """Chapter notebooks by name (``ch05``, ``ch05_attention``, a path), or all of them."""
    every = chapters(root)
    if not names:
        return every
    found = []
    for name in names:
        path = Path(name)
        if path.suffix == ".ipynb" and path.exists():
            found.append(path.resolve())
            continue
        matches = [p for p in every if p.stem == name or p.stem.split("_")[0] == name]
        if not matches:
            raise ValueError(f"no chapter called {name!r}; expected one of "
                             f"{', '.join(p.stem.split('_')[0] for p in every)} or a notebook path")
        found.extend(matches)
    return found


def sweep(paths: list[Path], seeds: list[int], jobs: int = 2, timeout: int = 900,
          progress=print) -> list[Run]:
    """Every chapter with every seed, ``jobs`` kernels at a time (one thread each)."""
    work = [(p, s) for p in paths for s in seeds]

    def one(item):
        path, seed = item
        run = run_chapter(path, seed, timeout)
        if run.crashed:                 # a kernel that died or hung is not a verdict: once more
            progress(f"{path.stem} seed {seed}: the run stopped ({run.crashed[:120]}); retrying")
            run = run_chapter(path, seed, timeout)
        bad = len(run.failed) + bool(run.crashed)
        progress(f"{path.stem} seed {seed}: {run.wall_s:.0f} s wall, {run.cpu_s:.0f} s CPU, "
                 f"{'all checks hold' if not bad else f'{bad} FAILED'}")
        return run

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, work))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="ch01 ... ch06 or notebook paths (default: all)")
    parser.add_argument("--seeds", default="0-4", help="training seeds, e.g. 0-4 or 0,3 (default 0-4)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="kernels run at once, one thread each (default: the number of cores)")
    parser.add_argument("--timeout", type=int, default=900,
                        help="seconds a cell may run before the run counts as stopped (default 900)")
    parser.add_argument("--json", type=Path, help="also write every result to this file")
    args = parser.parse_args(argv)
    try:
        seeds, paths = parse_seeds(args.seeds), find_chapters(args.chapters)
    except ValueError as exc:
        parser.error(str(exc))
    start = time.perf_counter()
    runs = sweep(paths, seeds, args.jobs, args.timeout, progress=lambda m: print(m, flush=True))
    wall = time.perf_counter() - start
    print()
    print(table(runs, seeds))
    failures = sum(len(r.failed) + bool(r.crashed) for r in runs)
    checks = sum(c.check for r in runs for c in r.cells)
    print(f"\n{len(paths)} chapter(s) x {len(seeds)} seed(s): {checks} check runs, {failures} failed; "
          f"{wall:.0f} s wall, {sum(r.cpu_s for r in runs):.0f} s CPU over all kernels "
          f"({args.jobs} at a time)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([{**r.__dict__, "cells": [c.__dict__ for c in r.cells]}
                                         for r in runs], indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
