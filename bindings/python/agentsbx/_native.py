"""The C side: finding libagentsbx.so.1, its structs, callback types and prototypes.

Everything here mirrors include/agentsbx/agentsbx.h. Functions are resolved lazily, one at a
time, so a library that lacks a newer function (built before it was merged, or an older
installed copy) still serves every function it has; calling a missing one raises
NotSupportedError naming the symbol instead of failing at import.
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_int,
    c_int64,
    c_size_t,
    c_uint,
    c_uint32,
    c_void_p,
)
from pathlib import Path
from typing import Any, Callable

from .errors import LibraryNotFoundError, NotSupportedError, SBX_ENOSYS

SONAME = "libagentsbx.so.1"

# enum sbx_stream
SBX_STDIN, SBX_STDOUT, SBX_STDERR = 0, 1, 2

# Flag bits, as the header defines them.
SBX_EXEC_CLEAR_ENV = 1 << 0
SBX_EXEC_MERGE_STDERR = 1 << 1
SBX_EXEC_NO_CAPTURE = 1 << 2
SBX_WRITE_MKDIRS = 1 << 0
SBX_WRITE_EXCL = 1 << 1
SBX_REMOVE_RECURSIVE = 1 << 0
SBX_APPROVE, SBX_DENY = 0, 1

# void (*sbx_output_cb)(int stream, const char *data, size_t len, void *userdata)
# data is a c_void_p so ctypes does not stop at the first NUL byte of binary output.
OUTPUT_CB = CFUNCTYPE(None, c_int, c_void_p, c_size_t, c_void_p)
# int (*sbx_approval_fn)(void *ud, const char *request_json, char *reason, size_t reason_len)
APPROVAL_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_void_p, c_size_t)


class OpenProgress(Structure):
    """struct sbx_open_progress (since 1.5)."""

    _fields_ = [
        ("size", c_size_t),
        ("phase", c_char_p),
        ("subject", c_char_p),
        ("item", c_char_p),
        ("status", c_char_p),
        ("current", ctypes.c_uint64),
        ("total", ctypes.c_uint64),
    ]


# void (*sbx_open_progress_fn)(void *userdata, const sbx_open_progress *event)
OPEN_PROGRESS_FN = CFUNCTYPE(None, c_void_p, POINTER(OpenProgress))


class OpenOpts(Structure):
    """struct sbx_open_opts (since 1.5)."""

    _fields_ = [
        ("size", c_size_t),
        ("progress", OPEN_PROGRESS_FN),
        ("progress_userdata", c_void_p),
    ]


class ExecOpts(Structure):
    """struct sbx_exec_opts."""

    _fields_ = [
        ("size", c_size_t),
        ("cwd", c_char_p),
        ("env", POINTER(c_char_p)),
        ("stdin_data", c_char_p),
        ("stdin_len", c_size_t),
        ("timeout_ms", c_int64),
        ("max_output", c_size_t),
        ("flags", c_uint32),
        ("on_output", OUTPUT_CB),
        ("userdata", c_void_p),
    ]


class SpawnOpts(Structure):
    """struct sbx_spawn_opts."""

    _fields_ = [
        ("size", c_size_t),
        ("cwd", c_char_p),
        ("env", POINTER(c_char_p)),
        ("flags", c_uint32),
    ]


class Stat(Structure):
    """struct sbx_stat."""

    _fields_ = [
        ("size", c_size_t),
        ("type", c_int),
        ("mode", c_uint32),
        ("file_size", ctypes.c_uint64),
        ("mtime_sec", c_int64),
        ("mtime_nsec", c_int64),
    ]


_ws = c_void_p          # sbx_workspace *
_proc = c_void_p        # sbx_process *
_res = c_void_p         # sbx_result *
_out_ptr = POINTER(c_void_p)  # char ** out parameters: kept as raw pointers to sbx_free them

# name -> (restype, argtypes). Pointers the caller must free come back as c_void_p, never
# c_char_p, which would copy the string and lose the pointer.
PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "sbx_version": (c_char_p, []),
    "sbx_abi_version": (c_int, []),
    "sbx_last_error": (c_char_p, []),
    "sbx_strerror": (c_char_p, [c_int]),
    "sbx_free": (None, [c_void_p]),
    "sbx_backends_probe": (c_int, [_out_ptr]),
    "sbx_workspace_open": (c_int, [c_char_p, POINTER(_ws)]),
    "sbx_workspace_open_with": (c_int, [c_char_p, POINTER(OpenOpts), POINTER(_ws)]),
    "sbx_workspace_close": (c_int, [_ws]),
    "sbx_workspace_reset": (c_int, [_ws]),
    "sbx_workspace_id": (c_char_p, [_ws]),
    "sbx_workspace_root": (c_char_p, [_ws]),
    "sbx_workspace_backend": (c_char_p, [_ws]),
    "sbx_exec": (c_int, [_ws, POINTER(c_char_p), POINTER(ExecOpts), POINTER(_res)]),
    "sbx_exec_shell": (c_int, [_ws, c_char_p, POINTER(ExecOpts), POINTER(_res)]),
    "sbx_result_exit_code": (c_int, [_res]),
    "sbx_result_signal": (c_int, [_res]),
    "sbx_result_timed_out": (c_int, [_res]),
    "sbx_result_truncated": (c_int, [_res]),
    "sbx_result_stdout": (c_void_p, [_res, POINTER(c_size_t)]),
    "sbx_result_stderr": (c_void_p, [_res, POINTER(c_size_t)]),
    "sbx_result_duration_ms": (c_int64, [_res]),
    "sbx_result_free": (None, [_res]),
    "sbx_process_spawn": (c_int, [_ws, POINTER(c_char_p), POINTER(SpawnOpts), POINTER(_proc)]),
    "sbx_process_fd": (c_int, [_proc, c_int]),
    "sbx_process_write": (c_int, [_proc, c_char_p, c_size_t]),
    "sbx_process_close_stdin": (c_int, [_proc]),
    "sbx_process_read": (c_int, [_proc, c_int, c_void_p, c_size_t, c_int, POINTER(c_size_t)]),
    "sbx_process_wait": (c_int, [_proc, c_int, POINTER(c_int), POINTER(c_int)]),
    "sbx_process_signal": (c_int, [_proc, c_int]),
    "sbx_process_kill": (c_int, [_proc]),
    "sbx_process_free": (None, [_proc]),
    "sbx_file_read": (c_int, [_ws, c_char_p, _out_ptr, POINTER(c_size_t)]),
    "sbx_file_write": (c_int, [_ws, c_char_p, c_char_p, c_size_t, c_uint, c_uint32]),
    "sbx_file_stat": (c_int, [_ws, c_char_p, POINTER(Stat)]),
    "sbx_file_list": (c_int, [_ws, c_char_p, _out_ptr]),
    "sbx_file_mkdir": (c_int, [_ws, c_char_p, c_uint]),
    "sbx_file_remove": (c_int, [_ws, c_char_p, c_uint32]),
    "sbx_tools_json": (c_int, [_ws, _out_ptr]),
    "sbx_tool_call": (c_int, [_ws, c_char_p, c_char_p, _out_ptr]),
    "sbx_tool_call_session": (c_int, [_ws, c_char_p, c_char_p, c_char_p, _out_ptr]),
    "sbx_workspace_instructions": (c_int, [_ws, _out_ptr]),
    "sbx_skill_add": (c_int, [_ws, c_char_p, _out_ptr]),
    "sbx_skill_add_archive": (c_int, [_ws, c_char_p, c_size_t, c_char_p, _out_ptr]),
    "sbx_skill_remove": (c_int, [_ws, c_char_p]),
    "sbx_skills_json": (c_int, [_ws, _out_ptr]),
    "sbx_offload_context": (c_int, [_ws, c_char_p, c_char_p, _out_ptr]),
    "sbx_offload_tool_result": (c_int, [_ws, c_char_p, c_char_p, c_char_p, c_size_t, _out_ptr]),
    "sbx_offload_data": (c_int, [_ws, c_char_p, c_char_p, c_size_t, _out_ptr]),
    "sbx_set_approval_handler": (c_int, [_ws, APPROVAL_FN, c_void_p]),
    "sbx_audit_path": (c_char_p, [_ws]),
    "sbx_workspace_set_network": (c_int, [_ws, c_char_p]),
    "sbx_workspace_git_quarantine": (c_int, [_ws, _out_ptr]),
    "sbx_manager_open": (c_int, [c_char_p, POINTER(c_void_p)]),
    "sbx_manager_get": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, c_char_p, POINTER(_ws)]),
    "sbx_manager_get_by_id": (c_int, [c_void_p, c_char_p, POINTER(_ws)]),
    "sbx_manager_release": (c_int, [c_void_p, _ws]),
    "sbx_manager_close": (c_int, [c_void_p, c_char_p]),
    "sbx_manager_list": (c_int, [c_void_p, _out_ptr]),
    "sbx_manager_gc": (c_int, [c_void_p, POINTER(c_int)]),
    "sbx_manager_free": (None, [c_void_p]),
    "sbx_mcp_add": (c_int, [_ws, c_char_p, c_char_p, c_char_p, c_char_p]),
    "sbx_mcp_remove": (c_int, [_ws, c_char_p, c_char_p, c_char_p]),
    "sbx_mcp_list": (c_int, [_ws, c_char_p, c_char_p, _out_ptr]),
    "sbx_mcp_tools": (c_int, [_ws, c_char_p, c_char_p, c_char_p, _out_ptr]),
    "sbx_mcp_call": (c_int, [_ws, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, _out_ptr]),
}


class Library:
    """The loaded library: attribute access gives the prototyped C function.

    A function the library does not export resolves to a stand-in that raises
    NotSupportedError when called, so only code that needs it fails. `has(name)` (and
    hasattr on `.cdll`) tells whether the symbol is really there.
    """

    def __init__(self, cdll: ctypes.CDLL, path: str) -> None:
        self.cdll = cdll
        self.path = path

    def has(self, name: str) -> bool:
        return hasattr(self.cdll, name)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in PROTOTYPES:
            raise AttributeError(f"{name} is not part of the libagentsbx API")
        fn: Callable[..., Any]
        try:
            found = getattr(self.cdll, name)
        except AttributeError:
            fn = _missing_function(name, self.path)
        else:
            found.restype, found.argtypes = PROTOTYPES[name]
            fn = found
        setattr(self, name, fn)  # later lookups skip __getattr__
        return fn


def _missing_function(name: str, path: str) -> Callable[..., Any]:
    def missing(*_args: Any) -> Any:
        raise NotSupportedError(
            -SBX_ENOSYS,
            f"{name} is not exported by {path} (a library older than this binding?)",
        )

    missing.__name__ = name
    return missing


_loaded: Library | None = None
_load_lock = threading.Lock()


def load() -> Library:
    """The library, loaded on first use (importing agentsbx never needs it)."""
    global _loaded
    with _load_lock:
        if _loaded is None:
            _loaded = _find_and_load()
        return _loaded


def _find_and_load() -> Library:
    """$AGENTSBX_LIB, then the dynamic loader's path, then a build tree of this checkout."""
    explicit = os.environ.get("AGENTSBX_LIB")
    if explicit:
        # An explicit choice that does not load is an error, not a reason to pick another copy.
        try:
            return Library(ctypes.CDLL(explicit), explicit)
        except OSError as e:
            raise LibraryNotFoundError(f"AGENTSBX_LIB={explicit}: {e}") from e
    tried = [f"{SONAME} on the loader path"]
    try:
        return Library(ctypes.CDLL(SONAME), SONAME)
    except OSError:
        pass
    for candidate in _build_tree_candidates():
        tried.append(str(candidate))
        try:
            return Library(ctypes.CDLL(str(candidate)), str(candidate))
        except OSError:
            continue
    raise LibraryNotFoundError(
        "libagentsbx not found; set AGENTSBX_LIB to its path. Tried: " + ", ".join(tried)
    )


def _build_tree_candidates() -> list[Path]:
    """In a development checkout: $SBX_TEST_BUILD_ROOT, then <repo>/build*/ newest first."""
    found: list[Path] = []
    build_root = os.environ.get("SBX_TEST_BUILD_ROOT")
    if build_root:
        found.append(Path(build_root) / SONAME)
    repo = _repo_root()
    if repo is not None:
        built = [p for p in repo.glob(f"build*/{SONAME}") if p.is_file()]
        found += sorted(built, key=lambda p: p.stat().st_mtime, reverse=True)
    return [p for p in found if p.is_file()]


def _repo_root() -> Path | None:
    """The checkout this package sits in (bindings/python/agentsbx), if it is one."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "include" / "agentsbx" / "agentsbx.h").is_file():
            return parent
    return None
