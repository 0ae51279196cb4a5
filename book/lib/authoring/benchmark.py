"""Execute each chapter in a fresh kernel and report its wall time, CPU time and peak memory.

Wall time is what a reader waits; CPU time (user + system, all threads of the kernel) changes far
less when the machine is busy with something else, so compare chapters by it on a shared machine.

``python -m seqbook.authoring.benchmark [--readme README.md] [notebooks...]`` prints a Markdown
table and, with ``--readme``, replaces the table between the benchmark markers there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from . import chapters

BEGIN, END = "<!-- benchmark:begin -->", "<!-- benchmark:end -->"

# Run in a child process so that RUSAGE_CHILDREN measures this notebook's kernel alone.
_CHILD = r"""
import json, resource, sys, time
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
start = time.perf_counter()
NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_mib": usage.ru_maxrss / 1024}))
"""


def run_one(path: Path) -> dict:
    env = {**os.environ, "SEQBOOK_QUIET": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(path.parent)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{path.name} failed to execute:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(results: dict[str, dict]) -> str:
    threads = os.environ.get("OMP_NUM_THREADS", "default")
    cpu = f"{os.cpu_count()} CPU cores, {platform.machine()}, torch threads = {threads}"
    rows = [f"Measured {time.strftime('%Y-%m-%d')} on {cpu}, each chapter in a fresh kernel:", "",
            "| chapter | wall time (s) | CPU time of the kernel (s) | peak memory of the kernel (MiB) |",
            "| --- | ---: | ---: | ---: |"]
    for name, r in results.items():
        rows.append(f"| `{name}` | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['peak_mib']:.0f} |")
    return "\n".join(rows)


def write_readme(readme: Path, text: str) -> None:
    content = readme.read_text()
    start, end = content.index(BEGIN) + len(BEGIN), content.index(END)
    readme.write_text(content[:start] + "\n" + text + "\n" + content[end:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--readme", type=Path, help="README whose benchmark table to replace")
    args = parser.parse_args(argv)
    paths = args.notebooks or chapters()
    results = {}
    for p in paths:
        results[p.name] = run_one(p)
        r = results[p.name]
        print(f"{p.name}: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, {r['peak_mib']:.0f} MiB", flush=True)
    text = table(results)
    print(text)
    if args.readme:
        write_readme(args.readme, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
