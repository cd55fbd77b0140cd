"""Workspaces: the handle and everything done through it."""

from __future__ import annotations

import asyncio
import ctypes
import json
import threading
from collections.abc import Mapping, Sequence
from ctypes import byref, c_size_t, c_void_p
from typing import Any, Callable, Optional, Union

from . import _native
from ._closing import Closing
from ._native import (
    APPROVAL_FN,
    OPEN_PROGRESS_FN,
    OUTPUT_CB,
    SBX_APPROVE,
    SBX_DENY,
    SBX_EXEC_CLEAR_ENV,
    SBX_EXEC_MERGE_STDERR,
    SBX_EXEC_NO_CAPTURE,
    SBX_REMOVE_RECURSIVE,
    SBX_WRITE_EXCL,
    SBX_WRITE_MKDIRS,
    ExecOpts,
    OpenOpts,
    SpawnOpts,
    Stat,
)
from ._util import (
    StrPath,
    argv_array,
    as_bytes,
    check,
    decode,
    encode,
    env_array,
    json_text,
    opt_encode,
    out_pointer,
    take_bytes,
    take_json,
    take_str,
    timeout_ms,
)
from .errors import (SBX_EINVAL, SBX_ENOSYS, SBX_ESTATE, AgentSbxError, NotFoundError,
                     error_for)
from .process import STREAM_NAMES, Process
from .results import FILE_TYPES, ExecResult, FileStat

# What an approval handler may return; see Workspace.set_approval_handler.
ApprovalVerdict = Union[bool, str, "tuple[bool, str]", None]
ApprovalHandler = Callable[[dict[str, Any]], ApprovalVerdict]
OutputCallback = Callable[[str, bytes], None]
# Receives each progress event of the open; see Workspace.
ProgressCallback = Callable[[dict[str, Any]], None]
Config = Union[Mapping[str, Any], str, None]
Argv = Union[Sequence[str], str]
Env = Optional[Mapping[str, Optional[str]]]

SHELL = "/bin/sh"


