"""Plain values the binding returns: a finished command and a file's status."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExecResult:
    """What sbx_exec reports, copied out of the C result (which is freed at once).

    exit_code is 0..255, or -1 when a signal killed the command (then `signal` names it).
    A command that could not start is not an error: exit code 127 (not found) or 126 (not
    executable) with the reason on stderr, as a shell reports it.
    """

    exit_code: int
    signal: int
    timed_out: bool
    truncated: bool
    duration_ms: int
    stdout: bytes
    stderr: bytes
    # Bytes read and dropped at the output cap (max_output): what is missing from stdout and
    # stderr when `truncated` is set.
    stdout_dropped: int = 0
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        """Exited with 0, in time."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    @property
    def text(self) -> str:
        """stdout as text: what most callers want."""
        return self.stdout_text


# enum sbx_file_type, named as sbx_file_list names them.
FILE_TYPES = {0: "other", 1: "file", 2: "dir", 3: "symlink"}


@dataclass(frozen=True)
class FileStat:
    """A path's status (a final symlink is not followed)."""

    type: str          # "file", "dir", "symlink" or "other", as list_dir() names them
    mode: int          # permission bits
    size: int          # bytes
    mtime_ns: int      # modification time, nanoseconds since the epoch

    @property
    def mtime(self) -> float:
        """Modification time in seconds since the epoch."""
        return self.mtime_ns / 1e9

    @property
    def is_file(self) -> bool:
        return self.type == "file"

    @property
    def is_dir(self) -> bool:
        return self.type == "dir"
