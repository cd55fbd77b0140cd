"""`pip install /path/to/bindings/python` works offline: a wheel builds with the package's own
backend (standard library only, even in pip's isolated build environment), holds the whole
package, py.typed included, nothing compiled, and nothing is written into the checkout."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PACKAGE_SRC = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("pip") is None, reason="python3-pip is not installed")
def test_wheel_builds_offline(tmp_path: Path) -> None:
    before = sorted(p for p in PACKAGE_SRC.rglob("*") if "__pycache__" not in p.parts)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "--quiet",
                    "--wheel-dir", str(tmp_path / "wheels"), str(PACKAGE_SRC)],
                   check=True, timeout=300)
    after = sorted(p for p in PACKAGE_SRC.rglob("*") if "__pycache__" not in p.parts)
    assert after == before, "the build wrote into the checkout"
    (wheel,) = (tmp_path / "wheels").glob("agentsbx-*-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f"agentsbx/{p.name}" for p in (PACKAGE_SRC / "agentsbx").glob("*.py")}
    assert modules | {"agentsbx/py.typed"} <= names