class Workspace(Closing):
    """An isolated workspace (sbx_workspace_open). Close it, or use `with` / `async with`.

    config is the JSON object of sbx_workspace_open, as a dict or as JSON text; None means
    "{}" (the default "ns" backend, a private temporary directory).

    on_progress, when given, is called while the workspace opens (sbx_workspace_open_with),
    on this thread, with each progress event as a dict: {"phase": "pull", "subject": image,
    "item": layer id or "", "status": the engine's words, "current": bytes, "total": bytes}
    (0 when not known). It cannot stop the open; an exception it raises closes the workspace
    again and is raised from here once the open has returned.
    """

    def __init__(self, config: Config = None, *, on_progress: Optional[ProgressCallback] = None,
                 _borrowed: Optional[c_void_p] = None,
                 _release: Optional[Callable[[c_void_p], None]] = None) -> None:
        self._handle: Optional[c_void_p] = None
        # Set for a workspace a Manager handed out: close() gives it back instead.
        self._release = _release
        # An exception a callback raised, per thread (callbacks run on the calling thread),
        # re-raised once the C call that ran the callback returns.
        self._callback_errors = threading.local()
        self._approval_fn: Optional[Any] = None  # the ctypes callback the C side points to
        lib = _native.load()
        handle = c_void_p()
        text = None if config is None else json_text(config)
        if _borrowed is not None:
            handle = _borrowed
        elif on_progress is None:
            check(lib.sbx_workspace_open(text, byref(handle)))
        else:
            _open_reporting(lib, text, on_progress, handle)
        self._handle = handle
        # Valid while the handle is open: copied now so they stay readable after close.
        self.id: str = decode(lib.sbx_workspace_id(handle))
        self.root: str = decode(lib.sbx_workspace_root(handle))
        self.backend: str = decode(lib.sbx_workspace_backend(handle))

    # ---- lifetime ----

    def close(self) -> None:
        """Stops everything running in the workspace and releases it (a temporary workdir is
        removed). Idempotent."""
        handle, self._handle = self._handle, None
        if handle is not None and self._release is not None:
            self._release(handle)
        elif handle is not None:
            check(_native.load().sbx_workspace_close(handle))
            self._approval_fn = None

    @property
    def closed(self) -> bool:
        return self._handle is None

    def reset(self) -> None:
        """Kills every process and returns the files to the configured baseline."""
        self._call("sbx_workspace_reset")


    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<agentsbx.Workspace {getattr(self, 'id', '?')} {getattr(self, 'backend', '?')} {state}>"

    @property
    def audit_path(self) -> Optional[str]:
        """The host path of the audit log (JSON lines), or None when there is none here."""
        path = _native.load().sbx_audit_path(self._live())
        return None if path is None else decode(path)

    # ---- commands ----

    def exec(self, argv: Argv, *, cwd: Optional[str] = None, env: Env = None,
             stdin: Union[bytes, str, None] = None, timeout: Optional[float] = None,
             on_output: Optional[OutputCallback] = None, merge_stderr: bool = False,
             max_output: Optional[int] = None, clear_env: bool = False,
             capture: bool = True) -> ExecResult:
        """Runs a command and waits for it.

        argv: a list runs argv[0] with its arguments; a str runs through /bin/sh -c.
        env: added to the workspace's environment; a None value removes the name
            (clear_env=True: only these). stdin: written to the command, then closed.
        timeout: seconds; None = the workspace default, math.inf = none. A command that
            runs out of time is killed and its result has timed_out=True (not an error).
        on_output(stream, data): called with "stdout"/"stderr" chunks as they arrive, on
            this thread; an exception it raises stops further calls and is re-raised when
            the command is done. capture=False keeps nothing in the result.
        max_output: bytes kept per stream (None = the workspace default).
        """
        stream_errors: list[BaseException] = []
        opts = ExecOpts(size=ctypes.sizeof(ExecOpts), cwd=None if cwd is None else encode(cwd),
                        env=env_array(env), timeout_ms=timeout_ms(timeout),
                        max_output=max_output or 0,
                        flags=_exec_flags(merge_stderr, clear_env, capture))
        if stdin is not None:
            data = as_bytes(stdin)
            opts.stdin_data, opts.stdin_len = data, len(data)
        if on_output is not None:
            # Held in opts (and this frame) for the whole call, so it cannot be collected.
            opts.on_output = _output_trampoline(on_output, stream_errors)
        res = c_void_p()
        try:
            if isinstance(argv, str):
                self._call("sbx_exec_shell", encode(argv), byref(opts), byref(res))
            else:
                self._call("sbx_exec", argv_array(argv), byref(opts), byref(res))
            result = _copy_result(res)
        finally:
            _native.load().sbx_result_free(res)
        if stream_errors:
            raise stream_errors[0]
        return result

    async def exec_async(self, argv: Argv, **kwargs: Any) -> ExecResult:
        """exec() in a worker thread, so the event loop keeps running (the C API lets
        several threads exec in one workspace). on_output is called on that thread."""
        return await asyncio.to_thread(self.exec, argv, **kwargs)

    def spawn(self, argv: Argv, *, cwd: Optional[str] = None, env: Env = None,
              merge_stderr: bool = False, clear_env: bool = False, pty: bool = False,
              rows: int = 0, cols: int = 0) -> Process:
        """Starts a command with pipes on stdin, stdout and stderr and returns at once.
        A str runs through /bin/sh -c. Close the Process when done (or use `with`).

        pty=True (library 1.7+) gives it a terminal instead, of rows x cols (0 = 24 x 80),
        made where the command runs: its controlling terminal, with stdout and stderr merged
        on it (read "stdout"; there is no "stderr"); Process.resize() changes its size.
        Backends: local, ns, bwrap, docker (exec "server" or stdio "direct")."""
        if isinstance(argv, str):
            argv = [SHELL, "-c", argv]
        if not (0 <= rows <= 65535 and 0 <= cols <= 65535):
            raise error_for(-SBX_EINVAL, f"rows, cols: {rows} x {cols} is not 0..65535")
        if pty and not _native.load().has("sbx_process_resize"):
            raise error_for(-SBX_ENOSYS, "spawn: pty needs libagentsbx 1.7 or newer, "
                            f"which {_native.load().path} is not")
        opts = SpawnOpts(size=ctypes.sizeof(SpawnOpts), cwd=None if cwd is None else encode(cwd),
                         env=env_array(env),
                         flags=_exec_flags(merge_stderr, clear_env, capture=True),
                         pty=1 if pty else 0, rows=rows, cols=cols)
        if not (pty or rows or cols):
            # An older library knows only the fields before pty: give it the size it knows.
            opts.size = SpawnOpts.pty.offset
        handle = c_void_p()
        self._call("sbx_process_spawn", argv_array(argv), byref(opts), byref(handle))
        try:
            return Process(handle, self, pty=pty)
        except BaseException:
            _native.load().sbx_process_free(handle)
            raise

    # ---- files (paths relative to the root, or absolute under it) ----

    def read_file(self, path: StrPath) -> bytes:
        data, length = out_pointer(), c_size_t()
        self._call("sbx_file_read", encode(path), byref(data), byref(length), owned=(data,))
        return take_bytes(data, length.value)

    def write_file(self, path: StrPath, data: Union[bytes, str], mode: int = 0,
                   mkdirs: bool = False, exclusive: bool = False) -> None:
        """Replaces (or creates) the file atomically. mode 0 keeps the existing file's mode
        (0644 for a new file); exclusive=True fails with ExistsError if it exists."""
        payload = as_bytes(data)
        flags = (SBX_WRITE_MKDIRS if mkdirs else 0) | (SBX_WRITE_EXCL if exclusive else 0)
        self._call("sbx_file_write", encode(path), payload, len(payload), mode, flags)

    def stat(self, path: StrPath) -> FileStat:
        """The path's status, without following a final symlink."""
        st = Stat(size=ctypes.sizeof(Stat))
        self._call("sbx_file_stat", encode(path), byref(st))
        return FileStat(type=FILE_TYPES.get(st.type, "other"), mode=st.mode, size=st.file_size,
                        mtime_ns=st.mtime_sec * 1_000_000_000 + st.mtime_nsec)

    def exists(self, path: StrPath) -> bool:
        try:
            self.stat(path)
        except NotFoundError:
            return False
        return True

    def list_dir(self, path: StrPath = ".") -> list[dict[str, Any]]:
        """[{"name", "type" ("file"|"dir"|"symlink"|"other"), "size", "mtime"}], by name."""
        out = out_pointer()
        self._call("sbx_file_list", encode(path), byref(out), owned=(out,))
        return take_json(out)  # type: ignore[no-any-return]

    def mkdir(self, path: StrPath, mode: int = 0) -> None:
        """mkdir -p; mode 0 = 0755."""
        self._call("sbx_file_mkdir", encode(path), mode)

    def remove(self, path: StrPath, recursive: bool = False) -> None:
        """Removes a file, symlink or empty directory (recursive=True: any directory)."""
        self._call("sbx_file_remove", encode(path), SBX_REMOVE_RECURSIVE if recursive else 0)

    # ---- agent tools ----

    def tools(self) -> list[dict[str, Any]]:
        """The tool definitions: [{"name", "description", "input_schema"}]."""
        out = out_pointer()
        self._call("sbx_tools_json", byref(out), owned=(out,))
        return take_json(out)  # type: ignore[no-any-return]

    def tool_call(self, name: str, args: Union[Mapping[str, Any], str, None] = None,
                  session_id: Optional[str] = None) -> dict[str, Any]:
        """Runs one tool call; returns {"ok", "output", "metadata"}. ok=False is a tool error
        for the model to read (bad arguments, file not found, a denied approval), not an
        exception. args may be a dict or the JSON text the model produced."""
        out = out_pointer()
        self._call("sbx_tool_call_session", None if session_id is None else encode(session_id),
                   encode(name), json_text({} if args is None else args), byref(out),
                   owned=(out,))
        return take_json(out)  # type: ignore[no-any-return]

    def instructions(self) -> str:
        """The workspace block of a system prompt: where it is, its rules, its skills."""
        out = out_pointer()
        self._call("sbx_workspace_instructions", byref(out), owned=(out,))
        return take_str(out)

    def git_quarantine(self) -> dict[str, Any]:
        """What the git guard moved out of the workspace's git repositories so far (hooks,
        configs with keys that run programs, pointers out of the workspace):
        {"guarded", "kernel_binds", "repositories", "bound", "full_walks", "items": [{"path",
        "what", "reason", "moved_to", "when", "time"}]}. Since library 1.6."""
        out = out_pointer()
        self._call("sbx_workspace_git_quarantine", byref(out), owned=(out,))
        return take_json(out)  # type: ignore[no-any-return]

    # ---- skills ----

    def add_skill(self, path: StrPath) -> str:
        """Copies the skill in the host directory path (holding SKILL.md); returns its name."""
        name = out_pointer()
        self._call("sbx_skill_add", encode(path), byref(name), owned=(name,))
        return take_str(name)

    def add_skill_archive(self, data: bytes, format: Optional[str] = None) -> str:
        """Adds a skill from a tar, tar.gz or zip archive in memory (format None: guessed
        from the content); returns its name."""
        payload, name = bytes(data), out_pointer()
        self._call("sbx_skill_add_archive", payload, len(payload),
                   None if format is None else encode(format), byref(name), owned=(name,))
        return take_str(name)

    def remove_skill(self, name: str) -> None:
        self._call("sbx_skill_remove", encode(name))

    def skills(self) -> list[dict[str, Any]]:
        """[{"name", "description", "dir", "trusted"}], by name. Only trusted skills (added by
        add_skill/add_skill_archive, unchanged since) reach instructions() and the Skill tool;
        one a command wrote in skills/ is listed with "trusted": False."""
        out = out_pointer()
        self._call("sbx_skills_json", byref(out), owned=(out,))
        return take_json(out)  # type: ignore[no-any-return]

    # ---- context offload (returned paths are workspace-relative) ----

    def offload_context(self, session_id: str, messages: Union[Mapping[str, Any],
                        Sequence[Mapping[str, Any]], str]) -> str:
        """Appends a message (or a list of them) to sessions/<session_id>/context.jsonl."""
        path = out_pointer()
        self._call("sbx_offload_context", encode(session_id), json_text(messages), byref(path),
                   owned=(path,))
        return take_str(path)

    def offload_tool_result(self, session_id: str, tool_call_id: str,
                            data: Union[bytes, str]) -> str:
        """Stores a tool result as sessions/<session_id>/tool_result-<tool_call_id>.txt."""
        payload, path = as_bytes(data), out_pointer()
        self._call("sbx_offload_tool_result", encode(session_id), encode(tool_call_id), payload,
                   len(payload), byref(path), owned=(path,))
        return take_str(path)

    def offload_data(self, media_type: str, data: Union[bytes, str]) -> str:
        """Stores bytes content-addressed under data/; returns "workspace:///data/<sha256><ext>"."""
        payload, url = as_bytes(data), out_pointer()
        self._call("sbx_offload_data", encode(media_type), payload, len(payload), byref(url),
                   owned=(url,))
        return take_str(url)

    # ---- network ----

    def set_network(self, network: Union[Mapping[str, Any], str]) -> None:
        """Replaces the allow/deny lists of an "allowlist" workspace (the config's "network"
        object); new connections follow them at once, open ones they refuse are closed."""
        self._call("sbx_workspace_set_network", json_text(network))

    # ---- MCP servers (run inside the workspace behind its gateway) ----
    # agent_id / session_id None: for add/remove, "every agent / session"; for list, tools and
    # call, the default agent and session.

    def mcp_add(self, name: str, config: Union[Mapping[str, Any], str],
                agent_id: Optional[str] = None, session_id: Optional[str] = None) -> None:
        """Declares an MCP server: {"command", "args", "env"} as MCP clients write it."""
        self._call("sbx_mcp_add", opt_encode(agent_id), opt_encode(session_id), encode(name),
                   json_text(config))

    def mcp_remove(self, name: str, agent_id: Optional[str] = None,
                   session_id: Optional[str] = None) -> None:
        self._call("sbx_mcp_remove", opt_encode(agent_id), opt_encode(session_id), encode(name))

    def mcp_list(self, agent_id: Optional[str] = None,
                 session_id: Optional[str] = None) -> list[dict[str, Any]]:
        """[{"name", "agent", "session", "config", "error"?}]"""
        out = out_pointer()
        self._call("sbx_mcp_list", opt_encode(agent_id), opt_encode(session_id), byref(out),
                   owned=(out,))
        return take_json(out)  # type: ignore[no-any-return]

    def mcp_tools(self, name: str, agent_id: Optional[str] = None,
                  session_id: Optional[str] = None) -> list[dict[str, Any]]:
        """The server's MCP Tool objects (starting it if needed)."""
        out = out_pointer()
        self._call("sbx_mcp_tools", opt_encode(agent_id), opt_encode(session_id), encode(name),
                   byref(out), owned=(out,))
        return take_json(out)  # type: ignore[no-any-return]

    def mcp_call(self, name: str, tool: str, args: Union[Mapping[str, Any], str, None] = None,
                 agent_id: Optional[str] = None,
                 session_id: Optional[str] = None) -> dict[str, Any]:
        """Calls a tool of the server; returns the MCP CallToolResult."""
        out = out_pointer()
        self._call("sbx_mcp_call", opt_encode(agent_id), opt_encode(session_id), encode(name),
                   encode(tool), json_text({} if args is None else args), byref(out),
                   owned=(out,))
        return take_json(out)  # type: ignore[no-any-return]

    # ---- approval ----

    def set_approval_handler(self, handler: Optional[ApprovalHandler]) -> None:
        """Asks handler(request) before every tool call, exec and spawn (None removes it).

        request is the parsed JSON the library describes the action with: {"kind": "tool",
        "tool", "class", "session_id", "arguments"} or {"kind": "exec", "class": "exec",
        "argv", "cwd"}. What the handler returns decides:
          True or None         allow
          False                deny (the library's default reason)
          "reason"             deny, telling the model why
          (allowed, "reason")  allow, or deny with the reason
        A handler that raises denies the action, and its exception is re-raised from the
        call that asked (exec, spawn, tool_call). A denied tool call is a tool error (ok=False)
        carrying the reason; a denied exec or spawn raises PermissionDeniedError.
        The handler runs on the thread making the call.
        """
        fn = (APPROVAL_FN(0) if handler is None  # a NULL pointer removes the handler
              else _approval_trampoline(handler, self._callback_errors))
        self._call("sbx_set_approval_handler", fn, None)
        self._approval_fn = fn  # the C side keeps only the pointer

    # ---- internals ----

    def _live(self) -> c_void_p:
        if self._handle is None:
            raise error_for(-SBX_ESTATE, "the workspace is closed")
        return self._handle

    def _call(self, name: str, *args: Any, owned: Sequence[c_void_p] = ()) -> int:
        """Calls name(handle, *args). Raises the library's error, or an exception a callback
        raised during the call; in both cases the out buffers in `owned` are released."""
        rc = getattr(_native.load(), name)(self._live(), *args)
        try:
            check(rc)  # first: sbx_last_error() is only good until the next failure
        except AgentSbxError as failure:
            raise self._callback_error() or failure
        callback_error = self._callback_error()
        if callback_error is not None:
            for ptr in owned:
                take_bytes(ptr)
            raise callback_error
        return int(rc)

    def _callback_error(self) -> Optional[BaseException]:
        error: Optional[BaseException] = self._callback_errors.__dict__.pop("error", None)
        return error


