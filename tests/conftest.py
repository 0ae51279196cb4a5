"""Shared test set-up: quiet progress bars, one thread per process so that parallel workers (and
the kernels nbval starts, which inherit this environment) do not fight over the two cores of a CI
machine, and the ``device`` fixture.

The equivalence and training tests take ``device``: they run on the CPU, and again on CUDA when
a GPU is present. The CUDA runs carry the ``gpu`` marker, so on a machine with a GPU
``pytest -m gpu tests`` runs exactly them; without one they are skipped."""

import os

os.environ.setdefault("SEQBOOK_QUIET", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


@pytest.fixture(params=[pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)])
def device(request) -> torch.device:
    """The device a test computes on: the CPU, then CUDA (with TF32 off, as the book runs it)."""
    if request.param == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device")
        from seqbook.device import exact_float32

        exact_float32()
    return torch.device(request.param)


def pytest_collection_modifyitems(items):
    """Slow tests first (the website test builds the whole book, executing every chapter): with
    `-n 2 --dist loadfile` one worker starts on it at once while the other runs everything else.
    Collected in name order, it used to start last and run alone for ten minutes."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
