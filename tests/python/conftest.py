"""pytest suite of the Python package (scripts/test.sh runs it in a fresh venv after
`pip install .`). Optional peers (numexpr, pandas, pyarrow, polars, duckdb, cupy, torch) are
skipped, saying so, where they are not installed; GPU tests skip without a CUDA device."""
import importlib
import os

import pytest

os.environ.setdefault("JITEXPR_DISK_CACHE", "0")


def need(module):
    """The module, or a skip saying it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.skip(f"{module} is not installed")


@pytest.fixture
def jx():
    import jitexpr
    return jitexpr


def gpu_or_skip():
    import jitexpr
    if not jitexpr.cuda_available():
        pytest.skip("no CUDA device: " + jitexpr.info()["cuda"]["reason"])