def _exec_flags(merge_stderr: bool, clear_env: bool, capture: bool) -> int:
    return ((SBX_EXEC_MERGE_STDERR if merge_stderr else 0)
            | (SBX_EXEC_CLEAR_ENV if clear_env else 0)
            | (0 if capture else SBX_EXEC_NO_CAPTURE))


def _copy_result(res: c_void_p) -> ExecResult:
    lib = _native.load()
    return ExecResult(
        exit_code=lib.sbx_result_exit_code(res),
        signal=lib.sbx_result_signal(res),
        timed_out=bool(lib.sbx_result_timed_out(res)),
        truncated=bool(lib.sbx_result_truncated(res)),
        duration_ms=lib.sbx_result_duration_ms(res),
        stdout=_result_stream(lib.sbx_result_stdout, res),
        stderr=_result_stream(lib.sbx_result_stderr, res),
        stdout_dropped=lib.sbx_result_dropped(res, 1),
        stderr_dropped=lib.sbx_result_dropped(res, 2),
    )


def _result_stream(getter: Callable[..., Any], res: c_void_p) -> bytes:
    """A stream's bytes, copied: the buffer belongs to the result."""
    length = c_size_t()
    ptr = getter(res, byref(length))
    return ctypes.string_at(ptr, length.value) if ptr else b""


