"""Long-running processes (MCP servers, interactive tools), for asyncio and for plain code.

The handle owns three pipe fds (stdin's write end, stdout's and stderr's read ends). The
binding makes them non-blocking when the process starts, so an event loop can watch them with
add_reader/add_writer and read them with os.read; the blocking C calls (sbx_process_read,
sbx_process_write) cope with non-blocking fds by polling. The fds are never closed here:
sbx_process_close_stdin and sbx_process_free do that.

A process handle belongs to one thread at a time (the C API's rule), so waiting is done by
polling sbx_process_wait with a zero timeout on the loop's own thread rather than blocking in
a worker thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
from collections.abc import AsyncIterator
from ctypes import c_int, c_size_t, c_void_p
from typing import TYPE_CHECKING, Optional

from . import _native
from ._closing import Closing
from ._native import SBX_STDERR, SBX_STDIN, SBX_STDOUT
from ._util import as_bytes, check, wait_timeout_ms
from .errors import SBX_EINVAL, SBX_EIO, SBX_ESTATE, SBX_ETIMEDOUT, TimedOutError, error_for

if TYPE_CHECKING:
    from .workspace import Workspace

STREAMS = {"stdout": SBX_STDOUT, "stderr": SBX_STDERR}
STREAM_NAMES = {SBX_STDOUT: "stdout", SBX_STDERR: "stderr"}
READ_SIZE = 65536
# Backoff of the async wait's polling: short at first (most processes end right after their
# output does), then capped so a long wait costs little.
WAIT_POLL_FIRST = 0.001
WAIT_POLL_MAX = 0.05


class Process(Closing):
    """A command started with Workspace.spawn(). Close it (or use `with`/`async with`):
    closing kills the process tree if it still runs, reaps it and frees the handle."""

    def __init__(self, handle: c_void_p, workspace: Optional[Workspace] = None,
                 pty: bool = False) -> None:
        self._handle: Optional[c_void_p] = handle
        # On a terminal, stdout is its master and stderr is merged on it.
        self.pty = pty
        # Held so a Workspace nobody else references is not collected (and closed, which
        # kills this process) while the process is in use.
        self.workspace = workspace
        self._eof: dict[int, bool] = {SBX_STDOUT: False, SBX_STDERR: False}
        # fd -> (loop, future) of an awaiting reader or writer, so close() can release it.
        self._waiters: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = {}
        self.exit_code: Optional[int] = None     # set by wait(): 0..255, -1 if signalled
        self.term_signal: Optional[int] = None   # set by wait(): the signal, or 0
        for stream in (SBX_STDIN, SBX_STDOUT, SBX_STDERR):
            fd = _native.load().sbx_process_fd(handle, stream)
            if fd >= 0:
                os.set_blocking(fd, False)

    # ---- plain calls ----

    def fileno(self, stream: str = "stdout") -> int:
        """The host fd of "stdin", "stdout" or "stderr" (owned by the handle: do not close)."""
        code = SBX_STDIN if stream == "stdin" else _stream_code(stream)
        return check(_native.load().sbx_process_fd(self._live(), code))

    def write(self, data: bytes | str) -> None:
        """Writes all of data to stdin, blocking until the pipe took it. A command that
        closed its stdin gives AgentSbxError with code -SBX_EIO ("broken pipe")."""
        payload = as_bytes(data)
        check(_native.load().sbx_process_write(self._live(), payload, len(payload)))

    def close_stdin(self) -> None:
        """Closes stdin so the command reads end-of-file (on a terminal: types ^D)."""
        check(_native.load().sbx_process_close_stdin(self._live()))

    def read_sync(self, stream: str = "stdout", size: int = READ_SIZE,
                  timeout: Optional[float] = None) -> bytes:
        """Up to size bytes of "stdout" or "stderr", waiting at most timeout seconds
        (None = no limit); b"" at end-of-file. Nothing in time: TimedOutError."""
        code = _stream_code(stream)
        if self._eof[code]:
            return b""
        buf = ctypes.create_string_buffer(size)
        nread = c_size_t()
        check(_native.load().sbx_process_read(self._live(), code, buf, size,
                                              wait_timeout_ms(timeout), ctypes.byref(nread)))
        return self._note_eof(code, buf.raw[: nread.value])

    def wait_sync(self, timeout: Optional[float] = None) -> int:
        """Blocks until the command ends (at most timeout seconds; None = no limit) and
        returns its exit code (-1 if a signal killed it: see term_signal)."""
        if not self._try_wait(wait_timeout_ms(timeout)):
            raise error_for(-SBX_ETIMEDOUT, f"the process still runs after {timeout} s")
        assert self.exit_code is not None
        return self.exit_code

    def resize(self, rows: int, cols: int) -> None:
        """Sets the size of the terminal of a process spawned with pty=True (since 1.7);
        the command's foreground process group gets SIGWINCH."""
        if not (1 <= rows <= 65535 and 1 <= cols <= 65535):
            raise error_for(-SBX_EINVAL, f"resize: rows and cols must be 1..65535, not "
                            f"{rows} x {cols}")
        check(_native.load().sbx_process_resize(self._live(), rows, cols))

    def signal(self, sig: int) -> None:
        """Sends sig to the command's process group."""
        check(_native.load().sbx_process_signal(self._live(), sig))

    def kill(self) -> None:
        """Kills the command and everything it started; wait() then reports the signal."""
        check(_native.load().sbx_process_kill(self._live()))

    def close(self) -> None:
        """Kills the tree if it still runs, reaps it, closes the fds. Idempotent."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        self._release_waiters()
        _native.load().sbx_process_free(handle)

    @property
    def closed(self) -> bool:
        return self._handle is None

    # ---- asyncio ----

    async def read(self, stream: str = "stdout", size: int = READ_SIZE) -> bytes:
        """Up to size bytes of "stdout" or "stderr" once some are there; b"" at end-of-file.
        One reader per stream at a time."""
        code = _stream_code(stream)
        while not self._eof[code]:
            fd = check(_native.load().sbx_process_fd(self._live(), code))
            try:
                return self._note_eof(code, os.read(fd, size))
            except BlockingIOError:
                await self._ready(fd, writable=False)
            except OSError as e:
                # A terminal reads EIO once every process closed it: its end-of-file.
                if not (self.pty and e.errno == errno.EIO):
                    raise
                return self._note_eof(code, b"")
        return b""

    async def read_stdout(self, size: int = READ_SIZE) -> bytes:
        return await self.read("stdout", size)

    async def read_stderr(self, size: int = READ_SIZE) -> bytes:
        return await self.read("stderr", size)

    async def write_async(self, data: bytes | str) -> None:
        """write() that waits for room in the pipe on the event loop instead of blocking it."""
        view = memoryview(as_bytes(data))
        while view:
            fd = check(_native.load().sbx_process_fd(self._live(), SBX_STDIN))
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                await self._ready(fd, writable=True)
            except BrokenPipeError:
                raise error_for(-SBX_EIO, "write to stdin: broken pipe") from None

    async def output(self) -> AsyncIterator[tuple[str, bytes]]:
        """(stream, chunk) pairs from stdout and stderr as they arrive, until both end."""
        pending: dict[asyncio.Task[bytes], str] = {}
        try:
            for name, code in STREAMS.items():
                if not self._eof[code] and _native.load().sbx_process_fd(self._live(), code) >= 0:
                    pending[asyncio.ensure_future(self.read(name))] = name
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    name = pending.pop(task)
                    chunk = task.result()
                    if chunk:
                        yield name, chunk
                        pending[asyncio.ensure_future(self.read(name))] = name
        finally:
            for task in pending:
                task.cancel()

    def __aiter__(self) -> AsyncIterator[tuple[str, bytes]]:
        return self.output()

    async def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for the command to end without blocking the event loop; returns its exit
        code (-1 if a signal killed it: see term_signal). TimedOutError after timeout s."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        delay = WAIT_POLL_FIRST
        while not self._try_wait(0):
            if deadline is not None and loop.time() >= deadline:
                raise error_for(-SBX_ETIMEDOUT, f"the process still runs after {timeout} s")
            await asyncio.sleep(delay)
            delay = min(delay * 2, WAIT_POLL_MAX)
        assert self.exit_code is not None
        return self.exit_code

    async def communicate(self, input: bytes | str | None = None) -> tuple[bytes, bytes]:
        """Writes input (if any) and closes stdin, collects stdout and stderr until both
        end, waits for the command; returns (stdout, stderr)."""
        collected: dict[str, list[bytes]] = {"stdout": [], "stderr": []}

        async def feed() -> None:
            if input is not None:
                await self.write_async(input)
            self.close_stdin()

        async def drain() -> None:
            async for name, chunk in self.output():
                collected[name].append(chunk)

        await asyncio.gather(feed(), drain())
        await self.wait()
        return b"".join(collected["stdout"]), b"".join(collected["stderr"])

    # ---- context managers ----


    # ---- internals ----

    def _live(self) -> c_void_p:
        if self._handle is None:
            raise error_for(-SBX_ESTATE, "the process handle is closed")
        return self._handle

    def _note_eof(self, code: int, chunk: bytes) -> bytes:
        if not chunk:
            self._eof[code] = True
        return chunk

    def _try_wait(self, timeout_ms: int) -> bool:
        """sbx_process_wait: True with exit_code/term_signal set, False if still running."""
        exit_code, term_signal = c_int(), c_int()
        try:
            check(_native.load().sbx_process_wait(self._live(), timeout_ms,
                                                  ctypes.byref(exit_code),
                                                  ctypes.byref(term_signal)))
        except TimedOutError:
            return False
        self.exit_code, self.term_signal = exit_code.value, term_signal.value
        return True

    async def _ready(self, fd: int, writable: bool) -> None:
        """Until fd is readable (or writable) on the running loop."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        (loop.add_writer if writable else loop.add_reader)(fd, wake)
        self._waiters[fd] = (loop, ready)
        try:
            await ready
        finally:
            if self._waiters.pop(fd, None) is not None:
                (loop.remove_writer if writable else loop.remove_reader)(fd)

    def _release_waiters(self) -> None:
        """Before the fds close: no loop may keep watching them (their numbers get reused)."""
        for fd, (loop, ready) in list(self._waiters.items()):
            loop.remove_reader(fd)
            loop.remove_writer(fd)
            if not ready.done():
                ready.set_exception(error_for(-SBX_ESTATE, "the process handle was closed"))
        self._waiters.clear()


def _stream_code(stream: str) -> int:
    try:
        return STREAMS[stream]
    except KeyError:
        raise error_for(-SBX_EINVAL, f"stream {stream!r}: use 'stdout' or 'stderr'") from None
