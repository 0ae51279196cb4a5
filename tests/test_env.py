"""`python -m seqbook.env`: what a bug report needs, printed even where something is broken."""

import os
import platform
import subprocess
import sys

import matplotlib
import numpy
import torch

import seqbook
from seqbook.env import package_version, safely, seqbook_settings


def test_the_report_names_what_a_maintainer_needs():
    env = {**os.environ, "SEQBOOK_SEED": "3", "SEQBOOK_DEVICE": "cpu"}
    result = subprocess.run([sys.executable, "-m", "seqbook.env"], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines())
    report = {name: value.strip() for name, value in lines.items()}
    assert report["seqbook"].startswith(seqbook.__version__ + " (")
    assert report["Python"].startswith(platform.python_version() + " (")
    assert platform.system() in report["OS"]
    assert report["torch"].startswith(torch.__version__)
    assert report["CPU capability"] and "unavailable" not in report["CPU capability"]
    assert report["CUDA device" if not torch.cuda.is_available() else "CUDA device 0"]
    assert report["seqbook device"] == "cpu"                       # SEQBOOK_DEVICE is honoured
    assert report["numpy"] == numpy.__version__ and report["matplotlib"] == matplotlib.__version__
    assert report["ipywidgets"] == package_version("ipywidgets") != "not installed"
    assert {"SEQBOOK_SEED=3", "SEQBOOK_DEVICE=cpu"} <= set(report["settings"].split(", "))


def test_what_is_missing_or_broken_is_reported_not_raised():
    assert package_version("no-such-package-seqbook") == "not installed"
    assert safely(lambda: str(1 / 0)) == "unavailable (ZeroDivisionError: division by zero)"
    assert seqbook_settings({"PATH": "/bin"}) == "none set"
    assert seqbook_settings({"SEQBOOK_STATIC": "1", "HOME": "/"}) == "SEQBOOK_STATIC=1"
