"""One version, single-sourced: CMakeLists.txt's project(VERSION) is jitexpr.__version__, what
info() reports and, when the package is installed (a wheel, pip install .), its distribution's
version (pyproject.toml reads it from CMakeLists.txt)."""
import importlib.metadata
import pathlib
import re

import pytest

import jitexpr

CMAKELISTS = pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt"


def project_version():
    m = re.search(r"project\(jitexpr VERSION ([0-9]+\.[0-9]+\.[0-9]+)", CMAKELISTS.read_text())
    assert m, f"no project(jitexpr VERSION x.y.z) in {CMAKELISTS}"
    return m.group(1)


def test_the_package_version_is_the_cmake_projects():
    assert jitexpr.__version__ == project_version()


def test_info_reports_the_package_version():
    assert jitexpr.info()["version"] == jitexpr.__version__


def test_the_installed_distribution_has_the_package_version():
    try:
        dist = importlib.metadata.distribution("jitexpr")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("jitexpr is imported from a build tree, not installed")
    here = pathlib.Path(jitexpr.__file__).resolve()
    if pathlib.Path(dist.locate_file("jitexpr/__init__.py")).resolve() != here:
        pytest.skip(f"jitexpr is imported from {here.parent}, not from the installed distribution")
    assert dist.version == jitexpr.__version__
