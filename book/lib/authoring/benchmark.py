"""Execute each chapter in a fresh kernel and report its wall time and peak memory.

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
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"wall_s": wall, "peak_mib": peak_kib / 1024}))
"""


def run_one(path: Path) -> dict:
    env = {**os.environ, "SEQBOOK_QUIET": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(path.parent)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{path.name} failed to execute:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(results: dict[str, dict]) -> str:
    cpu = f"{os.cpu_count()} CPU cores, {platform.machine()}, torch threads = default"
    rows = [f"Measured {time.strftime('%Y-%m-%d')} on {cpu}, each chapter in a fresh kernel:", "",
            "| chapter | wall time (s) | peak memory of the kernel (MiB) |", "| --- | ---: | ---: |"]
    for name, r in results.items():
        rows.append(f"| `{name}` | {r['wall_s']:.0f} | {r['peak_mib']:.0f} |")
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
        print(f"{p.name}: {results[p.name]['wall_s']:.1f} s, {results[p.name]['peak_mib']:.0f} MiB", flush=True)
    text = table(results)
    print(text)
    if args.readme:
        write_readme(args.readme, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
