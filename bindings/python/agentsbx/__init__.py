"""Python binding of libagentsbx: isolated workspaces for AI-agent harnesses.

    import agentsbx

    with agentsbx.Workspace({"backend": "ns"}) as ws:
        print(ws.exec("echo hello; exit 3").exit_code)        # 3
        print(ws.tool_call("Bash", {"command": "pwd"})["output"])

The library (libagentsbx.so.1) is found through $AGENTSBX_LIB, then the dynamic loader's
path, then the build directories of the checkout this package sits in. Nothing is compiled:
the binding uses ctypes.
"""

from __future__ import annotations

import ctypes
from typing import Any

from . import _native
from ._util import check, decode, out_pointer, take_json
from .errors import (
    AgentSbxError,
    BackendError,
    ConfigError,
    EscapeError,
    ExistsError,
    InvalidArgumentError,
    LibraryNotFoundError,
    LimitError,
    NotFoundError,
    NotSupportedError,
    PermissionDeniedError,
    StateError,
    TimedOutError,
)
from .manager import Manager
from .process import Process
from .results import ExecResult, FileStat
from .workspace import ApprovalHandler, ApprovalVerdict, OutputCallback, Workspace

__all__ = [
    "Manager",
    "AgentSbxError", "ApprovalHandler", "ApprovalVerdict", "BackendError", "ConfigError",
    "EscapeError", "ExecResult", "ExistsError", "FileStat", "InvalidArgumentError",
    "LibraryNotFoundError", "LimitError", "NotFoundError", "NotSupportedError", "OutputCallback",
    "PermissionDeniedError", "Process", "StateError", "TimedOutError", "Workspace",
    "abi_version", "backends", "has_function", "library_path", "strerror", "version",
]

__version__ = "1.7.0"


def version() -> str:
    """The loaded library's version ("1.7.0")."""
    return decode(_native.load().sbx_version())


def abi_version() -> int:
    return int(_native.load().sbx_abi_version())


def strerror(code: int) -> str:
    """The generic description of an error code (positive or negative)."""
    return decode(_native.load().sbx_strerror(code))


def backends() -> list[dict[str, Any]]:
    """Every backend the library can reach and whether it works on this host:
    [{"backend": "local", "available": True, "detail": "..."}, ...]."""
    out = out_pointer()
    check(_native.load().sbx_backends_probe(ctypes.byref(out)))
    return take_json(out)  # type: ignore[no-any-return]


def library_path() -> str:
    """Where the loaded library came from."""
    return _native.load().path


def has_function(name: str) -> bool:
    """Does the loaded library have this API function (e.g. "sbx_skill_add")? Its version
    decides: every function up to it is there (see _native.SINCE)."""
    return _native.load().has(name)
