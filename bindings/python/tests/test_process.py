"""ws.spawn: long-running processes under asyncio, and the blocking variants."""

from __future__ import annotations

import asyncio
import gc
import signal
import time
from collections.abc import Awaitable, Callable

import pytest

import agentsbx

Body = Callable[[agentsbx.Workspace], Awaitable[None]]


def run(body: Body, ws: agentsbx.Workspace) -> None:
    asyncio.run(asyncio.wait_for(body(ws), timeout=30))


def test_write_stdin_read_stdout_wait(ws: agentsbx.Workspace) -> None:
    async def body(ws: agentsbx.Workspace) -> None:
        with ws.spawn(["cat"]) as proc:
            proc.write(b"ping\n")
            assert await proc.read_stdout() == b"ping\n"
            await proc.write_async("pong\n")
            assert await proc.read_stdout() == b"pong\n"
            proc.close_stdin()
            assert await proc.read_stdout() == b""
            assert await proc.wait() == 0
            assert proc.exit_code == 0 and proc.term_signal == 0

    run(body, ws)


def test_async_iteration_over_both_streams(ws: agentsbx.Workspace) -> None:
    async def body(ws: agentsbx.Workspace) -> None:
        with ws.spawn("echo out; echo err >&2; exit 5") as proc:
            got: dict[str, bytes] = {"stdout": b"", "stderr": b""}
            async for stream, chunk in proc:
                got[stream] += chunk
            assert got == {"stdout": b"out\n", "stderr": b"err\n"}
            assert await proc.wait() == 5

    run(body, ws)


def test_the_loop_keeps_running_while_reading(ws: agentsbx.Workspace) -> None:
    async def body(ws: agentsbx.Workspace) -> None:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.ensure_future(ticker())
        with ws.spawn("sleep 0.3; echo late") as proc:
            assert await proc.read_stdout() == b"late\n"
            await proc.wait()
        task.cancel()
        assert ticks >= 10  # a blocking read would have starved the ticker

    run(body, ws)


def test_kill_and_signal(ws: agentsbx.Workspace) -> None:
    async def body(ws: agentsbx.Workspace) -> None:
        with ws.spawn(["sleep", "60"]) as proc:
            started = time.monotonic()
            proc.kill()
            assert await proc.wait() == -1
            assert proc.term_signal == signal.SIGKILL
            assert time.monotonic() - started < 5
        with ws.spawn(["sleep", "60"]) as proc:
            proc.signal(signal.SIGTERM)
            await proc.wait()
            assert proc.term_signal == signal.SIGTERM

    run(body, ws)


def test_wait_timeout(ws: agentsbx.Workspace) -> None:
    async def body(ws: agentsbx.Workspace) -> None:
        with ws.spawn(["sleep", "60"]) as proc:
            with pytest.raises(agentsbx.TimedOutError):
                await proc.wait(timeout=0.1)
        # closing the handle killed and reaped it

    run(body, ws)


def test_communicate_with_large_input(ws: agentsbx.Workspace) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: more than a pipe holds, both ways
    async def body(ws: agentsbx.Workspace) -> None:
        async with ws.spawn(["cat"]) as proc:
            out, err = await proc.communicate(data)
            assert out == data and err == b""
            assert proc.exit_code == 0

    run(body, ws)


def test_merge_stderr_and_cwd_env(ws: agentsbx.Workspace) -> None:
    ws.mkdir("work")
    async def body(ws: agentsbx.Workspace) -> None:
        with ws.spawn('pwd; echo "$V" >&2', cwd="work", env={"V": "v"}, merge_stderr=True) as proc:
            out, err = await proc.communicate()
            assert out == (ws.root + "/work\nv\n").encode() and err == b""
            with pytest.raises(agentsbx.StateError):
                proc.fileno("stderr")  # merged: there is no stderr pipe

    run(body, ws)


def test_sync_variants(ws: agentsbx.Workspace) -> None:
    with ws.spawn(["cat"]) as proc:
        with pytest.raises(agentsbx.TimedOutError):
            proc.read_sync(timeout=0.05)
        proc.write("line\n")
        assert proc.read_sync("stdout", timeout=5) == b"line\n"
        proc.close_stdin()
        assert proc.read_sync() == b""
        assert proc.wait_sync(timeout=5) == 0
    assert proc.closed


