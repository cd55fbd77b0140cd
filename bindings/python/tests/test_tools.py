"""Agent tools, instructions, the approval handler and the audit log."""

from __future__ import annotations

import json
import os

import pytest

import agentsbx


def test_tools_lists_the_core_tools(ws: agentsbx.Workspace) -> None:
    tools = ws.tools()
    names = [t["name"] for t in tools]
    assert names[:4] == ["Bash", "Read", "Write", "Edit"]
    for tool in tools:
        assert tool["description"] and tool["input_schema"]["type"] == "object"


def test_bash_write_read_edit_round_trip(ws: agentsbx.Workspace) -> None:
    r = ws.tool_call("Bash", {"command": "mkdir -p proj && cd proj && pwd"})
    assert r["ok"] and r["output"] == ws.root + "/proj\n"
    assert r["metadata"]["exit_code"] == 0

    r = ws.tool_call("Write", {"file_path": "proj/hello.txt", "content": "hello world\n"})
    assert r["ok"], r["output"]
    assert ws.read_file("proj/hello.txt") == b"hello world\n"

    r = ws.tool_call("Read", {"file_path": "proj/hello.txt"})
    assert r["ok"] and "hello world" in r["output"]

    r = ws.tool_call("Edit", {"file_path": "proj/hello.txt", "old_string": "world",
                              "new_string": "sandbox"})
    assert r["ok"], r["output"]
    assert ws.read_file("proj/hello.txt") == b"hello sandbox\n"

    r = ws.tool_call("Bash", {"command": "cat hello.txt"})  # the session kept its cwd
    assert r["output"] == "hello sandbox\n"


def test_args_as_json_text_and_sessions(ws: agentsbx.Workspace) -> None:
    ws.tool_call("Bash", '{"command": "mkdir -p a && cd a"}', session_id="one")
    assert ws.tool_call("Bash", {"command": "pwd"}, session_id="one")["output"].endswith("/a\n")
    assert ws.tool_call("Bash", {"command": "pwd"}, session_id="two")["output"] == ws.root + "\n"


def test_tool_errors_are_results(ws: agentsbx.Workspace) -> None:
    r = ws.tool_call("Read", {"file_path": "missing.txt"})
    assert r["ok"] is False and r["output"]
    r = ws.tool_call("Read", {"file_path": "../../etc/hostname"})
    assert r["ok"] is False and "escapes" in r["output"]
    r = ws.tool_call("NoSuchTool", {})
    assert r["ok"] is False and "no tool named" in r["output"]
    r = ws.tool_call("Bash", "{not json")
    assert r["ok"] is False and "not valid JSON" in r["output"]
    r = ws.tool_call("Bash", {"command": 42})
    assert r["ok"] is False and "invalid arguments" in r["output"]


def test_instructions(ws: agentsbx.Workspace) -> None:
    text = ws.instructions()
    assert ws.root in text


def test_approval_deny_with_reason_and_allow(ws: agentsbx.Workspace) -> None:
    requests: list[dict[str, object]] = []

    def only_reads(request: dict[str, object]) -> agentsbx.ApprovalVerdict:
        requests.append(request)
        return True if request["class"] == "read" else "writes are not allowed today"

    ws.write_file("f.txt", b"content\n")
    ws.set_approval_handler(only_reads)
    r = ws.tool_call("Write", {"file_path": "g.txt", "content": "x"})
    assert r["ok"] is False and "writes are not allowed today" in r["output"]
    assert not ws.exists("g.txt")
    assert ws.tool_call("Read", {"file_path": "f.txt"})["ok"]
    with pytest.raises(agentsbx.PermissionDeniedError, match="writes are not allowed today"):
        ws.exec(["touch", "h.txt"])
    with pytest.raises(agentsbx.PermissionDeniedError):
        ws.spawn(["true"])
    assert requests[0] == {"kind": "tool", "tool": "Write", "class": "write",
                           "session_id": "default",
                           "arguments": {"file_path": "g.txt", "content": "x"}}
    assert requests[2]["kind"] == "exec" and requests[2]["argv"] == ["touch", "h.txt"]

    ws.set_approval_handler(None)
    assert ws.exec(["touch", "h.txt"]).ok


@pytest.mark.parametrize("verdict, allowed", [
    (None, True), (True, True), (False, False), ("no", False), ((True, "fine"), True),
    ((False, "tuple says no"), False), ("", False),
])
def test_approval_verdicts(local_ws: agentsbx.Workspace, verdict: agentsbx.ApprovalVerdict,
                           allowed: bool) -> None:
    local_ws.set_approval_handler(lambda request: verdict)
    r = local_ws.tool_call("Bash", {"command": "echo ran"})
    assert r["ok"] is allowed
    if not allowed:
        reason = verdict[1] if isinstance(verdict, tuple) else verdict
        assert (reason or "denied by the approval handler") in r["output"]


def test_a_long_reason_is_cut_to_fit(local_ws: agentsbx.Workspace) -> None:
    local_ws.set_approval_handler(lambda request: "é" * 5000)
    r = local_ws.tool_call("Bash", {"command": "true"})
    assert r["ok"] is False and "éé" in r["output"] and "\ufffd" not in r["output"]


def test_a_raising_handler_denies_and_raises(local_ws: agentsbx.Workspace) -> None:
    def broken(request: dict[str, object]) -> bool:
        raise KeyError("oops")

    local_ws.set_approval_handler(broken)
    with pytest.raises(KeyError):
        local_ws.tool_call("Write", {"file_path": "x.txt", "content": "x"})
    assert not local_ws.exists("x.txt")
    with pytest.raises(KeyError):
        local_ws.exec(["true"])
    local_ws.set_approval_handler(lambda request: [1, 2])  # type: ignore  # not a verdict
    with pytest.raises(TypeError):
        local_ws.exec(["true"])
    local_ws.set_approval_handler(None)
    assert local_ws.exec(["true"]).ok


def test_audit_log_records_calls(ws: agentsbx.Workspace) -> None:
    ws.tool_call("Bash", {"command": "echo audited"})
    ws.exec(["true"])
    path = ws.audit_path
    if path is None:
        pytest.skip("no audit log on this backend")
    with open(path) as f:
        records = [json.loads(line) for line in f]
    assert any(r.get("tool") == "Bash" for r in records)


def test_git_quarantine_reports_what_a_command_planted(ws: agentsbx.Workspace,
                                                       backend: str) -> None:
    r = ws.tool_call("Bash", {"command": "mkdir -p r/.git/hooks && printf '#!/bin/sh\\n' > "
                                         "r/.git/hooks/pre-commit"})
    report = ws.git_quarantine()
    if backend == "local":      # commands run on the host there: nothing to guard
        assert report == {"guarded": False, "items": []}
        return
    assert report["guarded"] is True
    assert [i["path"] for i in report["items"]] == ["r/.git/hooks/pre-commit"]
    # In the state folder, outside the workdir: its host path.
    assert "/quarantine/" in report["items"][0]["moved_to"]
    assert os.path.isabs(report["items"][0]["moved_to"])
    assert r["metadata"]["git_quarantined"] == 1
