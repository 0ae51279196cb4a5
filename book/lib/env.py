"""What a bug report needs to say about the machine: ``python -m seqbook.env`` prints it.

The versions and settings that decide how the book's code runs (seqbook, Python, PyTorch and the
hardware it computes on, NumPy, matplotlib, ipywidgets, the operating system and every
``SEQBOOK_*`` variable), one ``name: value`` line each, ready to paste into an issue. In a
notebook, run ``!python -m seqbook.env`` in a cell. A broken installation is what people report,
so nothing here is allowed to fail: what cannot be found or asked is printed as such.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys
from typing import Callable

PACKAGES = ["numpy", "matplotlib", "ipywidgets", "tqdm", "ipykernel", "jupyter-book"]


def package_version(name: str) -> str:
    """The installed version of the distribution ``name``, or ``not installed``."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def safely(probe: Callable[[], str]) -> str:
    """``probe()``, or what went wrong in it: a report must print even where things are broken."""
    try:
        return probe()
    except Exception as error:  # noqa: BLE001  (anything at all: the report goes on)
        return f"unavailable ({type(error).__name__}: {error})"


def _seqbook() -> str:
    from seqbook import __version__

    where = os.path.dirname(os.path.abspath(sys.modules["seqbook"].__file__))
    return f"{__version__} ({where})"


def _torch_lines() -> list[tuple[str, str]]:
    if importlib.util.find_spec("torch") is None:
        return [("torch", "not installed")]
    import torch

    build = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    lines = [("torch", f"{torch.__version__} ({build})"),
             ("torch threads", str(torch.get_num_threads()))]
    get_capability = getattr(torch.backends.cpu, "get_cpu_capability", None)
    lines.append(("CPU capability", get_capability() if get_capability else "not reported by this torch"))
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(i)
            lines.append((f"CUDA device {i}", f"{torch.cuda.get_device_name(i)} (compute capability {major}.{minor})"))
        lines.append(("cuDNN", str(torch.backends.cudnn.version())))
    else:
        lines.append(("CUDA device", "none"))
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        lines.append(("MPS (Apple GPU)", "available"))
    return lines


def _picked_device() -> str:
    from seqbook.device import pick_device

    return str(pick_device())


def _matplotlib_backend() -> str:
    if importlib.util.find_spec("matplotlib") is None:
        return "not installed"
    import matplotlib

    return matplotlib.get_backend()


def _in_colab() -> str:
    found = importlib.util.find_spec("google") is not None and importlib.util.find_spec("google.colab") is not None
    return "yes" if found else "no"


def seqbook_settings(environ=os.environ) -> str:
    """Every ``SEQBOOK_*`` environment variable as ``NAME=value``, or ``none set``."""
    settings = [f"{name}={value}" for name, value in sorted(environ.items()) if name.startswith("SEQBOOK_")]
    return ", ".join(settings) or "none set"


def report() -> list[tuple[str, str]]:
    """The report as (name, value) pairs, in the order it prints."""
    lines = [("seqbook", safely(_seqbook)),
             ("Python", f"{platform.python_version()} ({platform.python_implementation()}, {sys.executable})"),
             ("OS", safely(platform.platform)),
             ("machine", f"{platform.machine()}, {os.cpu_count()} CPU cores"),
             ("in Colab", safely(_in_colab))]
    try:
        lines += _torch_lines()
    except Exception as error:  # noqa: BLE001
        lines.append(("torch", f"unavailable ({type(error).__name__}: {error})"))
    lines.append(("seqbook device", safely(_picked_device)))
    lines += [(name, package_version(name)) for name in PACKAGES]
    lines.append(("matplotlib backend", safely(_matplotlib_backend)))
    lines.append(("settings", seqbook_settings()))
    return lines


def format_report(lines: list[tuple[str, str]]) -> str:
    width = max(len(name) for name, _ in lines)
    return "\n".join(f"{name + ':':<{width + 1}} {value}" for name, value in lines)


if __name__ == "__main__":
    print(format_report(report()))
