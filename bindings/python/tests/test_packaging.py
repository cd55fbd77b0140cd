"""`pip install ./bindings/python` works offline: a wheel builds with Debian's setuptools and
holds the whole package, py.typed included, and nothing compiled."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PACKAGE_SRC = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("pip") is None, reason="python3-pip is not installed")
def test_wheel_builds_offline(tmp_path: Path) -> None:
    # From a copy: setuptools builds in the tree it is given and would litter the checkout.
    src = tmp_path / "src"
    shutil.copytree(PACKAGE_SRC, src, ignore=shutil.ignore_patterns(
        "tests", "build", "dist", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-index",
                    "--no-deps", "--quiet", "--wheel-dir", str(tmp_path / "wheels"), str(src)],
                   check=True, timeout=300)
    (wheel,) = (tmp_path / "wheels").glob("agentsbx-*-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f"agentsbx/{p.name}" for p in (PACKAGE_SRC / "agentsbx").glob("*.py")}
    assert modules | {"agentsbx/py.typed"} <= names
