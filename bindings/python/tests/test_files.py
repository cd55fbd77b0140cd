"""The file functions, confined to the workspace root."""

from __future__ import annotations

import time

import pytest

import agentsbx


def test_write_read_round_trip(ws: agentsbx.Workspace) -> None:
    ws.write_file("a.bin", b"\x00\x01\xff")
    assert ws.read_file("a.bin") == b"\x00\x01\xff"
    ws.write_file("t.txt", "héllo")
    assert ws.read_file("t.txt") == "héllo".encode()
    ws.write_file("empty", b"")
    assert ws.read_file("empty") == b""


def test_commands_see_the_files(ws: agentsbx.Workspace) -> None:
    ws.write_file("seen.txt", b"from python")
    assert ws.exec(["cat", "seen.txt"]).stdout == b"from python"
    ws.exec("echo from-shell > made.txt")
    assert ws.read_file("made.txt") == b"from-shell\n"
    assert ws.read_file(ws.root + "/made.txt") == b"from-shell\n"  # absolute under the root


def test_mode_and_mkdirs(ws: agentsbx.Workspace) -> None:
    with pytest.raises(agentsbx.NotFoundError):
        ws.write_file("x/y/z.sh", b"#!/bin/sh\necho ran\n", mode=0o755)
    ws.write_file("x/y/z.sh", b"#!/bin/sh\necho ran\n", mode=0o755, mkdirs=True)
    assert ws.stat("x/y/z.sh").mode & 0o777 == 0o755
    assert ws.exec(["./x/y/z.sh"]).stdout == b"ran\n"


def test_stat(ws: agentsbx.Workspace) -> None:
    ws.write_file("s.txt", b"12345")
    st = ws.stat("s.txt")
    assert st.is_file and not st.is_dir and st.type == "file" and st.size == 5
    assert abs(st.mtime - time.time()) < 3600
    assert ws.stat(".").is_dir
    ws.exec("ln -s s.txt link")
    assert ws.stat("link").type == "symlink"  # not followed


def test_list_dir(ws: agentsbx.Workspace) -> None:
    ws.mkdir("d/sub")
    ws.write_file("d/b.txt", b"bb")
    ws.write_file("d/a.txt", b"a")
    entries = ws.list_dir("d")
    assert [(e["name"], e["type"]) for e in entries] == [("a.txt", "file"), ("b.txt", "file"),
                                                          ("sub", "dir")]
    assert entries[1]["size"] == 2


def test_mkdir_and_remove(ws: agentsbx.Workspace) -> None:
    ws.mkdir("p/q/r")
    assert ws.stat("p/q/r").is_dir
    ws.write_file("p/q/r/f", b"x")
    with pytest.raises(agentsbx.AgentSbxError):
        ws.remove("p")  # not empty
    ws.remove("p/q/r/f")
    assert not ws.exists("p/q/r/f")
    ws.remove("p", recursive=True)
    assert not ws.exists("p")


def test_symlink_out_of_the_root_is_not_followed(ws: agentsbx.Workspace) -> None:
    ws.exec("ln -s /etc/hostname out")
    with pytest.raises((agentsbx.EscapeError, agentsbx.PermissionDeniedError,
                        agentsbx.NotFoundError)):
        ws.read_file("out")
