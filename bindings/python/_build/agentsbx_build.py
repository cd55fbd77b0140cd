"""The package's build backend (PEP 517), standard library only.

The package is pure Python, so a wheel is a zip of agentsbx/ with its metadata. setuptools
built it before, but setuptools builds inside the source tree (build/, *.egg-info), so
`pip install /path/to/bindings/python` wrote into the checkout (and failed where the checkout
is not writable), and it had to come from Debian (--no-build-isolation). This backend needs
nothing: `pip install <path>` works offline, from anywhere, and writes only the wheel.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "agentsbx"


def _project() -> dict[str, object]:
    """The [project] fields this backend uses, read from pyproject.toml (tomllib is 3.11+)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def field(key: str) -> str:
        m = re.search(rf'^{key}\s*=\s*"([^"]*)"', section, re.M)
        if not m:
            raise ValueError(f"pyproject.toml: [project] has no {key}")
        return m.group(1)

    classifiers = re.findall(r'^\s*"([^"]+ :: [^"]+)",?$', section, re.M)
    return {"version": field("version"), "summary": field("description"),
            "requires_python": field("requires-python"), "classifiers": classifiers}


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {p['version']}",
             f"Summary: {p['summary']}", "License: Apache-2.0",
             f"Requires-Python: {p['requires_python']}"]
    lines += [f"Classifier: {c}" for c in p["classifiers"]]  # type: ignore[union-attr]
    lines.append("Description-Content-Type: text/markdown")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + readme


def _package_files() -> list[Path]:
    pkg = ROOT / NAME
    return sorted(p for p in pkg.iterdir() if p.suffix == ".py" or p.name == "py.typed")


def _dist_info() -> str:
    return f"{NAME}-{_project()['version']}.dist-info"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings=None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None) -> str:
    info = Path(metadata_directory) / _dist_info()
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata(), encoding="utf-8")
    return info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    version = _project()["version"]
    wheel_name = f"{NAME}-{version}-py3-none-any.whl"
    info = _dist_info()
    entries: list[tuple[str, bytes]] = [
        (f"{NAME}/{p.name}", p.read_bytes()) for p in _package_files()]
    entries.append((f"{info}/METADATA", _metadata().encode()))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: agentsbx_build\n"
                                     b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    entries.append((f"{info}/top_level.txt", f"{NAME}\n".encode()))
    record = [_record_line(n, d) for n, d in entries] + [f"{info}/RECORD,,"]
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    target = Path(wheel_directory) / wheel_name
    partial = target.with_name(target.name + ".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data,
                       zipfile.ZIP_DEFLATED)
    os.replace(partial, target)   # never a half-written wheel under its own name
    return wheel_name


def build_sdist(sdist_directory, config_settings=None) -> str:
    base = f"{NAME}-{_project()['version']}"
    files = [ROOT / "pyproject.toml", ROOT / "README.md", Path(__file__).resolve(),
             *_package_files()]
    target = Path(sdist_directory) / f"{base}.tar.gz"
    partial = target.with_name(target.name + ".part")
    with tarfile.open(partial, "w:gz") as tar:
        for f in files:
            tar.add(f, arcname=f"{base}/{f.relative_to(ROOT)}")
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg_info)
        tar.addfile(ti, io.BytesIO(pkg_info))
    os.replace(partial, target)
    return target.name
