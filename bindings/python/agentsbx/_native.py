"""The C side: finding libagentsbx.so.1, its structs, callback types and prototypes.

Everything here mirrors include/agentsbx/agentsbx.h. The library's version decides which
functions it has: each function is listed with the version it came in (SINCE, the nodes of
src/libagentsbx.map), every function up to the loaded library's version is bound when it is
loaded, and a newer one raises NotSupportedError naming the version it needs. A library older
than 1.6 has no sbx_version_number() and its version string could not be trusted then (those
builds all said "1.0.0"), so for it the symbols it exports decide instead.
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
    c_ushort,
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
        # Since 1.7: a terminal instead of pipes, and its size (0 = 24 x 80).
        ("pty", c_int),
        ("rows", c_ushort),
        ("cols", c_ushort),
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
    "sbx_version_number": (c_int, []),
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
    "sbx_result_dropped": (ctypes.c_uint64, [_res, c_int]),
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
    "sbx_process_resize": (c_int, [_proc, c_ushort, c_ushort]),
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


# The version each function after 1.0 came in: the node of src/libagentsbx.map that exports it
# (tests/test_version.py checks the two agree).
SINCE: dict[str, tuple[int, int]] = {
    **dict.fromkeys([
        "sbx_tools_json", "sbx_tool_call", "sbx_tool_call_session", "sbx_workspace_instructions",
        "sbx_skill_add", "sbx_skill_add_archive", "sbx_skill_remove", "sbx_skills_json",
        "sbx_offload_context", "sbx_offload_tool_result", "sbx_offload_data",
        "sbx_set_approval_handler", "sbx_audit_path"], (1, 1)),
    "sbx_workspace_set_network": (1, 2),
    **dict.fromkeys([
        "sbx_mcp_add", "sbx_mcp_remove", "sbx_mcp_list", "sbx_mcp_tools", "sbx_mcp_call"], (1, 3)),
    **dict.fromkeys([
        "sbx_manager_open", "sbx_manager_get", "sbx_manager_get_by_id", "sbx_manager_release",
        "sbx_manager_close", "sbx_manager_list", "sbx_manager_gc", "sbx_manager_free"], (1, 4)),
    "sbx_workspace_open_with": (1, 5),
    **dict.fromkeys(["sbx_workspace_git_quarantine", "sbx_version_number"], (1, 6)),
    **dict.fromkeys(["sbx_process_resize", "sbx_result_dropped"], (1, 7)),
}

# The first version whose number can be trusted to say what the library exports.
VERSIONED_SINCE = (1, 6, 0)


def library_version(cdll: ctypes.CDLL) -> tuple[int, int, int]:
    """The loaded library's (major, minor, patch): sbx_version_number(), or for a library
    older than 1.6 that lacks it, its version string."""
    if hasattr(cdll, "sbx_version_number"):
        fn = cdll.sbx_version_number
        fn.restype, fn.argtypes = c_int, []
        number = int(fn())
        return (number >> 16, (number >> 8) & 0xFF, number & 0xFF)
    text = getattr(cdll, "sbx_version", None)
    if text is None:
        return (0, 0, 0)
    text.restype, text.argtypes = c_char_p, []
    parts = (text() or b"0.0.0").decode("utf-8", "replace").split(".")
    try:
        return (int(parts[0]), int(parts[1]), int(parts[2].split("-")[0]))
    except (IndexError, ValueError):
        return (0, 0, 0)


class Library:
    """The loaded library: attribute access gives the prototyped C function.

    Every function the library's version has is bound at load; a function newer than the
    library is a stand-in that raises NotSupportedError naming the version it needs, so only
    code that needs it fails. `has(name)` tells which is which. A library that claims a
    version but lacks one of its functions is broken, and loading it fails.
    """

    def __init__(self, cdll: ctypes.CDLL, path: str,
                 version: tuple[int, int, int] | None = None) -> None:
        self.cdll = cdll
        self.path = path
        self.version = library_version(cdll) if version is None else version
        self._present: set[str] = set()
        for name, (restype, argtypes) in PROTOTYPES.items():
            fn = self._bind(name)
            if fn is None:
                setattr(self, name, self._missing(name))
                continue
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)
            self._present.add(name)

    def _bind(self, name: str) -> Any:
        """The library's function, None when its version does not have it yet."""
        since = SINCE.get(name, (1, 0))
        if self.version < VERSIONED_SINCE:
            return getattr(self.cdll, name, None)
        if self.version[:2] < since:
            return None
        try:
            return getattr(self.cdll, name)
        except AttributeError:
            raise LibraryNotFoundError(
                f"{self.path} says it is libagentsbx {_dotted(self.version)} but does not export "
                f"{name} (since {_dotted(since)}): a broken build") from None

    def _missing(self, name: str) -> Callable[..., Any]:
        since = SINCE.get(name, (1, 0))
        if self.version < VERSIONED_SINCE:
            return _missing_function(
                name, f"{name} is not exported by {self.path} (a library older than this "
                "binding?)")
        return _missing_function(
            name, f"{name} needs libagentsbx {_dotted(since)} or newer; {self.path} is "
            f"{_dotted(self.version)}")

    def has(self, name: str) -> bool:
        return name in self._present

    def __getattr__(self, name: str) -> Callable[..., Any]:
        # Only reached for names __init__ did not bind: none of the API's.
        raise AttributeError(f"{name} is not part of the libagentsbx API")


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def _missing_function(name: str, message: str) -> Callable[..., Any]:
    def missing(*_args: Any) -> Any:
        raise NotSupportedError(-SBX_ENOSYS, message)

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