def _output_trampoline(on_output: OutputCallback, errors: list[BaseException]) -> Any:
    """The C sbx_output_cb calling on_output; its first exception is kept for exec()."""

    def deliver(stream: int, data: Optional[int], length: int, _userdata: Optional[int]) -> None:
        if errors:
            return
        try:
            on_output(STREAM_NAMES.get(stream, str(stream)),
                      ctypes.string_at(data, length) if data else b"")
        except BaseException as e:  # noqa: BLE001 - ctypes would only print it
            errors.append(e)

    return OUTPUT_CB(deliver)


def _progress_event(e: Any) -> dict[str, Any]:
    return {"phase": decode(e.phase), "subject": decode(e.subject), "item": decode(e.item),
            "status": decode(e.status), "current": int(e.current), "total": int(e.total)}


def _open_reporting(lib: Any, text: Optional[bytes], on_progress: ProgressCallback,
                    handle: c_void_p) -> None:
    """sbx_workspace_open_with and a progress callback; the callback's first exception is
    raised once the open has returned, after closing what it opened."""
    failure: list[BaseException] = []

    def trampoline(_ud: Any, event: Any) -> None:
        if failure:
            return
        try:
            on_progress(_progress_event(event.contents))
        except BaseException as e:  # noqa: BLE001 - re-raised below, outside the C call
            failure.append(e)

    fn = OPEN_PROGRESS_FN(trampoline)
    opts = OpenOpts(size=ctypes.sizeof(OpenOpts), progress=fn, progress_userdata=None)
    check(lib.sbx_workspace_open_with(text, byref(opts), byref(handle)))
    if failure:
        lib.sbx_workspace_close(handle)
        raise failure[0]


