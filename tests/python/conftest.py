"""pytest suite of the Python package (scripts/test.sh runs it in a fresh venv after
`pip install .`). Optional peers (numexpr, pandas, pyarrow, polars, duckdb, cupy, torch) are
skipped, saying so, where they are not installed; GPU tests skip without a CUDA device."""
import os

import pytest

os.environ.setdefault("JITEXPR_DISK_CACHE", "0")


@pytest.fixture
def jx():
    import jitexpr
    return jitexpr
