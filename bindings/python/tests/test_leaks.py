"""Memory: 10,000 calls through the binding must not grow the process.

Every out string is copied and sbx_free'd, every result sbx_result_free'd, every process
sbx_process_free'd, and ctypes callbacks are released with their call. The loop is dominated
by cheap calls (stat, tools, tool calls, file reads, listings, errors) plus 1,000 execs, some
streaming through a callback, all through an approval handler. Calls that fsync (file writes,
tool calls that save their session) are a minority: they cost milliseconds each on a busy
host, and the loop should stay well under a minute. Growth is measured as the
resident set (/proc/self/statm) and as the C heap in use (glibc's mallinfo2), after a warm-up
that lets allocators and caches reach their steady size.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import time

import pytest

import agentsbx

ITERATIONS = 1000          # x 10 calls each = 10,000 calls
RSS_BOUND = 8 << 20        # bytes
HEAP_BOUND = 256 << 10     # bytes: catches a leak of 26 bytes per call; steady state is ~±4 KiB


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def heap_in_use() -> int | None:
    """Bytes malloc has handed out and not had back (glibc >= 2.33), or None."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        return None
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


def ten_calls(ws: agentsbx.Workspace, i: int) -> None:
    ws.stat("data.txt")
    ws.tools()
    if i % 4 == 0:
        ws.tool_call("Read", {"file_path": "data.txt", "limit": 2})
    else:
        ws.stat(".")
    ws.read_file("data.txt")
    ws.list_dir(".")
    try:
        ws.read_file("missing.txt")
    except agentsbx.NotFoundError:
        pass
    if i % 10 == 0:
        ws.write_file("scratch.txt", b"x" * (i % 100))
    else:
        ws.exists("scratch.txt")
    if i % 3 == 0:
        ws.exec(["echo", "streamed"], on_output=lambda stream, data: None)
    else:
        ws.exec("echo shell", stdin=b"in", env={"K": "v"})
    ws.tool_call("Bash", "{not json")  # a tool error result
    if i % 10 == 0:
        with ws.spawn(["true"]) as proc:
            proc.wait_sync(timeout=10)
    else:
        ws.instructions()


@pytest.mark.leak
def test_ten_thousand_calls_do_not_grow_memory(capsys: pytest.CaptureFixture[str]) -> None:
    with agentsbx.Workspace({"backend": "local"}) as ws:
        ws.write_file("data.txt", b"line one\nline two\nline three\n")
        ws.set_approval_handler(lambda request: True)
        for i in range(100):
            ten_calls(ws, i)
        gc.collect()
        rss0, heap0, started = rss_bytes(), heap_in_use(), time.monotonic()
        for i in range(ITERATIONS):
            ten_calls(ws, i)
        gc.collect()
        rss1, heap1, took = rss_bytes(), heap_in_use(), time.monotonic() - started
    rss_growth = rss1 - rss0
    heap_growth = None if heap0 is None or heap1 is None else heap1 - heap0
    with capsys.disabled():
        print(f"\nleak loop: {ITERATIONS * 10} calls in {took:.1f} s; RSS {rss0 >> 10} -> "
              f"{rss1 >> 10} KiB (growth {rss_growth >> 10} KiB); C heap growth "
              f"{'n/a' if heap_growth is None else f'{heap_growth} bytes'}", file=sys.stderr)
    assert rss_growth < RSS_BOUND
    if heap_growth is not None:
        assert heap_growth < HEAP_BOUND
