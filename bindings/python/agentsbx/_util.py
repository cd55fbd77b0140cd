"""Small bridges between Python values and the C calling conventions."""

from __future__ import annotations

import ctypes
import json
import math
import os
from collections.abc import Mapping, Sequence
from ctypes import c_char_p, c_void_p
from typing import Any, Optional, Union

from . import _native
from .errors import SBX_EINVAL, error_for

# What the binding accepts wherever the library takes a path or text.
StrPath = Union[str, "os.PathLike[str]"]


def encode(text: str | os.PathLike[str]) -> bytes:
    """UTF-8 for the library; surrogateescape lets undecodable host bytes round-trip."""
    if isinstance(text, os.PathLike):
        return os.fsencode(text)
    return text.encode("utf-8", "surrogateescape")


def opt_encode(text: Optional[str]) -> Optional[bytes]:
    """encode, passing None through (a NULL for the library)."""
    return None if text is None else encode(text)


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    """File and pipe contents: bytes as they are, str as UTF-8."""
    return encode(data) if isinstance(data, str) else bytes(data)


def check(rc: int) -> int:
    """Raises the error for a negative return code, with sbx_last_error() of this thread.

    Call it right after the failing call: the message is thread-local and the next failure on
    the thread replaces it.
    """
    if rc < 0:
        message = _native.load().sbx_last_error() or b""
        raise error_for(rc, decode(message) or f"libagentsbx error {rc}")
    return rc


def out_pointer() -> c_void_p:
    """A `char **` out parameter; pass ctypes.byref() of it."""
    return c_void_p()


def take_bytes(ptr: c_void_p, length: int | None = None) -> bytes:
    """Copies a buffer the library allocated, then releases it with sbx_free."""
    if not ptr.value:
        return b""
    try:
        if length is None:
            return ctypes.string_at(ptr.value)
        return ctypes.string_at(ptr.value, length)
    finally:
        _native.load().sbx_free(ptr)


def take_str(ptr: c_void_p) -> str:
    return decode(take_bytes(ptr))


def take_json(ptr: c_void_p) -> Any:
    return json.loads(take_bytes(ptr))


def json_text(value: Any) -> bytes:
    """A JSON argument: a str is taken as JSON text already, anything else is serialised."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        return encode(value)
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def argv_array(argv: Sequence[str]) -> ctypes.Array[c_char_p]:
    """A NULL-terminated char *argv[]."""
    if isinstance(argv, (str, bytes)) or not argv:
        raise error_for(-SBX_EINVAL, "argv must be a non-empty list of strings")
    return (c_char_p * (len(argv) + 1))(*[encode(a) for a in argv], None)


def env_array(env: Mapping[str, str | None] | None) -> ctypes.Array[c_char_p] | None:
    """The NULL-terminated "NAME=value" list; a None value removes NAME ("NAME" alone)."""
    if env is None:
        return None
    entries = [encode(k) if v is None else encode(f"{k}={v}") for k, v in env.items()]
    return (c_char_p * (len(entries) + 1))(*entries, None)


def timeout_ms(seconds: float | None) -> int:
    """Seconds to the library's milliseconds: None = the workspace default (0), inf = none
    (-1). Rounded up so a short timeout never becomes "no timeout"."""
    if seconds is None:
        return 0
    if math.isinf(seconds) and seconds > 0:
        return -1
    if not seconds > 0:
        raise error_for(-SBX_EINVAL, f"timeout must be positive seconds, None or math.inf (got {seconds!r})")
    return max(1, math.ceil(seconds * 1000))


def wait_timeout_ms(seconds: float | None) -> int:
    """A wait's timeout: None = forever (-1), 0 = poll."""
    if seconds is None:
        return -1
    if seconds < 0:
        raise error_for(-SBX_EINVAL, f"timeout must not be negative (got {seconds!r})")
    return min(math.ceil(seconds * 1000), 2**31 - 1)
