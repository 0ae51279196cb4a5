"""Shared test set-up: quiet progress bars, and one thread per process so that parallel
workers (and the kernels nbval starts, which inherit this environment) do not fight over
the two cores of a CI machine."""

import os

os.environ.setdefault("SEQBOOK_QUIET", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
