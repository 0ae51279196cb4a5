"""Shared test set-up: quiet progress bars, and one thread per process so that parallel
workers (and the kernels nbval starts, which inherit this environment) do not fight over
the two cores of a CI machine."""

import os

os.environ.setdefault("SEQBOOK_QUIET", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def pytest_collection_modifyitems(items):
    """Slow tests first (the website test builds the whole book, executing every chapter): with
    `-n 2 --dist loadfile` one worker starts on it at once while the other runs everything else.
    Collected in name order, it used to start last and run alone for ten minutes."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
