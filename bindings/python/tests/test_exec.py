"""ws.exec: argv and shell strings, environment, cwd, stdin, timeouts, streaming."""

from __future__ import annotations

import asyncio
import math
import signal

import pytest

import agentsbx


def test_argv_runs_without_a_shell(ws: agentsbx.Workspace) -> None:
    r = ws.exec(["echo", "a b", "$HOME"])
    assert r.exit_code == 0 and r.ok
    assert r.stdout == b"a b $HOME\n"
    assert r.text == "a b $HOME\n"
    assert r.signal == 0 and not r.timed_out and not r.truncated
    assert r.duration_ms >= 0


def test_str_runs_through_the_shell(ws: agentsbx.Workspace) -> None:
    r = ws.exec("echo out; echo err >&2; exit 3")
    assert (r.exit_code, r.stdout_text, r.stderr_text) == (3, "out\n", "err\n")
    assert not r.ok


def test_binary_output_is_kept_exactly(ws: agentsbx.Workspace) -> None:
    r = ws.exec(["printf", r"\000\377\001"])
    assert r.stdout == b"\x00\xff\x01"


def test_env_adds_replaces_and_removes(ws: agentsbx.Workspace) -> None:
    r = ws.exec(["/usr/bin/env"], env={"A": "1", "PATH": "/usr/bin:/bin", "HOME": None})
    lines = r.stdout_text.splitlines()
    assert "A=1" in lines and "PATH=/usr/bin:/bin" in lines
    assert not any(line.startswith("HOME=") for line in lines)


def test_clear_env_keeps_only_the_given_names(ws: agentsbx.Workspace) -> None:
    r = ws.exec(["/usr/bin/env"], env={"ONLY": "x"}, clear_env=True)
    assert r.stdout_text == "ONLY=x\n"


def test_cwd_is_relative_to_the_root(ws: agentsbx.Workspace) -> None:
    ws.mkdir("sub/dir")
    r = ws.exec("pwd", cwd="sub/dir")
    assert r.stdout_text == ws.root + "/sub/dir\n"


def test_stdin_bytes_and_str(ws: agentsbx.Workspace) -> None:
    assert ws.exec(["cat"], stdin=b"\x00bytes").stdout == b"\x00bytes"
    assert ws.exec(["cat"], stdin="héllo").stdout == "héllo".encode()
    assert ws.exec(["cat"]).stdout == b""  # no stdin: end-of-file at once


def test_timeout_kills_and_is_reported(ws: agentsbx.Workspace) -> None:
    r = ws.exec(["sleep", "10"], timeout=0.2)
    assert r.timed_out and not r.ok
    assert r.duration_ms < 5000


def test_timeout_values(ws: agentsbx.Workspace) -> None:
    assert ws.exec(["true"], timeout=math.inf).ok
    with pytest.raises(agentsbx.InvalidArgumentError):
        ws.exec(["true"], timeout=0)


def test_killed_by_a_signal(ws: agentsbx.Workspace) -> None:
    r = ws.exec("kill -TERM $$")
    assert (r.exit_code, r.signal) == (-1, signal.SIGTERM)


def test_command_not_found_is_a_result(ws: agentsbx.Workspace) -> None:
    r = ws.exec(["no-such-command-here"])
    assert r.exit_code == 127 and r.stderr


def test_streaming_callback_sees_every_chunk(ws: agentsbx.Workspace) -> None:
    seen: list[tuple[str, bytes]] = []
    r = ws.exec("echo one; echo two >&2; echo three", on_output=lambda s, d: seen.append((s, d)))
    out = b"".join(d for s, d in seen if s == "stdout")
    err = b"".join(d for s, d in seen if s == "stderr")
    assert (out, err) == (b"one\nthree\n", b"two\n")
    assert (r.stdout, r.stderr) == (out, err)


def test_streaming_without_capture(ws: agentsbx.Workspace) -> None:
    seen = bytearray()
    r = ws.exec("head -c 100000 /dev/zero", on_output=lambda s, d: seen.extend(d), capture=False,
                max_output=10)
    assert len(seen) == 100000 and r.stdout == b""


def test_callback_exception_is_raised_after_the_command(ws: agentsbx.Workspace) -> None:
    calls = []

    def broken(stream: str, data: bytes) -> None:
        calls.append(data)
        raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        ws.exec("echo a; sleep 0.1; echo b", on_output=broken)
    assert len(calls) == 1  # not called again after it raised
    assert ws.exec(["true"]).ok  # the workspace is fine


def test_merge_stderr(ws: agentsbx.Workspace) -> None:
    r = ws.exec("echo a; echo b >&2", merge_stderr=True)
    assert r.stdout == b"a\nb\n" and r.stderr == b""


def test_max_output_truncates(ws: agentsbx.Workspace) -> None:
    r = ws.exec("head -c 5000 /dev/zero; head -c 300 /dev/zero >&2", max_output=1000)
    assert r.truncated and len(r.stdout) == 1000
    assert r.stdout_dropped == 4000 and r.stderr_dropped == 0
    assert ws.exec("echo hi").stdout_dropped == 0


def test_exec_async_runs_beside_the_loop(ws: agentsbx.Workspace) -> None:
    async def main() -> list[agentsbx.ExecResult]:
        return await asyncio.gather(*(ws.exec_async(f"sleep 0.2; echo {i}") for i in range(3)))

    results = asyncio.run(main())
    assert [r.stdout_text for r in results] == ["0\n", "1\n", "2\n"]
