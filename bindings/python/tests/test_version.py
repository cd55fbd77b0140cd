"""The binding's idea of which function came in which version agrees with the library's
version script, and a function newer than the loaded library fails naming the version."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentsbx
from agentsbx import _native

REPO = Path(__file__).resolve().parents[3]
MAP = REPO / "src" / "libagentsbx.map"


def map_nodes() -> dict[str, tuple[int, int]]:
    """symbol -> (major, minor) of the node that exports it."""
    found: dict[str, tuple[int, int]] = {}
    for node, body in re.findall(r"^AGENTSBX_([0-9.]+) \{(.*?)^\}", MAP.read_text(), re.S | re.M):
        parts = [int(p) for p in node.split(".")] + [0]
        for name in re.findall(r"^\s*(sbx_[a-z_0-9]+);", body, re.M):
            found[name] = (parts[0], parts[1])
    return found


@pytest.mark.skipif(not MAP.is_file(), reason="not in a source checkout (no src/libagentsbx.map)")
def test_since_table_matches_the_version_script() -> None:
    nodes = map_nodes()
    api = {name: nodes[name] for name in _native.PROTOTYPES}
    assert {n: v for n, v in api.items() if v != (1, 0)} == _native.SINCE


def test_package_version_is_the_library_version() -> None:
    assert agentsbx.version() == agentsbx.__version__
    lib = _native.load()
    assert ".".join(map(str, lib.version)) == agentsbx.version()


def test_a_function_newer_than_the_library_names_the_version_it_needs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = _native.load()
    # As if quarantine came in the next minor version: this library must not offer it,
    # whatever it exports.
    major, minor = real.version[0], real.version[1] + 1
    monkeypatch.setitem(_native.SINCE, "sbx_workspace_git_quarantine", (major, minor))
    lib = _native.Library(real.cdll, real.path)
    assert not lib.has("sbx_workspace_git_quarantine")
    assert lib.has("sbx_workspace_open_with")
    with pytest.raises(agentsbx.NotSupportedError, match=rf"needs libagentsbx {major}\.{minor} or newer"):
        lib.sbx_workspace_git_quarantine(None, None)


def test_a_library_before_1_6_is_judged_by_its_symbols() -> None:
    real = _native.load()
    # Those builds all said "1.0.0", whatever they exported.
    old = _native.Library(real.cdll, real.path, version=(1, 0, 0))
    assert old.has("sbx_workspace_git_quarantine")
    assert old.has("sbx_manager_open")


def test_a_library_missing_a_function_of_its_version_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = _native.load()
    monkeypatch.setitem(_native.PROTOTYPES, "sbx_not_there", (None, []))
    with pytest.raises(agentsbx.LibraryNotFoundError, match="does not export sbx_not_there"):
        _native.Library(real.cdll, real.path)
