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
