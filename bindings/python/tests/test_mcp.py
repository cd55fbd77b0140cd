"""MCP servers from Python: the npm filesystem server (tests/mcp, installed by
tests/mcp/install.sh) runs inside an ns workspace and lists the workspace's files."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentsbx
from conftest import REPO, requires, skip_unless_backend

SERVERS = REPO / "tests" / "mcp"
FS_SERVER = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"


@pytest.fixture
def mcp_workspace(tmp_path: Path):
    skip_unless_backend("ns")
    if not (SERVERS / FS_SERVER).exists():
        pytest.skip("the npm MCP servers are not installed (sh tests/mcp/install.sh)")
    config = {"backend": "ns", "workdir": str(tmp_path),
              "ns": {"binds": [{"source": str(SERVERS), "dest": "/opt/mcp"}]}}
    with agentsbx.Workspace(config) as ws:
        yield ws


@requires("sbx_mcp_add")
def test_filesystem_server_lists_the_workspace(mcp_workspace: agentsbx.Workspace) -> None:
    ws = mcp_workspace
    ws.write_file("hello.txt", b"hi\n")
    ws.mcp_add("fs", {"command": "node", "args": [f"/opt/mcp/{FS_SERVER}", "/workspace"]})
    assert [d["name"] for d in ws.mcp_list()] == ["fs"]
    names = {t["name"] for t in ws.mcp_tools("fs")}
    assert "list_directory" in names
    result = ws.mcp_call("fs", "list_directory", {"path": "/workspace"})
    text = "".join(c.get("text", "") for c in result["content"])
    assert "hello.txt" in text
    # The same tool through the agent toolbox, as a model would call it.
    assert any(t["name"] == "mcp__fs__list_directory" for t in ws.tools())
    res = ws.tool_call("mcp__fs__read_text_file", {"path": "/workspace/hello.txt"})
    assert res["ok"] and "hi" in res["output"]
    # A host file is out of the server's reach: it runs inside the sandbox.
    res = ws.tool_call("mcp__fs__read_text_file", {"path": "/etc/shadow"})
    assert not res["ok"] or "shadow" not in res["output"].split("\n")[0] or "denied" in res["output"].lower()
    ws.mcp_remove("fs")
    assert ws.mcp_list() == []


@requires("sbx_mcp_add")
def test_bad_declarations_raise(mcp_workspace: agentsbx.Workspace) -> None:
    with pytest.raises(agentsbx.AgentSbxError) as e:
        mcp_workspace.mcp_add("bad name!", {"command": "node"})
    assert e.value.code < 0
    with pytest.raises(agentsbx.NotFoundError):
        mcp_workspace.mcp_remove("never-added")


HTTP_SERVER = SERVERS / "http-counter-server.js"


@pytest.fixture
def http_server():
    """tests/mcp/http-counter-server.js on a free loopback port: its base URL."""
    import shutil
    import socket
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([node, str(HTTP_SERVER)], env={"PORT": str(port)},
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "listening"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


@requires("sbx_mcp_add")
def test_remote_http_server(http_server: str, tmp_path: Path) -> None:
    # The local backend has the host's network, so the host may reach the loopback server.
    with agentsbx.Workspace({"backend": "local", "workdir": str(tmp_path)}) as ws:
        ws.mcp_add("web", {"type": "http", "url": http_server,
                           "headers": {"Authorization": "Bearer py-token"}})
        assert {t["name"] for t in ws.mcp_tools("web")} >= {"incr", "headers"}
        assert ws.mcp_call("web", "incr", {})["content"][0]["text"] == "1"
        assert "py-token" in ws.mcp_call("web", "headers", {})["content"][0]["text"]
        res = ws.tool_call("mcp__web__incr", {})
        assert res["ok"] and res["output"] == "2"
        with pytest.raises(agentsbx.InvalidArgumentError) as e:
            ws.mcp_add("bad", {"type": "http", "url": "ftp://example.com/"})
        assert '"url"' in str(e.value)
        with pytest.raises(agentsbx.InvalidArgumentError) as e:
            ws.mcp_add("bad", {"type": "http", "url": http_server,
                               "headers": {"X-A": "1\r\nEvil: 2"}})
        assert '"headers"' in str(e.value)
