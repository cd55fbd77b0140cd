"""Shared fixtures: a workspace per backend (local and ns), and skips for what this host or
this library build does not have.

Run with Debian's interpreter from the repository root, after `meson compile -C build`:
    AGENTSBX_LIB=build/libagentsbx.so.1 PYTHONPATH=bindings/python \
        /usr/bin/python3 -m pytest -q bindings/python/tests
(`meson test -C build --suite bindings` sets both.)
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentsbx

BACKENDS = ["local", "ns"]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session", autouse=True)
def private_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The library keeps each workdir's state folder (and private HOME) below
    $XDG_STATE_HOME: the session's own, so that tests leave nothing in the user's."""
    old = os.environ.get("XDG_STATE_HOME")
    home = tmp_path_factory.mktemp("xdg-state")
    os.environ["XDG_STATE_HOME"] = str(home)
    yield home
    if old is None:
        del os.environ["XDG_STATE_HOME"]
    else:
        os.environ["XDG_STATE_HOME"] = old


def state_dir(workdir: str | Path) -> Path:
    """The state folder the library keeps for workdir (src/state.c: base name and the first
    16 hex digits of the SHA-256 of the canonical path)."""
    real = os.path.realpath(workdir)
    digest = hashlib.sha256(real.encode()).hexdigest()[:16]
    return (Path(os.environ["XDG_STATE_HOME"]) / "agentsbx" / "workspaces"
            / f"{os.path.basename(real)}-{digest}")


@functools.lru_cache(maxsize=None)
def backend_detail(name: str) -> str | None:
    """None when the backend works on this host, else why not."""
    for entry in agentsbx.backends():
        if entry["backend"] == name:
            return None if entry["available"] else str(entry.get("detail", "unavailable"))
    return "not built"


def skip_unless_backend(name: str) -> None:
    why = backend_detail(name)
    if why is not None:
        pytest.skip(f"backend {name} does not work here: {why}")


def requires(symbol: str) -> pytest.MarkDecorator:
    """Skips a test of a function the loaded library does not export yet (being merged)."""
    return pytest.mark.skipif(not agentsbx.has_function(symbol),
                              reason=f"{agentsbx.library_path()} has no {symbol} yet")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    skip_unless_backend(request.param)
    return str(request.param)


@pytest.fixture
def ws(backend: str) -> Iterator[agentsbx.Workspace]:
    with agentsbx.Workspace({"backend": backend}) as workspace:
        yield workspace


@pytest.fixture
def local_ws() -> Iterator[agentsbx.Workspace]:
    with agentsbx.Workspace({"backend": "local"}) as workspace:
        yield workspace


def build_root() -> Path | None:
    """The meson build directory: $SBX_TEST_BUILD_ROOT, or the library's own directory."""
    if os.environ.get("SBX_TEST_BUILD_ROOT"):
        return Path(os.environ["SBX_TEST_BUILD_ROOT"])
    lib = Path(agentsbx.library_path())
    return lib.parent if lib.is_absolute() else None
