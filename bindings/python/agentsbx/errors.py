"""Exceptions: one class per kind of failure the C library reports.

Every library failure raises an AgentSbxError (or a subclass chosen by the code) carrying the
negative code the C function returned and the sentence sbx_last_error() gave for it.
"""

from __future__ import annotations

# enum sbx_error (positive values; functions return their negation).
SBX_EPERM = 1
SBX_ENOENT = 2
SBX_EIO = 5
SBX_E2BIG = 7
SBX_EBADF = 9
SBX_ENOMEM = 12
SBX_EACCES = 13
SBX_EBUSY = 16
SBX_EEXIST = 17
SBX_ENOTDIR = 20
SBX_EISDIR = 21
SBX_EINVAL = 22
SBX_EFBIG = 27
SBX_ENOSPC = 28
SBX_ENAMETOOLONG = 36
SBX_ENOSYS = 38
SBX_ENOTEMPTY = 39
SBX_ELOOP = 40
SBX_ETIMEDOUT = 110
SBX_ECONFIG = 1001
SBX_EBACKEND = 1002
SBX_EESCAPE = 1003
SBX_EABI = 1004
SBX_EPROTO = 1005
SBX_ESTATE = 1006

_CODE_NAMES = {value: name for name, value in globals().items() if name.startswith("SBX_E")}


class AgentSbxError(Exception):
    """A libagentsbx call failed. `code` is the negative code it returned (-SBX_E...)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def name(self) -> str:
        """The code's symbolic name ("SBX_ENOENT"), or its number when unknown."""
        return _CODE_NAMES.get(-self.code, str(self.code))

    def __str__(self) -> str:
        return f"{self.message} [{self.name}]"


class ConfigError(AgentSbxError):
    """The workspace configuration is malformed or has a bad value (SBX_ECONFIG)."""


class InvalidArgumentError(AgentSbxError, ValueError):
    """An argument is invalid (SBX_EINVAL); the message names it."""


class NotFoundError(AgentSbxError):
    """No such file, backend, workspace, skill or process (SBX_ENOENT)."""


class ExistsError(AgentSbxError):
    """The file or skill already exists (SBX_EEXIST)."""


class EscapeError(AgentSbxError):
    """A path resolves outside the workspace root (SBX_EESCAPE)."""


class PermissionDeniedError(AgentSbxError):
    """The sandbox, the host or the approval handler refused (SBX_EPERM, SBX_EACCES)."""


class TimedOutError(AgentSbxError):
    """A wait or read ran out of time (SBX_ETIMEDOUT). A command's own timeout is not an
    error: it shows as ExecResult.timed_out."""


class BackendError(AgentSbxError):
    """The backend is unknown, cannot work on this host, or broke its protocol
    (SBX_EBACKEND, SBX_EABI, SBX_EPROTO)."""


class NotSupportedError(AgentSbxError):
    """The backend, the host or the loaded library does not support this (SBX_ENOSYS)."""


class StateError(AgentSbxError):
    """The handle is in the wrong state: closed, already waited, stream closed
    (SBX_ESTATE, SBX_EBADF)."""


class LimitError(AgentSbxError):
    """Something is too large or a quota is full (SBX_E2BIG, SBX_EFBIG, SBX_ENOSPC,
    SBX_ENAMETOOLONG)."""


class LibraryNotFoundError(OSError):
    """libagentsbx.so.1 could not be loaded (see agentsbx._native for where it looks)."""


_CLASS_BY_CODE: dict[int, type[AgentSbxError]] = {
    SBX_ECONFIG: ConfigError,
    SBX_EINVAL: InvalidArgumentError,
    SBX_ENOENT: NotFoundError,
    SBX_EEXIST: ExistsError,
    SBX_EESCAPE: EscapeError,
    SBX_EPERM: PermissionDeniedError,
    SBX_EACCES: PermissionDeniedError,
    SBX_ETIMEDOUT: TimedOutError,
    SBX_EBACKEND: BackendError,
    SBX_EABI: BackendError,
    SBX_EPROTO: BackendError,
    SBX_ENOSYS: NotSupportedError,
    SBX_ESTATE: StateError,
    SBX_EBADF: StateError,
    SBX_E2BIG: LimitError,
    SBX_EFBIG: LimitError,
    SBX_ENOSPC: LimitError,
    SBX_ENAMETOOLONG: LimitError,
}


def error_for(code: int, message: str) -> AgentSbxError:
    """The exception for a negative code returned by the library."""
    return _CLASS_BY_CODE.get(-code, AgentSbxError)(code, message)