def test_close_is_idempotent_and_final(ws: agentsbx.Workspace) -> None:
    proc = ws.spawn(["sleep", "60"])
    fd = proc.fileno()
    assert fd >= 0
    proc.close()
    proc.close()
    with pytest.raises(agentsbx.StateError):
        proc.write(b"x")
    with pytest.raises(agentsbx.StateError):
        asyncio.run(proc.read_stdout())


def test_write_to_a_closed_stdin(ws: agentsbx.Workspace) -> None:
    with ws.spawn(["true"]) as proc:
        proc.wait_sync(timeout=10)
        with pytest.raises(agentsbx.AgentSbxError) as info:
            proc.write(b"x" * 200000)
        assert info.value.code == -agentsbx.errors.SBX_EIO


def test_spawn_of_a_missing_command_exits_127(ws: agentsbx.Workspace) -> None:
    with ws.spawn(["no-such-command"]) as proc:
        assert proc.wait_sync(timeout=10) == 127


def test_a_handle_outlives_its_workspace(backend: str) -> None:
    ws = agentsbx.Workspace({"backend": backend})
    proc = ws.spawn(["sleep", "60"])
    ws.close()  # stops everything; the handle stays valid until closed
    assert proc.wait_sync(timeout=5) == -1 and proc.term_signal == signal.SIGKILL
    proc.close()


def test_a_process_keeps_its_workspace_open(backend: str) -> None:
    proc = agentsbx.Workspace({"backend": backend}).spawn(["cat"])
    gc.collect()
    proc.write(b"still here\n")
    assert proc.read_sync(timeout=10) == b"still here\n"
    assert not proc.workspace.closed
    proc.close()


# ---- a terminal (pty=True, library 1.7) ----

def read_to_end(proc: agentsbx.Process) -> bytes:
    out = b""
    while chunk := proc.read_sync(timeout=20):
        out += chunk
    return out


def test_spawn_with_a_terminal_of_the_given_size(ws: agentsbx.Workspace) -> None:
    script = ("tty; python3 -c 'import os; assert os.isatty(0) and os.isatty(1); "
              "print(\"PY-TTY\")'; stty size")
    with ws.spawn(script, pty=True, rows=31, cols=97) as proc:
        assert proc.pty
        out = read_to_end(proc)
        assert b"/dev/pts/" in out and b"PY-TTY" in out and b"31 97" in out, out
        assert proc.wait_sync(10) == 0
        with pytest.raises(agentsbx.AgentSbxError):
            proc.fileno("stderr")      # merged on the terminal


def test_resize_sends_sigwinch_with_the_new_size(ws: agentsbx.Workspace) -> None:
    async def body(ws: agentsbx.Workspace) -> None:
        script = "trap 'stty size; exit 0' WINCH; echo READY; while :; do sleep 0.1; done"
        with ws.spawn(script, pty=True) as proc:
            seen = b""
            while b"READY" not in seen:
                seen += await proc.read_stdout()
            proc.resize(45, 120)
            rest = b""
            while chunk := await proc.read_stdout():   # EIO at the end reads as b""
                rest += chunk
            assert b"45 120" in rest, rest
            assert await proc.wait() == 0

    run(body, ws)


def test_terminal_input_is_typed_and_close_stdin_types_eof(ws: agentsbx.Workspace) -> None:
    with ws.spawn(["cat"], pty=True) as proc:
        proc.write("hello tty\n")
        seen = b""
        while seen.count(b"hello tty") < 2:     # the echo, then cat's copy
            seen += proc.read_sync(timeout=10)
        proc.close_stdin()
        read_to_end(proc)
        assert proc.wait_sync(10) == 0


def test_terminal_options_are_checked(ws: agentsbx.Workspace) -> None:
    with pytest.raises(agentsbx.AgentSbxError, match="opts.rows"):
        ws.spawn(["true"], rows=10)
    with pytest.raises(agentsbx.AgentSbxError, match="rows, cols"):
        ws.spawn(["true"], pty=True, rows=70000)
    with ws.spawn(["true"]) as proc:
        with pytest.raises(agentsbx.AgentSbxError, match="no terminal"):
            proc.resize(10, 10)
        proc.wait_sync(10)
