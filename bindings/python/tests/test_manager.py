"""The workspace manager from Python: policies, sharing, release, and reattach by id."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentsbx
from conftest import requires


@requires("sbx_manager_open")
def test_policies_and_sharing(tmp_path: Path) -> None:
    config = {"workspace": {"backend": "local"}, "base_dir": str(tmp_path), "policy": "per_agent"}
    with agentsbx.Manager(config) as mgr:
        a = mgr.get("alice", "coder", "s1")
        b = mgr.get("alice", "coder", "s2")        # same agent: the same workspace
        c = mgr.get("bob", "coder", "s1")          # another user: never the same
        assert a.id == b.id and a.id != c.id
        a.exec("echo shared > note.txt")
        assert b.read_file("note.txt") == b"shared\n"
        assert c.exec("cat note.txt").exit_code != 0
        ids = {w["id"] for w in mgr.list()}
        assert {a.id, c.id} <= ids
        for w in (a, b, c):
            w.close()                               # gives it back; the sandbox stays
        again = mgr.get_by_id(a.id)
        assert again.read_file("note.txt") == b"shared\n"
        again.close()
        mgr.close_workspace(c.id)
        assert mgr.gc() >= 0


@requires("sbx_manager_open")
def test_bad_ids_and_config_raise(tmp_path: Path) -> None:
    with pytest.raises(agentsbx.ConfigError):
        agentsbx.Manager({"policy": "per_planet", "base_dir": str(tmp_path)})
    with agentsbx.Manager({"workspace": {"backend": "local"}, "base_dir": str(tmp_path)}) as mgr:
        with pytest.raises(agentsbx.AgentSbxError):
            mgr.get("", "coder")
