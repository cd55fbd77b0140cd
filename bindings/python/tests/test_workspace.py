"""Opening, closing, the context managers, identity, reset."""

from __future__ import annotations

import asyncio
import gc
import json
import os

import pytest

import agentsbx


def test_identity(backend: str) -> None:
    with agentsbx.Workspace(json.dumps({"backend": backend, "id": "py-ident"})) as ws:
        assert (ws.id, ws.backend) == ("py-ident", backend)
        assert ws.root == ("/workspace" if backend == "ns" else ws.root)
        assert "py-ident" in repr(ws)


def test_with_closes(backend: str) -> None:
    with agentsbx.Workspace({"backend": backend}) as ws:
        assert not ws.closed
    assert ws.closed
    with pytest.raises(agentsbx.StateError):
        ws.exec(["true"])
    ws.close()  # idempotent
    assert ws.id  # still readable after close


def test_async_with_closes(backend: str) -> None:
    async def main() -> agentsbx.Workspace:
        async with agentsbx.Workspace({"backend": backend}) as ws:
            assert (await ws.exec_async(["echo", "hi"])).stdout == b"hi\n"
            return ws

    assert asyncio.run(main()).closed


def test_temporary_workdir_is_removed_at_close(tmp_path: os.PathLike[str]) -> None:
    ws = agentsbx.Workspace({"backend": "local"})
    root = ws.root
    assert os.path.isdir(root)
    ws.close()
    assert not os.path.exists(root)


def test_garbage_collection_closes() -> None:
    ws = agentsbx.Workspace({"backend": "local"})
    root = ws.root
    del ws
    gc.collect()
    assert not os.path.exists(root)


def test_config_none_and_text() -> None:
    with agentsbx.Workspace('{"backend":"local","env":{"X":"y"}}') as ws:
        assert ws.exec("echo $X").stdout == b"y\n"


def test_reset_restores_the_empty_baseline(ws: agentsbx.Workspace) -> None:
    ws.write_file("a.txt", b"x")
    ws.reset()
    assert not ws.exists("a.txt")
    assert ws.exec(["true"]).ok


def test_host_workdir(tmp_path: os.PathLike[str]) -> None:
    with agentsbx.Workspace({"backend": "local", "workdir": str(tmp_path)}) as ws:
        ws.write_file("kept.txt", "kept")
    assert open(os.path.join(tmp_path, "kept.txt")).read() == "kept"


def test_set_network_on_an_allowlist_workspace() -> None:
    from conftest import skip_unless_backend
    skip_unless_backend("ns")
    with agentsbx.Workspace({"backend": "ns",
                             "network": {"mode": "allowlist", "allow": ["example.org"]}}) as w:
        assert "HTTPS_PROXY=" in w.exec("env").stdout_text
        w.set_network({"mode": "allowlist", "allow": ["example.com"], "deny": []})
        with pytest.raises(agentsbx.ConfigError):
            w.set_network({"mode": "allowlist", "allow": ["bad host name!"]})
        with pytest.raises(agentsbx.AgentSbxError):
            w.set_network({"mode": "host"})