def _approval_trampoline(handler: ApprovalHandler, errors: threading.local) -> Any:
    """The C sbx_approval_fn calling handler. It holds the thread-local error slot, not the
    Workspace, so the callback does not keep its workspace alive."""

    def decide(_userdata: Optional[int], request: bytes, reason: Optional[int],
               reason_len: int) -> int:
        try:
            allowed, why = _verdict(handler(json.loads(request)))
        except BaseException as e:  # noqa: BLE001 - denied, then re-raised by Workspace._call
            errors.error = e
            allowed, why = False, f"the approval handler failed: {type(e).__name__}: {e}"
        if not allowed and why and reason and reason_len > 0:
            _write_reason(reason, reason_len, why)
        return SBX_APPROVE if allowed else SBX_DENY

    return APPROVAL_FN(decide)


def _verdict(value: ApprovalVerdict) -> tuple[bool, str]:
    """An approval handler's return value as (allowed, reason); see set_approval_handler."""
    if value is None or value is True:
        return True, ""
    if value is False:
        return False, ""
    if isinstance(value, str):
        return False, value
    if (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool)
            and isinstance(value[1], str)):
        return value[0], value[1]
    raise TypeError(f"an approval handler returns bool, str, (bool, str) or None, "
                    f"not {value!r}")


def _write_reason(buf: int, size: int, reason: str) -> None:
    """reason into the C buffer: NUL-terminated, cut at a character boundary to fit."""
    data = reason.encode("utf-8", "replace")[: size - 1].decode("utf-8", "ignore").encode()
    ctypes.memmove(buf, data + b"\0", len(data) + 1)
