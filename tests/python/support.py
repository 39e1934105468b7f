"""Helpers the test modules import (a module of its own: conftest.py files of two folders
would otherwise shadow each other under the name `conftest`)."""
import importlib

import pytest


def need(module):
    """The module, or a skip saying it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.skip(f"{module} is not installed")


def gpu_or_skip():
    import jitexpr
    if not jitexpr.cuda_available():
        pytest.skip("no CUDA device: " + jitexpr.info()["cuda"]["reason"])
